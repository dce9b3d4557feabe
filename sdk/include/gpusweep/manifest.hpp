// A plugin's manifest as C++: the typed parameter schema, the quality metric
// and the units, written to JSON by the plugin and read back from JSON by the
// host. One definition on both sides of the ABI: what a value must be to be
// accepted (Param::check) is the same code in the host, which validates a
// sweep before anything runs, and in the SDK, which validates a trial's
// configuration before the workload sees it. Header-only; needs nlohmann/json.
#pragma once

#include <gpusweep/plugin.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpusweep {

using Json = nlohmann::json;

// A parameter's type, written in the manifest as its name. `json` takes any
// JSON value (a list of arguments, a map): the workload checks its shape.
enum class ParamType { boolean, integer, real, string, json };

inline const char* param_type_name(ParamType t) {
  switch (t) {
    case ParamType::boolean:
      return "bool";
    case ParamType::integer:
      return "int";
    case ParamType::real:
      return "float";
    case ParamType::string:
      return "string";
    case ParamType::json:
      return "json";
  }
  return "?";
}

// The type named by a manifest ("bool", "int", "float", "string", "json").
inline std::optional<ParamType> parse_param_type(const std::string& name) {
  for (ParamType t : {ParamType::boolean, ParamType::integer, ParamType::real, ParamType::string,
                      ParamType::json}) {
    if (name == param_type_name(t)) return t;
  }
  return std::nullopt;
}

// 4096 for an integral value, 0.5 otherwise: how a bound of the schema
// reads in a message.
inline std::string number_text(double v) {
  Json j = v;
  if (std::floor(v) == v && std::fabs(v) < 1e15) j = static_cast<long long>(v);
  return j.dump();
}

namespace detail {

inline std::string manifest_string(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string() || it->get<std::string>().empty()) {
    throw std::invalid_argument(std::string("'") + key + "' must be a non-empty string");
  }
  return it->get<std::string>();
}

}  // namespace detail

// One entry of a plugin's typed parameter schema.
struct Param {
  std::string name;
  ParamType type = ParamType::string;
  Json default_value;
  std::string description;
  std::vector<Json> choices;  // allowed values; empty = any of the type
  std::optional<double> min;  // inclusive range for int and float
  std::optional<double> max;
  bool common = false;  // a common setting (docs/architecture.md) vs a workload knob
  // False for a common setting this workload has nothing to apply to: a
  // trial that sets it to anything but the default is skipped.
  bool applies = true;
  // True for a parameter that selects which workload runs (the python
  // bridge's `module`): the manifest of the selected workload comes from
  // GPUSWEEP_EXT_SELECTED_MANIFEST, so a sweep sets it in `base`, never as a
  // grid axis. It is required when its default is an empty string (the
  // file that selects), optional otherwise.
  bool selects = false;
  // True for a file or folder path: the host makes a relative one absolute
  // from the sweep file's folder (a default too, for a selecting parameter).
  bool path = false;
  // A value other than the default at which `plugins --check` runs the steps
  // to see the setting act (null: the host's own choice for the settings it
  // knows to try, none for the rest). A bridge sets it on the settings its
  // selected workload carries (the script workload: those its flag map maps).
  Json check_value;

  static Param boolean(std::string name, bool def, std::string description) {
    return make(std::move(name), ParamType::boolean, def, std::move(description));
  }
  static Param integer(std::string name, long long def, std::optional<double> min,
                       std::optional<double> max, std::string description) {
    Param p = make(std::move(name), ParamType::integer, def, std::move(description));
    p.min = min;
    p.max = max;
    return p;
  }
  static Param real(std::string name, double def, std::optional<double> min,
                    std::optional<double> max, std::string description) {
    Param p = make(std::move(name), ParamType::real, def, std::move(description));
    p.min = min;
    p.max = max;
    return p;
  }
  // A free string (a path, a name); choice() for a closed set.
  static Param text(std::string name, std::string def, std::string description) {
    return make(std::move(name), ParamType::string, std::move(def), std::move(description));
  }
  static Param choice(std::string name, std::string def, std::vector<Json> choices,
                      std::string description) {
    Param p = make(std::move(name), ParamType::string, std::move(def), std::move(description));
    p.choices = std::move(choices);
    return p;
  }
  // Any JSON value but null (a name, a list, a map); the workload checks what
  // it holds when it reads it.
  static Param json_value(std::string name, Json def, std::string description) {
    return make(std::move(name), ParamType::json, std::move(def), std::move(description));
  }

  Json to_json() const {
    Json j{{"name", name},
           {"type", param_type_name(type)},
           {"default", default_value},
           {"description", description},
           {"common", common}};
    if (!applies) j["applies"] = false;
    if (selects) j["selects"] = true;
    if (path) j["path"] = true;
    if (!check_value.is_null()) j["check_value"] = check_value;
    if (!choices.empty()) j["choices"] = choices;
    if (min) j["min"] = *min;
    if (max) j["max"] = *max;
    return j;
  }

  // The parameter a manifest's entry describes. Throws std::invalid_argument
  // naming what is malformed (name, type or a missing default; the default
  // itself is not checked here).
  static Param from_json(const Json& j) {
    Param p;
    p.name = detail::manifest_string(j, "name");
    const std::string type = detail::manifest_string(j, "type");
    const auto t = parse_param_type(type);
    if (!t) {
      throw std::invalid_argument("parameter '" + p.name + "' has unknown type '" + type + "'");
    }
    p.type = *t;
    if (!j.contains("default")) {
      throw std::invalid_argument("parameter '" + p.name + "' has no default");
    }
    p.default_value = j.at("default");
    if (auto d = j.find("description"); d != j.end() && d->is_string()) p.description = *d;
    if (auto c = j.find("choices"); c != j.end() && c->is_array()) {
      p.choices.assign(c->begin(), c->end());
    }
    if (auto v = j.find("min"); v != j.end() && v->is_number()) p.min = v->get<double>();
    if (auto v = j.find("max"); v != j.end() && v->is_number()) p.max = v->get<double>();
    p.common = j.value("common", false);
    p.applies = j.value("applies", true);
    p.selects = j.value("selects", false);
    p.path = j.value("path", false);
    if (auto v = j.find("check_value"); v != j.end()) p.check_value = *v;
    return p;
  }

  // Empty when v is an acceptable value, else what is wrong with it
  // ("expected an integer, got "64"", "4097 is above the maximum 4096").
  std::optional<std::string> check(const Json& v) const {
    switch (type) {
      case ParamType::boolean:
        if (!v.is_boolean()) return "expected true or false, got " + v.dump();
        return std::nullopt;
      case ParamType::string:
        if (!v.is_string()) return "expected a string, got " + v.dump();
        break;
      case ParamType::json:
        if (v.is_null()) return "expected a value (a string, a list or a map), got null";
        return std::nullopt;
      case ParamType::integer:
        if (!v.is_number_integer()) {
          if (v.is_number_float() && std::isfinite(v.get<double>())) {
            return "expected an integer, got " + v.dump() + " (write it without a fraction)";
          }
          return "expected an integer, got " + v.dump();
        }
        break;
      case ParamType::real:
        if (!v.is_number() || !std::isfinite(v.get<double>())) {
          return "expected a finite number, got " + v.dump();
        }
        break;
    }
    if (!choices.empty() && std::find(choices.begin(), choices.end(), v) == choices.end()) {
      std::string list;
      for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c.dump();
      return v.dump() + " is not one of " + list;
    }
    if (v.is_number()) {
      const double x = v.get<double>();
      if (min && x < *min) return v.dump() + " is below the minimum " + number_text(*min);
      if (max && x > *max) return v.dump() + " is above the maximum " + number_text(*max);
    }
    return std::nullopt;
  }

 private:
  static Param make(std::string name, ParamType type, Json def, std::string description) {
    Param p;
    p.name = std::move(name);
    p.type = type;
    p.default_value = std::move(def);
    p.description = std::move(description);
    return p;
  }
};

// The quality metric evaluate() reports, and the reference it is judged against.
struct Quality {
  std::string metric;     // key in evaluate()'s metrics, e.g. "mean_return"
  std::string reference;  // key of the reference value, e.g. "random_policy_return"
  bool higher_is_better = true;
  std::string description;
};

// A metric evaluate() reports, declared so that a sweep's measure.target may
// name it (the quality metric may always be named): its direction and the
// values it can take, where it is bounded (an accuracy in [0, 1], a loss >=
// 0), so that a target outside them is refused before anything runs. An
// entry named as the quality metric gives that metric's range.
struct Metric {
  std::string name;  // key in evaluate()'s metrics
  bool higher_is_better = true;
  std::optional<double> min;
  std::optional<double> max;
  std::string description;
};

// The parameter that names the file a bridge workload runs (the python
// workload's `module`, the script workload's `script`): selecting, a path,
// no default. A sweep must set it in base.
inline bool names_selected_file(const Param& p) {
  return p.selects && p.path && p.default_value.is_string() &&
         p.default_value.get<std::string>().empty();
}

struct Manifest {
  std::string name;
  std::string version;
  std::string description;
  std::string unit;            // throughput unit: "updates", "images", "tokens"
  std::string secondary_unit;  // optional: "env_steps"
  Quality quality;
  std::vector<Param> params;
  std::vector<Metric> metrics;  // optional: metrics a target may name, with their ranges
  // The workload claims that two trials with the same config and seed on the
  // CPU evaluate to the same metrics: `plugins --check` tests it.
  bool deterministic = false;

  Json to_json() const {
    Json params_json = Json::array();
    for (const auto& p : params) params_json.push_back(p.to_json());
    Json j = {{"name", name},
              {"version", version},
              {"description", description},
              {"unit", unit},
              {"secondary_unit", secondary_unit},
              {"abi", {GPUSWEEP_ABI_MAJOR, GPUSWEEP_ABI_MINOR}},
              {"quality",
               {{"metric", quality.metric},
                {"reference", quality.reference},
                {"higher_is_better", quality.higher_is_better},
                {"description", quality.description}}},
              {"params", params_json}};
    // Only when declared: a manifest without them reads as before.
    if (deterministic) j["deterministic"] = true;
    if (!metrics.empty()) {
      j["metrics"] = Json::array();
      for (const auto& m : metrics) {
        Json mj = {{"name", m.name},
                   {"higher_is_better", m.higher_is_better},
                   {"description", m.description}};
        if (m.min) mj["min"] = *m.min;
        if (m.max) mj["max"] = *m.max;
        j["metrics"].push_back(mj);
      }
    }
    return j;
  }

  const Param* find(const std::string& key) const {
    for (const auto& p : params) {
      if (p.name == key) return &p;
    }
    return nullptr;
  }

  // A trial's configuration as the workload may read it: every parameter,
  // missing ones at their defaults, each value checked against its
  // parameter. Throws std::invalid_argument naming the key and what is wrong
  // with it, or a key the manifest does not declare.
  Json resolve(const Json& config) const {
    if (!config.is_object()) throw std::invalid_argument("the configuration is not a JSON object");
    for (const auto& [key, value] : config.items()) {
      const Param* p = find(key);
      if (p == nullptr) {
        throw std::invalid_argument("'" + key + "' is not a parameter of " + name);
      }
      if (auto problem = p->check(value)) {
        throw std::invalid_argument("'" + key + "': " + *problem);
      }
    }
    Json resolved = config;
    for (const auto& p : params) {
      if (!resolved.contains(p.name)) resolved[p.name] = p.default_value;
    }
    return resolved;
  }
};

}  // namespace gpusweep
