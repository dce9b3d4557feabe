// Manifest checks for `plugins --check`; see manifest_check.hpp.
#include "plugin_host/manifest_check.hpp"

#include "spec/manifest.hpp"

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>

namespace gpusweep::host {

using Json = nlohmann::json;

namespace {

const std::regex kNamePattern("[a-z][a-z0-9_]*");
const std::regex kParamPattern("[A-Za-z_][A-Za-z0-9_]*");

// The Param factory a plugin author would use for a type, for fix texts.
std::string factory_for(ParamType type) {
  switch (type) {
    case ParamType::boolean:
      return "Param::boolean(name, default, description)";
    case ParamType::integer:
      return "Param::integer(name, default, min, max, description)";
    case ParamType::real:
      return "Param::real(name, default, min, max, description)";
    case ParamType::json:
      return "Param::json_value(name, default, description)";
    case ParamType::string:
      break;
  }
  return "Param::choice(name, default, {choices...}, description)";
}

// Is v of the parameter's type (ignoring range and choices)?
std::optional<std::string> type_problem(ParamType type, const Json& v) {
  ParamSpec spec;
  spec.type = type;
  return spec.check(v);
}

// Long by design: one check per field of a parameter (name, type, default,
// range, choices, common, applies), in the order a manifest declares them,
// each a few lines with its own message and fix.
void check_param(const Json& p, size_t index, std::set<std::string>& seen, CheckItems& out) {
  const std::string at = "parameter #" + std::to_string(index + 1);
  if (!p.is_object()) {
    out.problem(at + " is not a JSON object",
                "build parameters with the Param factories "
                "(Param::integer, Param::real, Param::boolean, Param::choice)");
    return;
  }
  const auto name = json_string(p, "name");
  if (!name || name->empty()) {
    out.problem(at + " has no name", "give every Param a name: it is the key in sweep files");
    return;
  }
  const std::string label = "parameter '" + *name + "'";
  if (!std::regex_match(*name, kParamPattern)) {
    out.problem(label + " is not a plain identifier",
                "use letters, digits and underscores (it is a key in sweep files and in "
                "--set " +
                    *name + "=...)");
  }
  if (!seen.insert(*name).second) {
    out.problem(label + " is declared twice", "remove one of the two from m.params");
  }
  const auto type_name = json_string(p, "type");
  const auto type = type_name ? parse_param_type(*type_name) : std::nullopt;
  if (!type) {
    out.problem(label + " has type " +
                    (type_name ? "'" + *type_name + "'" : std::string("(none)")) +
                    ", not bool, int, float, string or json",
                "declare it with Param::boolean, Param::integer, Param::real, Param::choice or "
                "Param::json_value");
    return;
  }
  if (json_string(p, "description").value_or("").empty()) {
    out.note(label + " has no description",
             "describe what it changes: `gpusweep plugins NAME` shows it to users");
  }
  for (const char* key : {"common", "applies"}) {
    if (p.contains(key) && !p.at(key).is_boolean()) {
      out.problem(label + ": '" + key + "' is " + p.at(key).dump() + ", not true or false",
                  "set Param::" + std::string(key) + " to a bool");
    }
  }
  std::optional<double> min;
  std::optional<double> max;
  for (const char* key : {"min", "max"}) {
    if (!p.contains(key) || p.at(key).is_null()) continue;
    const Json& v = p.at(key);
    if (!v.is_number()) {
      out.problem(label + ": '" + key + "' is " + v.dump() + ", not a number",
                  "give min and max as numbers, or leave them out");
      continue;
    }
    if (*type == ParamType::boolean || *type == ParamType::string || *type == ParamType::json) {
      out.note(label + " is a " + *type_name + " with a '" + key + "', which is ignored",
               "remove it; restrict strings with choices instead");
      continue;
    }
    (std::string(key) == "min" ? min : max) = v.get<double>();
  }
  if (min && max && *min > *max) {
    out.problem(label + ": min " + number_text(*min) + " is above max " + number_text(*max),
                "swap them: " + factory_for(*type));
  }
  std::vector<Json> choices;
  if (p.contains("choices") && !p.at("choices").is_null()) {
    if (!p.at("choices").is_array()) {
      out.problem(label + ": 'choices' is not a list", "give choices as a list of values");
    } else {
      std::set<std::string> distinct;
      for (const auto& c : p.at("choices")) {
        if (auto why = type_problem(*type, c)) {
          out.problem(
              label + ": choice " + c.dump() + " is not a " + *type_name + " (" + *why + ")",
              "list only values of the parameter's type");
          continue;
        }
        if (c.is_number() && ((min && c.get<double>() < *min) || (max && c.get<double>() > *max))) {
          out.problem(label + ": choice " + c.dump() + " is outside min..max",
                      "remove it, or widen the range");
        }
        if (!distinct.insert(c.dump()).second) {
          out.note(label + ": choice " + c.dump() + " is listed twice", "list it once");
        }
        choices.push_back(c);
      }
      if (p.at("choices").empty()) {
        out.problem(label + " has an empty list of choices", "list the allowed values");
      }
    }
  }
  if (!p.contains("default")) {
    out.problem(label + " has no default",
                "every parameter needs a default: a sweep file sets only what it varies. "
                "Use " +
                    factory_for(*type));
    return;
  }
  const Json& def = p.at("default");
  if (auto why = type_problem(*type, def)) {
    out.problem(label + ": default " + def.dump() + " is not a " + *type_name + " (" + *why + ")",
                "give a default of the declared type: " + factory_for(*type));
    return;
  }
  if (def.is_number()) {
    const double v = def.get<double>();
    const std::string range =
        (min ? number_text(*min) : std::string("-inf")) + ".." + (max ? number_text(*max) : "inf");
    if (min && v < *min) {
      out.problem(label + ": default " + def.dump() + " is below its minimum " + number_text(*min),
                  "make the default lie in " + range + " (" + factory_for(*type) +
                      "), or lower the minimum; the host refuses a manifest whose default is "
                      "out of range, so the plugin cannot be used");
    }
    if (max && v > *max) {
      out.problem(label + ": default " + def.dump() + " is above its maximum " + number_text(*max),
                  "make the default lie in " + range + " (" + factory_for(*type) +
                      "), or raise the maximum; the host refuses a manifest whose default is "
                      "out of range, so the plugin cannot be used");
    }
  }
  if (!choices.empty() && std::find(choices.begin(), choices.end(), def) == choices.end()) {
    out.problem(label + ": default " + def.dump() + " is not one of its choices",
                "add it to the choices or pick one of them as the default");
  }
  if (p.contains("check_value") && !p.at("check_value").is_null()) {
    ParamSpec spec = ParamSpec::from_json(p);
    if (auto why = spec.check(p.at("check_value"))) {
      out.problem(label + ": check_value " + p.at("check_value").dump() +
                      " is not a value it can take (" + *why + ")",
                  "give a value of its type and range, other than the default");
    } else if (p.at("check_value") == def) {
      out.note(label + ": check_value is its default, so trying it shows nothing",
               "give a value other than the default");
    }
  }
}

}  // namespace

std::optional<std::string> json_string(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::vector<CheckItem> check_manifest(const Json& m, const std::string& expected_name) {
  CheckItems out;
  if (!m.is_object()) {
    out.problem("manifest() returned " + m.dump().substr(0, 80) + ", not a JSON object",
                "return a gpusweep::Manifest from the static manifest() (GPUSWEEP_EXPORT_WORKLOAD "
                "turns it into JSON), or a JSON object from the C table's manifest()");
    return out.all();
  }
  if (m.contains("error")) {
    out.problem("manifest() failed: " + m.at("error").dump(),
                "make manifest() not throw; it runs when the host lists plugins, before any "
                "trial, so it must not touch devices or files");
  }
  const auto name = json_string(m, "name");
  if (!name || name->empty()) {
    out.problem("the manifest has no name",
                "set m.name = \"" + (expected_name.empty() ? "my_model" : expected_name) +
                    "\" (the workload name sweep files use)");
  } else if (!std::regex_match(*name, kNamePattern)) {
    out.problem("the manifest's name '" + *name +
                    "' is not lower-case letters, digits and "
                    "underscores starting with a letter",
                "rename the workload (m.name) and its file gpusweep_<name>.so to match");
  } else if (!expected_name.empty() && *name != expected_name) {
    out.problem("the manifest names the workload '" + *name + "' but the file is gpusweep_" +
                    expected_name + ".so",
                "make them agree: gpusweep_add_plugin(" + *name + " ...) builds gpusweep_" + *name +
                    ".so; the host refuses a file named after another workload");
  }
  if (json_string(m, "version").value_or("").empty()) {
    out.problem("the manifest has no version",
                "set m.version = \"0.1.0\"; it is part of every trial's identity, so bump it "
                "when a change alters what is measured");
  }
  if (json_string(m, "unit").value_or("").empty()) {
    out.problem("the manifest has no throughput unit",
                "set m.unit to what step() counts, e.g. m.unit = \"samples\" (or \"images\", "
                "\"tokens\", \"updates\"); throughput is reported as <unit>/s");
  }
  if (m.contains("secondary_unit") && !m.at("secondary_unit").is_string()) {
    out.problem("the manifest's secondary_unit is not a string",
                "set m.secondary_unit to a unit name, or leave it empty");
  }
  if (json_string(m, "description").value_or("").empty()) {
    out.note("the manifest has no description",
             "set m.description: what the model is, what one step does");
  }
  auto quality = m.find("quality");
  if (quality == m.end() || quality->is_null()) {
    out.note("the manifest names no quality metric",
             "set m.quality = {\"metric\", \"reference\", higher_is_better, \"description\"} "
             "and return the metric from evaluate(); without it quality columns stay empty");
  } else if (!quality->is_object()) {
    out.problem("the manifest's quality is not a JSON object",
                "set m.quality = {\"metric\", \"reference\", higher_is_better, \"description\"}");
  } else {
    if (quality->contains("metric") && !quality->at("metric").is_string()) {
      out.problem("quality.metric is not a string", "name the key evaluate() returns");
    } else if (json_string(*quality, "metric").value_or("").empty()) {
      out.note("the manifest names no quality metric",
               "set m.quality.metric to a key evaluate() returns (for example \"accuracy\")");
    }
    if (quality->contains("higher_is_better") && !quality->at("higher_is_better").is_boolean()) {
      out.problem("quality.higher_is_better is not true or false",
                  "say whether a larger metric is better");
    }
  }
  auto params = m.find("params");
  if (params == m.end() || !params->is_array()) {
    out.problem("the manifest's params is not a list",
                "list the parameters in m.params (torchkit::common_params(batch) plus your "
                "knobs; an empty list is allowed)");
    return out.all();
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < params->size(); ++i) check_param(params->at(i), i, seen, out);
  return out.all();
}

Json smallest_config(const Json& manifest) {
  Json config = Json::object();
  if (!manifest.is_object() || !manifest.contains("params") || !manifest["params"].is_array()) {
    return config;
  }
  for (const auto& p : manifest["params"]) {
    if (!p.is_object() || !p.contains("default")) continue;
    const auto name = json_string(p, "name");
    if (!name || name->empty()) continue;
    Json value = p["default"];
    if (*name == "batch_size" && value.is_number_integer()) {
      double smallest = 1;
      if (p.contains("min") && p["min"].is_number()) {
        smallest = std::max(smallest, std::ceil(p["min"].get<double>()));
      }
      value = static_cast<long long>(smallest);
    }
    config[*name] = value;
  }
  return config;
}

}  // namespace gpusweep::host
