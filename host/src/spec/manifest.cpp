// Manifest parsing and value checks; see manifest.hpp.
#include "spec/manifest.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <cmath>

namespace gpusweep::host {

namespace {

std::string required_string(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string() || it->get<std::string>().empty()) {
    throw Error(std::string("manifest: '") + key + "' must be a non-empty string");
  }
  return it->get<std::string>();
}

std::string optional_string(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

PluginManifest PluginManifest::parse(const Json& j) {
  if (!j.is_object()) throw Error("manifest is not a JSON object");
  PluginManifest m;
  m.raw = j;
  m.name = required_string(j, "name");
  m.version = required_string(j, "version");
  m.unit = required_string(j, "unit");
  m.description = optional_string(j, "description");
  m.secondary_unit = optional_string(j, "secondary_unit");
  if (auto q = j.find("quality"); q != j.end() && q->is_object()) {
    m.quality_metric = optional_string(*q, "metric");
    m.quality_reference = optional_string(*q, "reference");
    m.quality_description = optional_string(*q, "description");
    m.higher_is_better = q->value("higher_is_better", true);
  }
  if (auto ms = j.find("metrics"); ms != j.end()) {
    if (!ms->is_array()) throw Error("manifest of '" + m.name + "': 'metrics' must be an array");
    for (const auto& mj : *ms) {
      if (!mj.is_object() || !mj.contains("name") || !mj["name"].is_string()) {
        throw Error("manifest of '" + m.name + "': each of 'metrics' needs a \"name\"");
      }
      MetricInfo info;
      info.name = mj["name"].get<std::string>();
      info.higher_is_better = mj.value("higher_is_better", true);
      for (auto [key, bound] :
           {std::pair<const char*, std::optional<double>*>{"min", &info.min}, {"max", &info.max}}) {
        if (auto b = mj.find(key); b != mj.end() && b->is_number()) *bound = b->get<double>();
      }
      m.metrics.push_back(info);
    }
  }
  auto params = j.find("params");
  if (params == j.end() || !params->is_array()) {
    throw Error("manifest of '" + m.name + "': 'params' must be an array");
  }
  for (const auto& pj : *params) {
    ParamSpec p;
    try {
      p = ParamSpec::from_json(pj);
    } catch (const std::invalid_argument& e) {
      throw Error("manifest of '" + m.name + "': " + e.what());
    }
    if (m.find(p.name) != nullptr) {
      throw Error("manifest of '" + m.name + "': parameter '" + p.name + "' is declared twice");
    }
    if (auto problem = p.check(p.default_value)) {
      throw Error("manifest of '" + m.name + "': default of '" + p.name +
                  "' is invalid: " + *problem);
    }
    m.params.push_back(std::move(p));
  }
  return m;
}

std::optional<MetricInfo> PluginManifest::target_metric(const std::string& name) const {
  std::optional<MetricInfo> out;
  for (const auto& mi : metrics) {
    if (mi.name == name) out = mi;
  }
  if (!quality_metric.empty() && name == quality_metric) {
    if (!out) out = MetricInfo{name, higher_is_better, std::nullopt, std::nullopt};
    out->higher_is_better = higher_is_better;  // the quality's direction rules
  }
  return out;
}

std::vector<std::string> PluginManifest::target_metric_names() const {
  std::vector<std::string> names;
  if (!quality_metric.empty()) names.push_back(quality_metric);
  for (const auto& mi : metrics) {
    if (mi.name != quality_metric) names.push_back(mi.name);
  }
  return names;
}

const ParamSpec* PluginManifest::find(const std::string& name) const {
  for (const auto& p : params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::vector<std::string> PluginManifest::param_names() const {
  std::vector<std::string> names;
  for (const auto& p : params) names.push_back(p.name);
  return names;
}

Json PluginManifest::defaults() const {
  Json j = Json::object();
  for (const auto& p : params) j[p.name] = p.default_value;
  return j;
}

namespace {
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::optional<std::string> did_you_mean(const std::string& word,
                                        const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

Json parse_cli_value(const std::string& text) {
  try {
    return Json::parse(text);
  } catch (const Json::exception&) {
    // Not JSON, or a number JSON cannot hold (1e3082): the text itself,
    // which the setting's own check then refuses by name.
    return text;
  }
}

std::string value_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace gpusweep::host
