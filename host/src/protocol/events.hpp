// The worker's events: one JSON object per line on the protocol pipe, each
// with "event" set to one of these names. The worker writes them
// (event_writer.hpp); the host's collector, progress, probe commands and
// plugin checks read them. Spelled here once. Each has a typed payload
// (event_payloads.hpp): their writers and readers use those.
//
//   hello           {pid}                      the process started
//   heartbeat       {}                         twice a second, from its own thread
//   loaded          {abi, struct_size, manifest, runtime}
//   probe           {libraries?, matmul?}      doctor's and diagnose's measurements
//   memory_cap      {kind: "address_space", cap_bytes, baseline_bytes, limit_bytes} or
//                   {kind: "device", cap_bytes, device, limit_bytes, device_bytes, fraction}
//   phase           {phase, steps?, blocks?}   setup, warmup, eval_before, measure, ...
//   runtime         {runtime, setup_s}         after create
//   warmup_done     {seconds, first_step_s?, window_steps?, windows?, stable?}
//   stats_snapshot  {at_step, stats}           after warmup
//   eval            {at_step, seconds, metrics, train_s?, samples?}   (train_s and
//                   samples: the training clock and samples so far, under measure.target)
//   target          {reached, time_s, at_step, train_s, evaluations, eval_s, metric, value,
//                   diverged, capped?}
//                   the time to quality (measure.target): interpolated when reached, the
//                   training time so far when censored (capped: by the adaptive cap)
//   block           {idx, steps, seconds, device_seconds?, ...}
//   await           {turn, unmeasured?}        gated trials: waits for its turn
//   stats           {stats}                    after the last block
//   result          {status, phase?, message?, steps?}   the last event
//   begin           {fn, idx?}                 before each call of a plugins --check run
//   end             {fn, idx?, status, status_name, seconds, message?, instance?,
//                   samples?, secondary_samples?, metrics?, stats?}   after it returned
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gpusweep::host::event {

inline constexpr char hello[] = "hello";
inline constexpr char heartbeat[] = "heartbeat";
inline constexpr char loaded[] = "loaded";
inline constexpr char probe[] = "probe";
inline constexpr char memory_cap[] = "memory_cap";
inline constexpr char phase[] = "phase";
inline constexpr char runtime[] = "runtime";
inline constexpr char stats_snapshot[] = "stats_snapshot";
inline constexpr char warmup_done[] = "warmup_done";
inline constexpr char eval[] = "eval";
inline constexpr char block[] = "block";
inline constexpr char target[] = "target";
inline constexpr char await[] = "await";
inline constexpr char stats[] = "stats";
inline constexpr char result[] = "result";
inline constexpr char begin[] = "begin";
inline constexpr char end[] = "end";

// An event's name ("" when it has none).
std::string kind(const nlohmann::json& e);

// The events in protocol text, in order; a torn last line (a worker that
// died mid-write) and anything else that is not JSON is skipped.
std::vector<nlohmann::json> parse(const std::string& text);

}  // namespace gpusweep::host::event
