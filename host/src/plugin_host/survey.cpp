// The plugin survey and the LibTorch probe; see survey.hpp.
#include "plugin_host/survey.hpp"

#include "protocol/event_payloads.hpp"
#include "protocol/events.hpp"
#include "protocol/worker_args.hpp"
#include "spec/training_libraries.hpp"
#include "support/capture.hpp"
#include "support/spawn.hpp"

#include <sys/wait.h>

namespace gpusweep::host {

PluginSurvey survey_plugins(const Registry& registry) {
  PluginSurvey s;
  const auto files = registry.list();
  for (const auto& f : files) {
    Json row = {{"name", f.name}, {"file", f.path}};
    try {
      PluginInfo info = registry.describe_file(f);
      row["loads"] = true;
      row["version"] = info.manifest.version;
      row["unit"] = info.manifest.unit;
      row["description"] = info.manifest.description;
      row["abi"] = info.abi;
      row["torch_version"] = info.runtime_info.torch_version.value_or("");
      s.loaded.push_back(std::move(info));
    } catch (const PluginError& e) {
      row["loads"] = false;
      row["error"] = e.reason();
      s.problems.push_back("plugin '" + f.name + "' does not load: " + e.reason());
    } catch (const Error& e) {
      row["loads"] = false;
      row["error"] = e.what();
      s.problems.push_back(e.what());
    }
    s.rows.push_back(row);
  }
  for (const auto& d : registry.search_path()) {
    s.search_path += (s.search_path.empty() ? "" : ":") + d;
  }
  if (files.empty()) {
    s.problems.push_back(
        "no plugins found; add folders with --plugin-path or "
        "GPUSWEEP_PLUGIN_PATH");
  }
  return s;
}

const PluginInfo* libtorch_plugin(const PluginSurvey& survey) {
  for (const auto& info : survey.loaded) {
    if (!info.runtime_info.torch_version.value_or("").empty()) return &info;
  }
  return nullptr;
}

Json probe_libtorch(const PluginFile& file, double matmul_s, std::string* why,
                    const std::optional<std::string>& visible) {
  WorkerArgs w;
  w.mode = WorkerMode::probe;
  w.plugin_path = file.path;
  w.probe_matmul_s = matmul_s;
  w.visible_devices = visible;
  const Captured c = run_worker_captured(w, 60 + 4 * matmul_s);
  for (const auto& e : event::parse(c.proto)) {
    if (const auto* p = std::get_if<event::Probe>(&e)) return p->to_json();
    if (const auto* r = std::get_if<event::Result>(&e)) *why = r->message.value_or("failed");
  }
  if (why->empty()) {
    *why = c.timed_out ? "the probe did not finish in time"
           : WIFSIGNALED(c.status)
               ? "the probe was killed by " + signal_description(WTERMSIG(c.status))
               : "the probe reported nothing";
    if (!c.err.empty()) *why += "; stderr: " + c.err.substr(0, 300);
  }
  return nullptr;
}

std::string embedded_python(const PluginSurvey& survey) {
  for (const auto& info : survey.loaded) {
    if (auto interpreter = info.runtime_info.python_interpreter) {
      return *interpreter;
    }
  }
  return "";
}

Json probe_python(const std::string& interpreter, std::string* why) {
  // What a script's trial depends on in that environment; the torch is
  // imported to find where its libraries are, which the embedded
  // interpreter would load beside the plugins' LibTorch.
  static const char* const kProbe = R"(import json, os, sys
out = {"executable": sys.executable, "version": sys.version.split()[0], "prefix": sys.prefix}
try:
    import torch
    out["torch"] = {"version": torch.__version__, "cuda": torch.version.cuda or "",
                    "lib": os.path.realpath(os.path.join(os.path.dirname(torch.__file__), "lib"))}
except Exception as e:
    out["torch_error"] = "%s: %s" % (type(e).__name__, e)
import importlib.metadata as md
packages = {}
for name in sys.argv[1:] + ["jsonargparse", "datasets", "numpy"]:
    try:
        packages[name] = md.version(name)
    except md.PackageNotFoundError:
        pass
out["packages"] = packages
print(json.dumps(out))
)";
  CaptureLimits limits;
  limits.timeout_s = 120;
  Captured c;
  try {
    std::vector<std::string> args = {"-c", kProbe};
    args.insert(args.end(), kTrainingLibraries.begin(), kTrainingLibraries.end());
    c = capture(interpreter, args, limits);
  } catch (const Error& e) {
    *why = e.what();
    return nullptr;
  }
  if (c.timed_out || c.exit_code() != 0) {
    *why = c.timed_out ? "it did not answer within 120 s"
                       : "it exited with status " + std::to_string(c.exit_code());
    if (!c.err.empty()) *why += ": " + c.err.substr(c.err.size() > 400 ? c.err.size() - 400 : 0);
    return nullptr;
  }
  const Json out = Json::parse(c.out, nullptr, false);
  if (!out.is_object()) {
    *why = "it printed no report: " + c.out.substr(0, 200);
    return nullptr;
  }
  return out;
}

}  // namespace gpusweep::host
