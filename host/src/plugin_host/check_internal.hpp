// What `gpusweep plugins --check`'s parts share (plugin_check.cpp, the smoke
// run and the manifest; setting_check.cpp, the declared settings that must
// act): how a worker's call ended, in words.
#pragma once

#include "plugin_host/manifest_check.hpp"
#include "protocol/event_payloads.hpp"
#include "protocol/worker_args.hpp"
#include "support/spawn.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gpusweep::host::detail {

// How the worker ended, for a message: "was killed by SIGSEGV (...)".
std::string how_it_ended(const Captured& c, double timeout_s);
// "; stderr: ..." (its last 600 bytes), or "" when it wrote none.
std::string stderr_tail(const Captured& c);
// "step() (step 3)": the call a begin or end event is about.
std::string call_name(const event::Begin& call);
// "failed: message": an end event's status and message.
std::string status_text(const event::End& end);

// A setting the workload declares, at a value other than its default.
struct SettingTry {
  std::string name;
  nlohmann::json value;
  // The workload's own check_value: tried in a run of its own (a script
  // starts afresh each time, and one setting can hide another's effect, as
  // torch.compile hides the forward passes a precision is seen in).
  bool alone = false;
  std::string label() const { return name + "=" + value.dump(); }
};

// The declared settings to try: those the manifest gives a check_value
// (each alone) when it gives any; else grad_accum, channels_last,
// zero_grad_to_none and loader_workers, where the manifest has them and they
// apply (the workload's Supports), each at a value that must change what a
// step does.
std::vector<SettingTry> settings_to_try(const nlohmann::json& manifest);

// Runs the steps again with the settings in group at their tried values,
// all at once; a setting the run's failure names is a problem and the rest
// run again, and a failure that names none is narrowed down one setting at
// a time. Each setting gets an ok, a problem or a note in out.
void try_settings(const WorkerArgs& base, const nlohmann::json& config,
                  std::vector<SettingTry> group, double timeout_s, CheckItems& out);

// settings_to_try's settings, each of the workload's own choice in a run
// of its own, the host's all in one (try_settings).
void try_declared_settings(const WorkerArgs& base, const nlohmann::json& config,
                           const nlohmann::json& manifest, double timeout_s, CheckItems& out);

}  // namespace gpusweep::host::detail
