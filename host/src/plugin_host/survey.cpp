// The plugin survey and the LibTorch probe; see survey.hpp.
#include "plugin_host/survey.hpp"

#include "protocol/event_payloads.hpp"
#include "protocol/events.hpp"
#include "protocol/worker_args.hpp"
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
      row["torch_version"] = info.runtime.value("torch_version", "");
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
    if (!info.runtime.value("torch_version", "").empty()) return &info;
  }
  return nullptr;
}

Json probe_libtorch(const PluginFile& file, double matmul_s, std::string* why) {
  WorkerArgs w;
  w.mode = WorkerMode::probe;
  w.plugin_path = file.path;
  w.probe_matmul_s = matmul_s;
  const Captured c = run_worker_captured(w, 60 + 4 * matmul_s);
  for (const Json& e : event::parse(c.proto)) {
    if (event::kind(e) == event::probe) return e;
    if (event::kind(e) == event::result)
      *why = event::Result::from_json(e).message.value_or("failed");
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

}  // namespace gpusweep::host
