// The host's own trial stats; see stats.hpp.
#include "model/stats.hpp"

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
