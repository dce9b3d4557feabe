// A tune's settings; see tune_spec.hpp.
#include "spec/tune_spec.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <regex>

namespace gpusweep::host {

namespace {

[[noreturn]] void refuse(const std::string& source, const std::string& where,
                         const std::string& what) {
  throw UsageError(source + ": " + where + ": " + what);
}

}  // namespace

Json TuneSpec::to_json() const {
  if (!race) return written;
  Json j = {
      {"objective", objective_name(objective)}, {"constraints", constraints}, {"alpha", alpha},
      {"confirm_repeats", confirm_repeats},     {"max_live", max_live},       {"seed", seed}};
  if (race) j["race"] = true;
  return j;
}

double parse_duration(const std::string& what, const std::string& text) {
  static const std::regex form(
      R"(^\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s?)?\s*$)");
  std::smatch m;
  if (text.empty() || !std::regex_match(text, m, form) ||
      (!m[1].matched && !m[2].matched && !m[3].matched)) {
    throw UsageError(what + " '" + text + "': expected a duration such as 20m, 90s, 1h30m or " +
                     "a number of seconds");
  }
  double s = 0;
  if (m[1].matched) s += 3600 * std::stod(m[1]);
  if (m[2].matched) s += 60 * std::stod(m[2]);
  if (m[3].matched) s += std::stod(m[3]);
  if (!(s > 0)) throw UsageError(what + " '" + text + "': must be above 0");
  return s;
}

// One key after the other, each with its check and message.
TuneSpec parse_tune(const std::string& source, const Json& tune) {
  TuneSpec t;
  if (tune.is_null()) return t;
  if (!tune.is_object()) refuse(source, "tune", "expected an object, got " + tune.dump());
  t.written = tune;
  static const std::vector<std::string> keys = {
      "objective", "constraints", "budget", "alpha", "max_live", "seed", "race", "confirm_repeats"};
  for (const auto& [key, value] : tune.items()) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string known;
      for (const auto& k : keys) known += (known.empty() ? "" : ", ") + k;
      refuse(source, "tune." + key, "unknown key (tune has " + known + ")");
    }
  }
  if (auto it = tune.find("objective"); it != tune.end()) {
    const auto o = it->is_string() ? parse_objective(it->get<std::string>()) : std::nullopt;
    if (!o) {
      refuse(source, "tune.objective",
             std::string("expected ") + objective_names() +
                 "; time_to_target with measure.target; got " + it->dump());
    }
    t.objective = *o;
    t.objective_given = true;
  }
  if (auto it = tune.find("constraints"); it != tune.end()) {
    if (!it->is_array()) refuse(source, "tune.constraints", "expected a list of strings");
    for (const auto& c : *it) {
      if (!c.is_string()) refuse(source, "tune.constraints", "expected strings, got " + c.dump());
      t.constraints.push_back(c.get<std::string>());
    }
  }
  if (auto it = tune.find("budget"); it != tune.end()) {
    t.budget_s = it->is_number() ? it->get<double>()
                 : it->is_string()
                     ? parse_duration(source + ": tune.budget", it->get<std::string>())
                     : -1;
    if (!(t.budget_s > 0)) refuse(source, "tune.budget", "expected a duration such as \"20m\"");
  }
  if (auto it = tune.find("alpha"); it != tune.end()) {
    t.alpha = it->is_number() ? it->get<double>() : -1;
    if (!(t.alpha > 0 && t.alpha < 0.5)) refuse(source, "tune.alpha", "use a number in (0, 0.5)");
  }
  for (auto [key, target, low, high] :
       {std::tuple<const char*, int*, int, int>{"max_live", &t.max_live, 2, 64},
        std::tuple<const char*, int*, int, int>{"confirm_repeats", &t.confirm_repeats, 2, 20}}) {
    if (auto it = tune.find(key); it != tune.end()) {
      if (!it->is_number_integer() || it->get<int64_t>() < low || it->get<int64_t>() > high) {
        refuse(source, std::string("tune.") + key,
               "use an integer from " + std::to_string(low) + " to " + std::to_string(high));
      }
      *target = static_cast<int>(it->get<int64_t>());
    }
  }
  if (auto it = tune.find("race"); it != tune.end()) {
    if (!it->is_boolean()) refuse(source, "tune.race", "expected true or false");
    t.race = it->get<bool>();
  }
  if (auto it = tune.find("seed"); it != tune.end()) {
    if (!it->is_number_unsigned()) refuse(source, "tune.seed", "expected a non-negative integer");
    t.seed = it->get<uint64_t>();
  }
  return t;
}

}  // namespace gpusweep::host
