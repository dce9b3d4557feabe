// The host's own trial stats; see stats.hpp.
#include "spec/stats.hpp"

#include <unordered_map>

namespace gpusweep::host {

const std::vector<HostStat>& host_stats() {
#define GPUSWEEP_STAT_ENTRY(name, unit, combine, meaning) \
  HostStat{#name, unit, StatCombine::combine, meaning, false},
#define GPUSWEEP_SERIES_ENTRY(name, unit, combine, meaning) \
  HostStat{#name, unit, StatCombine::combine, meaning, true},
  static const std::vector<HostStat> table = {GPUSWEEP_HOST_STATS(GPUSWEEP_STAT_ENTRY)
                                                  GPUSWEEP_HOST_SERIES(GPUSWEEP_SERIES_ENTRY)};
#undef GPUSWEEP_STAT_ENTRY
#undef GPUSWEEP_SERIES_ENTRY
  return table;
}

const HostStat* find_host_stat(const std::string& name) {
  static const auto by_name = [] {
    std::unordered_map<std::string, const HostStat*> m;
    for (const auto& s : host_stats()) m.emplace(s.name, &s);
    return m;
  }();
  const auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : it->second;
}

namespace {

using StatField = std::optional<double> HostStatValues::*;

// Each stat's field, in the table's order.
const std::vector<std::pair<const char*, StatField>>& stat_fields() {
#define GPUSWEEP_STAT_MEMBER(name, unit, combine, meaning) {#name, &HostStatValues::name},
  static const std::vector<std::pair<const char*, StatField>> fields = {
      GPUSWEEP_HOST_STATS(GPUSWEEP_STAT_MEMBER)};
#undef GPUSWEEP_STAT_MEMBER
  return fields;
}

const StatField* field_of(std::string_view name) {
  static const auto by_name = [] {
    std::unordered_map<std::string_view, StatField> m;
    for (const auto& [n, f] : stat_fields()) m.emplace(n, f);
    return m;
  }();
  const auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : &it->second;
}

}  // namespace

bool HostStatValues::set(std::string_view name, double value) {
  const StatField* f = field_of(name);
  if (f == nullptr) return false;
  this->*(*f) = value;
  return true;
}

void HostStatValues::set_at(size_t index, double value) {
  this->*(stat_fields().at(index).second) = value;
}

const std::optional<double>* HostStatValues::find(std::string_view name) const {
  const StatField* f = field_of(name);
  return f == nullptr ? nullptr : &(this->*(*f));
}

std::vector<std::pair<const char*, double>> HostStatValues::present() const {
  std::vector<std::pair<const char*, double>> out;
  for (const auto& [name, f] : stat_fields()) {
    if (const auto& v = this->*f) out.emplace_back(name, *v);
  }
  return out;
}

const char* combine_name(StatCombine c) {
  switch (c) {
    case StatCombine::median:
      return "median";
    case StatCombine::max:
      return "max";
    case StatCombine::each:
      return "each";
    case StatCombine::survival:
      return "survival";
  }
  return "?";
}

}  // namespace gpusweep::host
