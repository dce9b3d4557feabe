// How the host starts a worker process: `gpusweep-worker ARGS`. One struct
// writes the command line (to_argv) and reads it back (parse_worker_args),
// so that no one builds or scans a worker's argv by hand.
#pragma once

#include "support/capture.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

enum class WorkerMode {
  trial,         // run one trial and report its blocks (the default)
  describe,      // only load and report manifest + runtime (the registry)
  plugin_check,  // smoke-test every table function (`plugins --check`)
  probe,         // only load, then report mapped libraries and the matmul peak (`doctor`)
  serve,         // a fork server reading requests on serve_fd (run/fork_server.hpp)
};

struct WorkerArgs {
  WorkerMode mode = WorkerMode::trial;
  std::string plugin_path;
  int proto_fd = 3;
  // Interleaved execution: the trial waits for a byte on this descriptor
  // before each turn (setup and warmup, then each measured block), having
  // written an `await` event; -1: it runs straight through.
  int gate_fd = -1;
  // With a gate: the awaits before setup and before the final evaluation
  // say `unmeasured` (the host may let such turns run at once), and a trial
  // that sizes its blocks by time, or warms up by time, waits for a turn of
  // its own before it does (Interleave::parallel_starts).
  bool parallel_starts = false;
  // The trial's GPU (run --gpus): the worker sets CUDA_VISIBLE_DEVICES to
  // it before CUDA starts in its process; none: the host's environment.
  std::optional<std::string> visible_devices;
  int64_t check_steps = 5;          // steps of the check mode's smoke test
  std::string config_json = "{}";   // resolved trial config
  std::string measure_json = "{}";  // MeasureSpec::to_json()
  // Caps what the trial may allocate; 0: no cap. On a CUDA device the
  // plugin caps its device allocator (GPUSWEEP_EXT_DEVICE_MEMORY_CAP);
  // otherwise the worker caps its address space (RLIMIT_AS = address space
  // after loading + this). An allocation past it fails inside the plugin,
  // which reports out-of-memory (`tune-batch`).
  double max_memory_bytes = 0;
  bool diagnose = false;      // time the step's phases (torchkit; `diagnose`)
  double probe_matmul_s = 0;  // > 0: measure the matmul peak (trial: after setup; probe)
  // measure.target's adaptive cap known when the trial starts: training
  // seconds after which it stops, censored (0: none). A gated trial may get
  // one, or a lower one, with a later turn (open_gate).
  double target_cap_s = 0;
  int serve_fd = -1;  // serve mode: the socket requests come on
  // A data-parallel trial's rank > 0 (worker/ranks.hpp): started by rank 0,
  // the worker the host started, and driven by it over peer_fd. -1: not one.
  int peer_fd = -1;
  int64_t rank = 0;

  // Whether a fork server's pre-loaded process may run it: a plain trial;
  // checks, probes, descriptions and diagnose runs need a fresh process.
  bool servable() const;

  // The command line after the executable.
  std::vector<std::string> to_argv() const;
};

// The worker's arguments (as to_argv writes them). Throws UsageError naming the option that is
// unknown, lacks its value or has a malformed one, or a missing --plugin.
WorkerArgs parse_worker_args(const std::vector<std::string>& args);

// The options, one per line, for `gpusweep-worker --help`.
std::string worker_options_help();

// The worker program, gpusweep-worker: a separate executable (linking the
// worker layer and what it uses, no database and no Asio) beside this one in
// a build tree, in ../libexec/gpusweep/ once installed. Throws Error with the
// places it looked.
std::string worker_executable();

// A worker run to completion with these arguments, killed after timeout_s;
// stdout is dropped and the first 64 KiB of stderr kept (support/capture).
Captured run_worker_captured(const WorkerArgs& worker, double timeout_s);

// A data-parallel trial's rendezvous folder (its ranks' FileStore): made by
// the worker that leads the ranks as "$TMPDIR/gpusweep-ranks-<its pid>-XXXXXX",
// so that the host, which knows the pid, can remove what is left after
// reaping it (a leader killed by a timeout, a stall or Ctrl-C never gets to).
std::string rendezvous_template(int leader_pid);
// Removes every rendezvous folder of that leader; the number removed.
int remove_rendezvous_folders(int leader_pid);

}  // namespace gpusweep::host
