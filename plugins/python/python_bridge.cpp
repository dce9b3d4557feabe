// The `python` workload: a user's PyTorch training step written as a Python
// module (sdk/python/gpusweep, docs/writing-plugins.md "Python workloads"),
// measured under the same protocol, in the same worker process and with the
// same device synchronisation, clocks and statistics as the C++ plugins.
//
// The sweep names the module in base.module. Its MANIFEST gives the
// workload's units, quality metric, batch size and own parameters, and says
// which common settings it honours; this bridge adds the common settings
// (torchkit's, the same list every plugin has), torch.compile's and
// `module`, and applies the process-wide settings (threads, seed, TF32, cuDNN
// benchmark) in C++ before the module's create(config) runs: Python's torch
// and this library share one LibTorch. The block edges synchronise the
// device from C++ too, and peak memory is read from the same allocator.
#include <gpusweep/torchkit/torch_workload.hpp>

#include "bridge_workload.hpp"
#include "embed.hpp"

#include <gpusweep/module_spec.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <set>

namespace {

using namespace gpusweep;
using namespace gpusweep::torchkit;

constexpr const char* kModule = "module";

Param module_param() {
  Param p = Param::text(kModule, "",
                        "the workload's Python file (path/to/step.py, or path/to/step.py:factory "
                        "for a factory other than create), relative to the sweep file's folder; "
                        "it defines MANIFEST and create(config) (docs/writing-plugins.md)");
  p.selects = true;
  p.path = true;
  return p;
}

// The MANIFEST's supports, flag by flag as the table's header names them.
Support support_of(const Json& supports) {
  Support s;
  for (const auto& f : support_flags()) s.*(f.flag) = supports.value(f.name, s.*(f.flag));
  s.data_parallel = false;  // not yet for Python workloads
  s.reason = supports.value("reason", "");
  if (s.reason.empty())
    s.reason = "the Python workload's MANIFEST says it has nothing to apply it to";
  return s;
}

std::vector<Param> compile_params(bool applies) {
  std::vector<Param> out = {
      Param::boolean("compile", false,
                     "torch.compile the model (Settings.prepare); compilation falls in the "
                     "warmup and its time is reported as compile_s"),
      Param::choice("compile_mode", "default",
                    {"default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"},
                    "torch.compile's mode")};
  for (auto& p : out) {
    p.common = true;
    p.applies = applies;
  }
  return out;
}

struct Selected {
  Manifest manifest;
  Support support;
};

// The module's manifest with the common settings added, once per module
// and process.
const Selected& selected(const std::string& spec) {
  static std::mutex mutex;
  static std::map<std::string, Selected> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(spec); it != cache.end()) return it->second;
  const Json m = python::module_manifest(spec);
  const std::string where = "python module '" + spec + "': MANIFEST";
  auto text = [&](const char* key) {
    auto it = m.find(key);
    return it != m.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  Selected out;
  out.support = support_of(m.value("supports", Json::object()));
  Manifest& mf = out.manifest;
  mf.name = "python";
  // A changed module or sibling is a changed workload (the version is
  // hashed into every config).
  mf.version = text("version") + "+" + python::module_digest(spec);
  mf.description = text("name") + ": " + text("description") + " (" + spec + ")";
  mf.unit = text("unit");
  mf.secondary_unit = text("secondary_unit");
  mf.deterministic = m.value("deterministic", false);
  if (mf.unit.empty()) throw std::invalid_argument(where + " has no unit (\"images\", \"tokens\")");
  const Json q = m.value("quality", Json::object());
  mf.quality.metric = q.value("metric", "");
  mf.quality.reference = q.value("reference", "");
  mf.quality.higher_is_better = q.value("higher_is_better", true);
  mf.quality.description = q.value("description", "");
  if (mf.quality.metric.empty()) {
    throw std::invalid_argument(where + " has no quality metric (gpusweep.Quality(\"name\"))");
  }
  const Json batch = m.value("batch_size", Json(32));
  if (!batch.is_number_integer() || batch.get<int64_t>() < 1) {
    throw std::invalid_argument(where + ": batch_size must be a positive integer, not " +
                                batch.dump());
  }
  mf.params = common_params(batch.get<int64_t>(), out.support);
  for (auto& p : compile_params(m.value("supports", Json::object()).value("compile", true))) {
    mf.params.push_back(std::move(p));
  }
  mf.params.push_back(module_param());
  std::set<std::string> names;
  for (const auto& p : mf.params) names.insert(p.name);
  for (const auto& pj : m.value("params", Json::array())) {
    Param p;
    try {
      p = Param::from_json(pj);
    } catch (const std::exception& e) {
      throw std::invalid_argument(where + ": " + e.what());
    }
    if (!names.insert(p.name).second) {
      throw std::invalid_argument(where + ": parameter '" + p.name +
                                  "' is already a common setting or listed twice; rename it");
    }
    if (auto problem = p.check(p.default_value)) {
      throw std::invalid_argument(where + ": parameter '" + p.name + "' default: " + *problem);
    }
    mf.params.push_back(std::move(p));
  }
  for (const auto& mj : m.value("metrics", Json::array())) {
    Metric metric;
    metric.name = mj.value("name", "");
    metric.higher_is_better = mj.value("higher_is_better", true);
    if (mj.contains("min") && mj["min"].is_number()) metric.min = mj["min"].get<double>();
    if (mj.contains("max") && mj["max"].is_number()) metric.max = mj["max"].get<double>();
    metric.description = mj.value("description", "");
    mf.metrics.push_back(std::move(metric));
  }
  return cache.emplace(spec, std::move(out)).first->second;
}

std::string module_of(const Json& config) {
  auto it = config.find(kModule);
  if (it == config.end() || !it->is_string() || it->get<std::string>().empty()) {
    throw std::invalid_argument(
        "the python workload needs base.module: the Python file of the workload to run");
  }
  return it->get<std::string>();
}

class PythonWorkload : public python::BridgeWorkload {
 public:
  explicit PythonWorkload(const TrialConfig& config)
      : BridgeWorkload(config, selected(module_of(config.json())).support, module_of(config.json()),
                       config.json()) {}

  static Manifest manifest() {
    Manifest m;
    m.name = "python";
    m.version = "1.0.0";
    m.description =
        "a PyTorch training step written in Python: base.module names the file, whose MANIFEST "
        "gives the workload's units, quality metric and parameters";
    m.unit = "samples";
    m.quality.metric = "quality";
    m.quality.description = "the module's MANIFEST names its quality metric";
    m.params = {module_param()};
    return m;
  }

  static Manifest selected_manifest(const Json& config) {
    return selected(module_of(config)).manifest;
  }
};

}  // namespace

GPUSWEEP_EXPORT_WORKLOAD(PythonWorkload)
