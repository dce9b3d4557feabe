// The host's view of a plugin manifest (the JSON a plugin's manifest()
// returns), and checking a value against one parameter of its schema.
#pragma once

#include <gpusweep/manifest.hpp>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

using Json = nlohmann::json;

// A parameter of the schema: the SDK's own type, so that the host reads a
// manifest into what the plugin wrote it from, and checks a value with the
// same code the SDK runs before a workload sees its configuration.
using ParamSpec = gpusweep::Param;
using gpusweep::ParamType;

// A metric evaluate() reports that a target may name (the manifest's
// "metrics", and its quality metric): direction and range.
struct MetricInfo {
  std::string name;
  bool higher_is_better = true;
  std::optional<double> min;
  std::optional<double> max;
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
  std::vector<MetricInfo> metrics;  // declared ones (may include the quality metric's range)
  Json raw;

  // Throws gpusweep::Error naming what is malformed.
  static PluginManifest parse(const Json& json);
  const ParamSpec* find(const std::string& name) const;
  std::vector<std::string> param_names() const;
  // Every parameter at its default.
  Json defaults() const;
  // The metric a target may name: the quality metric (its direction, and
  // the range a "metrics" entry of the same name gives) or a declared one;
  // nothing for a metric the manifest does not declare.
  std::optional<MetricInfo> target_metric(const std::string& name) const;
  // The names target_metric knows, for messages.
  std::vector<std::string> target_metric_names() const;
};

// The closest candidate by edit distance, if close enough to be a likely typo.
std::optional<std::string> did_you_mean(const std::string& word,
                                        const std::vector<std::string>& candidates);

// "true", "12", "0.5", "\"x\"" parse as JSON; anything else is a string.
Json parse_cli_value(const std::string& text);
// A setting's value as text: a string as it is, anything else as JSON.
std::string value_text(const Json& v);

}  // namespace gpusweep::host
