// A run's status and kind: the closed vocabularies of the sweeps table
// (its CHECK lists), each with its one name table, as trial_status.hpp is
// a trial's.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string_view>

namespace gpusweep::db {

enum class SweepStatus {
  running,      // started, not ended (or its process died: serve asks its lock)
  finished,     // every trial ran
  interrupted,  // Ctrl-C stopped it; resume continues it
};

inline const char* sweep_status_name(SweepStatus s) {
  switch (s) {
    case SweepStatus::running:
      return "running";
    case SweepStatus::finished:
      return "finished";
    case SweepStatus::interrupted:
      return "interrupted";
  }
  return "?";
}

inline std::optional<SweepStatus> parse_sweep_status(std::string_view name) {
  for (SweepStatus s : {SweepStatus::running, SweepStatus::finished, SweepStatus::interrupted}) {
    if (name == sweep_status_name(s)) return s;
  }
  return std::nullopt;
}

inline void to_json(nlohmann::json& j, SweepStatus s) { j = sweep_status_name(s); }

enum class RunKind {
  sweep,       // `run`: a sweep's configs
  tune,        // `tune`: a race over a sweep's space
  check,       // `check` (and `history --confirm`): two builds of a sweep
  diagnose,    // `diagnose`: one probe trial with its phase timers
  tune_batch,  // `tune-batch`: short probes of batch sizes, and its target stage
};

inline const char* run_kind_name(RunKind k) {
  switch (k) {
    case RunKind::sweep:
      return "sweep";
    case RunKind::tune:
      return "tune";
    case RunKind::check:
      return "check";
    case RunKind::diagnose:
      return "diagnose";
    case RunKind::tune_batch:
      return "tune-batch";
  }
  return "?";
}

inline std::optional<RunKind> parse_run_kind(std::string_view name) {
  for (RunKind k :
       {RunKind::sweep, RunKind::tune, RunKind::check, RunKind::diagnose, RunKind::tune_batch}) {
    if (name == run_kind_name(k)) return k;
  }
  return std::nullopt;
}

// Whether a run's trials measure the configs they name (history's series):
// not diagnose's and tune-batch's, which time a few steps of each.
inline bool measures_configs(RunKind k) {
  return k != RunKind::diagnose && k != RunKind::tune_batch;
}

inline void to_json(nlohmann::json& j, RunKind k) { j = run_kind_name(k); }

}  // namespace gpusweep::db
