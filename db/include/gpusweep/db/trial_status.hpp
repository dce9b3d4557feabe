// A trial's status: the one closed vocabulary the database stores (the
// trials table's CHECK list), the worker's result events carry and every
// output prints, with its one name table.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace gpusweep::db {

enum class TrialStatus {
  pending,      // planned, not run (or to run again after --resume)
  ok,           // measured
  failed,       // the plugin reported an error, or the worker could not run it
  oom,          // an allocation failed (host or device)
  timeout,      // the trial or its worker ran past its time
  crashed,      // the worker died (signal, abnormal exit)
  skipped,      // the configuration cannot apply here; the reason says why
  interrupted,  // the run stopped (Ctrl-C, the host died) before it finished
};

inline constexpr TrialStatus kTrialStatuses[] = {
    TrialStatus::pending, TrialStatus::ok,      TrialStatus::failed,  TrialStatus::oom,
    TrialStatus::timeout, TrialStatus::crashed, TrialStatus::skipped, TrialStatus::interrupted};

// "ok", "oom", ...: the name in the database, in events and in outputs.
inline const char* status_name(TrialStatus s) {
  switch (s) {
    case TrialStatus::pending:
      return "pending";
    case TrialStatus::ok:
      return "ok";
    case TrialStatus::failed:
      return "failed";
    case TrialStatus::oom:
      return "oom";
    case TrialStatus::timeout:
      return "timeout";
    case TrialStatus::crashed:
      return "crashed";
    case TrialStatus::skipped:
      return "skipped";
    case TrialStatus::interrupted:
      return "interrupted";
  }
  return "?";
}

inline std::optional<TrialStatus> parse_trial_status(std::string_view name) {
  for (TrialStatus s : kTrialStatuses) {
    if (name == status_name(s)) return s;
  }
  return std::nullopt;
}

// Whether a trial in this status has run to an end (a later --resume keeps
// it): anything but pending and interrupted.
inline bool has_finished(TrialStatus s) {
  return s != TrialStatus::pending && s != TrialStatus::interrupted;
}

// As JSON, a status is its name.
inline void to_json(nlohmann::json& j, TrialStatus s) { j = status_name(s); }

}  // namespace gpusweep::db
