// Typed payloads of the worker's events: the worker fills a struct and
// emits to_json(), the host decodes each line once into one of them
// (events.hpp). Each payload's fields are listed once, in
// event_payloads.cpp, and both directions walk that list. A field the
// writer left out reads as its default (or empty); one of the wrong type
// reads as missing.
#pragma once

#include "protocol/phase.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host::event {

// Each event's name: its "event" field on the wire.
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

// `target`: the time to quality under measure.target, interpolated when
// reached, the training time so far when censored.
struct Target {
  static constexpr const char* name = event::target;
  bool reached = false;
  bool diverged = false;  // the metric went NaN or infinite: never reached
  bool capped = false;    // stopped by the adaptive cap, not its own budget
  std::optional<double> time_s{};
  int64_t at_step = 0;  // measured steps when it stopped
  double train_s = 0;   // training time then
  int64_t evaluations = 0;
  double eval_s = 0;  // time in evaluations, off the training clock
  std::string metric;
  double value = 0;               // the target value
  std::optional<double> cap_s{};  // the cap it stopped at (capped)

  nlohmann::json to_json() const;
  static Target from_json(const nlohmann::json& e);
};

// `warmup_done`: the transient, apart from the steady state the blocks measure.
struct WarmupDone {
  static constexpr const char* name = event::warmup_done;
  std::optional<double> seconds{};               // warmup's time, a parallel start's wait left out
  std::optional<double> first_step_s{};          // the first step on its own
  std::optional<int64_t> block_steps{};          // measure.block_s: the steps per block chosen
  std::optional<int64_t> window_steps{};         // measure.stable_warmup: steps per window...
  std::optional<std::vector<double>> windows{};  // ...each window's time
  bool stable = false;                           // ...and whether the last three agreed
  std::optional<double> gpu_busy_share{};        // the device's busy share over a block

  nlohmann::json to_json() const;
  static WarmupDone from_json(const nlohmann::json& e);
};

// `block`: one measured block of steps.
struct Block {
  static constexpr const char* name = event::block;
  int64_t idx = 0;
  int64_t steps = 0;
  double seconds = 0;  // the host's clock (the slowest rank's, data-parallel)
  double samples = 0;
  double secondary_samples = 0;
  std::optional<double> device_seconds{};             // the device's own clock (CUDA events)
  std::optional<std::vector<double>> rank_seconds{};  // data-parallel: each rank's time

  nlohmann::json to_json() const;
  static Block from_json(const nlohmann::json& e);
};

// `eval`: an evaluation's metrics, and under measure.target the training
// clock and samples it was taken at.
struct Eval {
  static constexpr const char* name = event::eval;
  int64_t at_step = 0;
  double seconds = 0;
  nlohmann::json metrics = nlohmann::json::object();  // the plugin's, as it gave them
  std::optional<double> train_s{};
  std::optional<double> samples{};

  nlohmann::json to_json() const;
  static Eval from_json(const nlohmann::json& e);
};

// `result`: the last event, how the plugin's calls ended: "ok", "failed",
// "oom", "skipped", "crashed" (another rank died), or "done" (a check run).
struct Result {
  static constexpr const char* name = event::result;
  std::string status = "failed";
  std::optional<host::Phase> phase{};    // where it ended, when not ok
  std::optional<int64_t> at_step{};      // the steps done then
  std::optional<int64_t> steps{};        // an ok trial's steps
  std::optional<std::string> message{};  // why, when not ok
  std::optional<std::string> reason{};   // a plugin that did not load: the reason alone

  nlohmann::json to_json() const;
  static Result from_json(const nlohmann::json& e);
  // The events of a worker that ended failed in phase, saying why, and of a
  // check run that is done.
  static nlohmann::json failed(host::Phase phase, const std::string& message);
  static nlohmann::json done();
};

// `phase`: the worker moved to setup, warmup, measure, an evaluation...
struct Phase {
  static constexpr const char* name = event::phase;
  std::optional<host::Phase> phase{};
  std::optional<int64_t> steps{};          // warmup's steps
  std::optional<int64_t> blocks{};         // measure's blocks
  std::optional<nlohmann::json> target{};  // measure under measure.target: the target

  nlohmann::json to_json() const;
  static Phase from_json(const nlohmann::json& e);
};

// `stats`, after the last block: the plugin's stats as it gave them.
struct Stats {
  static constexpr const char* name = event::stats;
  nlohmann::json stats = nlohmann::json::object();

  nlohmann::json to_json() const;
  static Stats from_json(const nlohmann::json& e);
};

// `stats_snapshot`, after warmup: the plugin's stats then.
struct StatsSnapshot {
  static constexpr const char* name = event::stats_snapshot;
  nlohmann::json stats = nlohmann::json::object();
  int64_t at_step = 0;

  nlohmann::json to_json() const;
  static StatsSnapshot from_json(const nlohmann::json& e);
};

// `runtime` (after create) and `loaded` (its runtime): the LibTorch and
// machine the plugin reports, and setup's time. A runtime event's report is
// as the plugin gave it (plugins --check judges one that is no object).
struct Runtime {
  static constexpr const char* name = event::runtime;
  nlohmann::json runtime = nlohmann::json::object();
  std::optional<double> setup_s{};

  nlohmann::json to_json() const;
  static Runtime from_json(const nlohmann::json& e);
};

// `hello`: the worker process started.
struct Hello {
  static constexpr const char* name = event::hello;
  int64_t pid = 0;

  nlohmann::json to_json() const;
  static Hello from_json(const nlohmann::json& e);
};

// `heartbeat`: twice a second from its own thread; no fields, its arrival is
// the news.
struct Heartbeat {
  static constexpr const char* name = event::heartbeat;
  nlohmann::json to_json() const;
  static Heartbeat from_json(const nlohmann::json& e);
};

// `loaded`: the plugin loaded, and the workload it runs.
struct Loaded {
  static constexpr const char* name = event::loaded;
  std::optional<std::string> abi{};  // "major.minor" the plugin was built for
  int64_t struct_size = 0;           // its function table's
  nlohmann::json manifest;           // the workload's, as the plugin gave it (null when missing)
  nlohmann::json runtime = nlohmann::json::object();  // an object, as the plugin gave it

  nlohmann::json to_json() const;
  static Loaded from_json(const nlohmann::json& e);
};

// `probe`: doctor's and diagnose's measurements.
struct Probe {
  static constexpr const char* name = event::probe;
  std::optional<std::vector<std::string>> libraries{};  // the shared libraries mapped (doctor)
  std::optional<nlohmann::json> matmul{};               // the matmul peaks, as the plugin gave them

  nlohmann::json to_json() const;
  static Probe from_json(const nlohmann::json& e);
};

// `memory_cap`: the cap measure.max_memory set, on the device's allocator or
// on the address space.
struct MemoryCap {
  static constexpr const char* name = event::memory_cap;
  std::string kind;                                 // "device" or "address_space"
  std::optional<double> cap_bytes{};                // measure.max_memory
  std::optional<double> baseline_bytes{};           // address space: its size before the cap
  std::optional<double> limit_bytes{};              // the limit set
  std::optional<double> fraction{};                 // device: the cap's share of its memory
  nlohmann::json extra = nlohmann::json::object();  // the rest (a device cap's plugin report)

  nlohmann::json to_json() const;  // extra's fields, then the named ones set over them
  static MemoryCap from_json(const nlohmann::json& e);
};

// `await`: a gated (interleaved) trial waits for its turn.
struct Await {
  static constexpr const char* name = event::await;
  int64_t turn = 0;
  bool unmeasured = false;  // it measures nothing: the host may grant it beside others

  nlohmann::json to_json() const;
  static Await from_json(const nlohmann::json& e);
};

// `begin`: a plugins --check run is about to call one of the plugin's
// functions; a begin with no end after it is the call that never returned.
struct Begin {
  static constexpr const char* name = event::begin;
  std::string fn;                // "create", "step", ... ("" when missing)
  std::optional<int64_t> idx{};  // step: which one, from 0

  nlohmann::json to_json() const;
  static Begin from_json(const nlohmann::json& e);
};

// `end`: the call returned; what it returned and what it took. The fields
// after message are each one function's (and evaluate's and stats' only
// when they returned OK).
struct End {
  static constexpr const char* name = event::end;
  std::string fn;
  std::optional<int64_t> idx{};
  // A gpusweep_status; one left out reads as GPUSWEEP_STATUS_ERROR (1), as
  // the host has always read it (protocol/ does not see the SDK's header).
  int64_t status = 1;
  std::string status_name = "failed";    // the status in words: "ok", "skipped"...
  double seconds = 0;                    // the call's, on the worker's clock
  std::optional<std::string> message{};  // the plugin's error_message(), when not OK
  std::optional<bool> instance{};        // create: whether it set its instance
  std::optional<double> samples{};       // step: its result (null on the wire when not finite)
  std::optional<double> secondary_samples{};
  std::optional<nlohmann::json> metrics{};  // evaluate: as the plugin gave them (may be null)
  std::optional<nlohmann::json> stats{};    // stats: likewise

  Begin call() const { return {fn, idx}; }
  nlohmann::json to_json() const;
  static End from_json(const nlohmann::json& e);
};

}  // namespace gpusweep::host::event
