// Single trials the host decides one at a time (`tune-batch` probes, the
// `diagnose` trial): each runs in its own worker like a sweep's trials and is
// recorded in the database as a trial of one sweep named after the command,
// so that `results`, `sql` and `export` see every probe.
#pragma once

#include "analysis/diagnose.hpp"
#include "plugin_host/registry.hpp"
#include "protocol/worker_args.hpp"
#include "run/collector.hpp"
#include "spec/sweep.hpp"

#include <gpusweep/db/run_lock.hpp>
#include <gpusweep/db/store.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

struct ProbeResult {
  int64_t trial_id = 0;
  db::TrialOutcome outcome;
  std::vector<event::Event> events;  // every protocol event but heartbeats, in order
  bool interrupted = false;          // Ctrl-C

  TrialReadings readings() const;
};

class ProbeSession {
 public:
  // Opens (creating) the database and records a new run of sweep
  // `spec.name`, of `kind` (diagnose, tune-batch).
  ProbeSession(const std::string& db_path, const SweepSpec& spec, const PluginInfo& info,
               db::RunKind kind);

  // Runs one trial of config (a resolved config) under measure; worker
  // carries the worker's other options (its plugin, config and measure are
  // set here); repeat distinguishes reruns of one config.
  ProbeResult run(const Json& config, const MeasureSpec& measure, WorkerArgs worker,
                  int64_t repeat = 0);

  // Marks the run finished (or interrupted).
  void close(bool complete);
  int64_t sweep_id() const { return sweep_id_; }

 private:
  std::optional<db::Store> store_;
  std::optional<db::RunLock> lock_;
  PluginInfo info_;
  int64_t sweep_id_ = 0;
  int64_t ordinal_ = 0;
};

// The one-config sweep of a command that runs a workload by itself
// (`tune-batch`, `diagnose`): named "<command>-<workload>", its protocol
// warmup steps and 5 blocks of steps_per_block, then the --set overrides.
SweepSpec command_sweep(const std::string& command, const std::string& workload,
                        const std::string& description, int64_t warmup_steps,
                        int64_t steps_per_block, const std::vector<std::string>& sets);

// The one config of spec (defaults, then base), after validating spec
// against the manifest (UsageError for a bad --set).
Json resolve_single_config(const SweepSpec& spec, const PluginManifest& manifest);

}  // namespace gpusweep::host
