// The host's view of a plugin manifest (the JSON a plugin's manifest()
// returns), and checking a value against one parameter of its schema.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

using Json = nlohmann::json;

struct ParamSpec {
  std::string name;
  std::string type;  // bool | int | float | string
  Json default_value;
  std::string description;
  std::vector<Json> choices;
  std::optional<double> min;
  std::optional<double> max;
  bool common = false;
  bool applies = true;  // false: a common setting this workload cannot use
};

struct PluginManifest {
  std::string name;
  std::string version;
  std::string description;
  std::string unit;
  std::string secondary_unit;
  std::string quality_metric;
  std::string quality_reference;
  std::string quality_description;
  bool higher_is_better = true;
  std::vector<ParamSpec> params;
  Json raw;

  // Throws gpusweep::Error naming what is malformed.
  static PluginManifest parse(const Json& json);
  const ParamSpec* find(const std::string& name) const;
  std::vector<std::string> param_names() const;
  // Every parameter at its default.
  Json defaults() const;
};

// Empty when value is acceptable for p, else what is wrong with it
// ("expected an integer, got "64"", "must be <= 4096").
std::optional<std::string> check_value(const ParamSpec& p, const Json& value);

// The closest candidate by edit distance, if close enough to be a likely typo.
std::optional<std::string> did_you_mean(const std::string& word,
                                        const std::vector<std::string>& candidates);

// "true", "12", "0.5", "\"x\"" parse as JSON; anything else is a string.
Json parse_cli_value(const std::string& text);

}  // namespace gpusweep::host
