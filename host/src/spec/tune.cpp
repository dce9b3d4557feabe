// The tune space and settings; see tune.hpp.
#include "spec/tune.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <cmath>

namespace gpusweep::host {

namespace {

[[noreturn]] void refuse(const std::string& source, const std::string& where,
                         const std::string& what) {
  throw UsageError(source + ": " + where + ": " + what);
}

double number_at(const std::string& source, const std::string& where, const Json& j,
                 const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) {
    refuse(source, where + "." + key,
           "expected a number, got " + (it == j.end() ? "nothing" : it->dump()));
  }
  return it->get<double>();
}

}  // namespace

Json expand_range(const std::string& source, const std::string& key, const Json& range) {
  const std::string where = "grid." + key;
  for (const auto& [k, v] : range.items()) {
    if (k != "min" && k != "max" && k != "scale" && k != "points") {
      refuse(source, where,
             "unknown range key '" + k + "' (a range has min, max, scale and, for log, points)");
    }
  }
  const double low = number_at(source, where, range, "min");
  const double high = number_at(source, where, range, "max");
  const std::string scale = range.value("scale", std::string());
  if (!(low > 0) || !(high >= low)) {
    refuse(
        source, where,
        "a range needs 0 < min <= max, got min " + Json(low).dump() + ", max " + Json(high).dump());
  }
  // Beyond 2^53 a double no longer holds every integer, and a setting that
  // large is a typo, not a range to tune.
  constexpr double kLargest = 9007199254740992.0;
  if (high > kLargest) {
    refuse(source, where + ".max",
           "a range's max must be at most 2^53 (9007199254740992), got " + Json(high).dump());
  }
  const bool integers = range.at("min").is_number_integer() && range.at("max").is_number_integer();
  Json out = Json::array();
  if (scale == "pow2") {
    for (double v = 1; v <= high; v *= 2) {
      if (v >= low) out.push_back(static_cast<int64_t>(v));
    }
    if (out.empty()) refuse(source, where, "no power of two lies in [min, max]");
  } else if (scale == "log") {
    const double wanted = range.contains("points") ? number_at(source, where, range, "points") : 8;
    if (!(wanted >= 2 && wanted <= 64) || wanted != std::floor(wanted)) {
      refuse(source, where + ".points", "use a whole number of points from 2 to 64");
    }
    const int points = static_cast<int>(wanted);
    for (int i = 0; i < points; ++i) {
      const double v = low * std::pow(high / low, static_cast<double>(i) / (points - 1));
      const Json value = integers ? Json(static_cast<int64_t>(std::llround(v))) : Json(v);
      if (out.empty() || out.back() != value) out.push_back(value);
    }
  } else {
    refuse(source, where + ".scale",
           "expected \"pow2\" or \"log\", got " +
               (range.contains("scale") ? range["scale"].dump() : std::string("nothing")));
  }
  return out;
}

TuneSpace::TuneSpace(const SweepSpec& spec, const PluginManifest& manifest)
    : base_(manifest.defaults()) {
  for (const auto& [key, value] : spec.base.items()) base_[key] = value;
  for (const auto& [key, values] : spec.grid.items()) {
    names_.push_back(key);
    levels_.emplace_back(values.begin(), values.end());
    const ParamSpec* p = manifest.find(key);
    real_.push_back(p != nullptr && p->type == ParamType::real);
    size_ *= values.size();
    const bool numeric =
        std::all_of(values.begin(), values.end(), [](const Json& v) { return v.is_number(); });
    if (key == "batch_size" && numeric) memory_knob_ = static_cast<int>(names_.size() - 1);
  }
  // Reals as double, as expand_configs writes them: one identity, one hash.
  for (const auto& p : manifest.params) {
    if (p.type == ParamType::real && base_[p.name].is_number()) {
      base_[p.name] = base_[p.name].get<double>();
    }
  }
  for (size_t k = 0; k < names_.size(); ++k) {
    if (!real_[k]) continue;
    for (auto& v : levels_[k]) {
      if (v.is_number()) v = v.get<double>();
    }
  }
}

std::vector<size_t> TuneSpace::digits(uint64_t index) const {
  std::vector<size_t> d(names_.size());
  for (size_t k = names_.size(); k-- > 0;) {
    d[k] = static_cast<size_t>(index % levels_[k].size());
    index /= levels_[k].size();
  }
  return d;
}

uint64_t TuneSpace::index(const std::vector<size_t>& digits) const {
  uint64_t i = 0;
  for (size_t k = 0; k < names_.size(); ++k) i = i * levels_[k].size() + digits[k];
  return i;
}

std::string TuneSpace::label(uint64_t index) const {
  const auto d = digits(index);
  std::string out;
  for (size_t k = 0; k < d.size(); ++k) {
    const Json& v = levels_[k][d[k]];
    out += (k > 0 ? " " : "") + names_[k] + "=" + value_text(v);
  }
  return out;
}

Json TuneSpace::config(uint64_t index) const {
  Json c = base_;
  const auto d = digits(index);
  for (size_t k = 0; k < names_.size(); ++k) c[names_[k]] = levels_[k][d[k]];
  return c;
}

std::optional<uint64_t> TuneSpace::index_of(const Json& config) const {
  std::vector<size_t> d(names_.size());
  for (size_t k = 0; k < names_.size(); ++k) {
    auto it = config.find(names_[k]);
    if (it == config.end()) return std::nullopt;
    const auto& lv = levels_[k];
    auto at = std::find(lv.begin(), lv.end(), *it);
    if (at == lv.end()) return std::nullopt;
    d[k] = static_cast<size_t>(at - lv.begin());
  }
  return index(d);
}

}  // namespace gpusweep::host
