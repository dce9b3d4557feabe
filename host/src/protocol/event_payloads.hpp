// Typed payloads of the worker's events (events.hpp names them): the worker
// fills a struct and emits to_json(), the collector reads from_json(), so
// that a field's name is spelled once. A field the writer left out reads as
// its default (or empty); one of the wrong type reads as missing.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host::event {

// `target`: the time to quality under measure.target, interpolated when
// reached, the training time so far when censored.
struct Target {
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
  std::string status = "failed";
  std::string phase;                     // where it ended, when not ok
  std::optional<int64_t> at_step{};      // the steps done then
  std::optional<int64_t> steps{};        // an ok trial's steps
  std::optional<std::string> message{};  // why, when not ok
  std::optional<std::string> reason{};   // a plugin that did not load: the reason alone

  nlohmann::json to_json() const;
  static Result from_json(const nlohmann::json& e);
  // The events of a worker that ended failed in phase, saying why, and of a
  // check run that is done.
  static nlohmann::json failed(const std::string& phase, const std::string& message);
  static nlohmann::json done();
};

// `phase`: the worker moved to setup, warmup, measure, an evaluation...
struct Phase {
  std::string phase;
  std::optional<int64_t> steps{};          // warmup's steps
  std::optional<int64_t> blocks{};         // measure's blocks
  std::optional<nlohmann::json> target{};  // measure under measure.target: the target

  nlohmann::json to_json() const;
  static Phase from_json(const nlohmann::json& e);
};

// `stats` (after the last block) and `stats_snapshot` (after warmup, with
// at_step): the plugin's stats as it gave them.
struct Stats {
  nlohmann::json stats = nlohmann::json::object();
  std::optional<int64_t> at_step{};  // a snapshot's

  nlohmann::json to_json() const;  // a snapshot when at_step is set
  static Stats from_json(const nlohmann::json& e);
};

// `runtime` (after create) and `loaded` (its runtime): the LibTorch and
// machine the plugin reports, and setup's time.
struct Runtime {
  nlohmann::json runtime = nlohmann::json::object();
  std::optional<double> setup_s{};

  nlohmann::json to_json() const;
  static Runtime from_json(const nlohmann::json& e);
};

// `hello`: the worker process started.
struct Hello {
  int64_t pid = 0;

  nlohmann::json to_json() const;
  static Hello from_json(const nlohmann::json& e);
};

// `heartbeat`: twice a second from its own thread; no fields, its arrival is
// the news.
struct Heartbeat {
  nlohmann::json to_json() const;
  static Heartbeat from_json(const nlohmann::json& e);
};

// `loaded`: the plugin loaded, and the workload it runs.
struct Loaded {
  std::optional<std::string> abi{};  // "major.minor" the plugin was built for
  int64_t struct_size = 0;           // its function table's
  nlohmann::json manifest;           // the workload's, as the plugin gave it (null when missing)
  nlohmann::json runtime = nlohmann::json::object();  // an object, as the plugin gave it

  nlohmann::json to_json() const;
  static Loaded from_json(const nlohmann::json& e);
};

// `probe`: doctor's and diagnose's measurements.
struct Probe {
  std::optional<std::vector<std::string>> libraries{};  // the shared libraries mapped (doctor)
  std::optional<nlohmann::json> matmul{};               // the matmul peaks, as the plugin gave them

  nlohmann::json to_json() const;
  static Probe from_json(const nlohmann::json& e);
};

// `memory_cap`: the cap measure.max_memory set, on the device's allocator or
// on the address space.
struct MemoryCap {
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
  int64_t turn = 0;
  bool unmeasured = false;  // it measures nothing: the host may grant it beside others

  nlohmann::json to_json() const;
  static Await from_json(const nlohmann::json& e);
};

// `begin`: a plugins --check run is about to call one of the plugin's
// functions; a begin with no end after it is the call that never returned.
struct Begin {
  std::string fn;                // "create", "step", ... ("" when missing)
  std::optional<int64_t> idx{};  // step: which one, from 0

  nlohmann::json to_json() const;
  static Begin from_json(const nlohmann::json& e);
};

// `end`: the call returned; what it returned and what it took. The fields
// after message are each one function's (and evaluate's and stats' only
// when they returned OK).
struct End {
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
