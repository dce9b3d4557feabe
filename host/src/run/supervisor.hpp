// The runner's event loop (internal to run/): the Supervisor that
// Runner::run drives, and the Worker it keeps for each live trial. Its
// members live in supervisor.cpp (the run's life: signals, starting, reaping
// and finishing workers), worker_io.cpp (a worker's pipes and timers),
// turns.cpp (the turns the TurnScheduler opens, and their clocks) and
// trial_gpus.cpp (what it needs to know of a queued trial).
#pragma once

#include "run/fork_server.hpp"
#include "run/monitor.hpp"
#include "run/runner.hpp"
#include "run/turn_scheduler.hpp"
#include "spec/gpus.hpp"
#include "support/format.hpp"
#include "support/procfs.hpp"
#include "support/spawn.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpusweep::host::detail {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

// A trial's worker process while it lives: its pipes, timers and monitor,
// and the clocks of its turns (which turn it takes is the TurnScheduler's).
struct Worker {
  Worker(asio::io_context& io, TrialJob&& j, const SpawnedProcess& p);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  TrialJob job;
  pid_t pid;
  int gate;  // the host's end of the worker's gate; -1: not gated
  // timeout_s left: a gated worker spends it in its own turns only.
  double budget_s;
  double turn_s = 0;  // time in its own turns (gated)
  Clock::time_point turn_since = Clock::now();
  asio::posix::stream_descriptor proto, out, err;
  asio::steady_timer timer;
  asio::steady_timer watchdog;       // checks the heartbeat
  asio::steady_timer monitor_timer;  // samples CPU, memory and GPU
  TrialMonitor monitor;
  // The cgroup's OOM kills when the worker started, to tell a kernel OOM
  // kill from another SIGKILL.
  std::optional<int64_t> oom_kills_at_start = cgroup_oom_kills();
  rusage usage{};  // from wait4, when reaped
  bool have_usage = false;
  Clock::time_point last_heard = Clock::now();
  std::array<char, 65536> proto_buf{}, out_buf{}, err_buf{};
  std::string line;
  std::string stderr_tail;
  int64_t stderr_bytes = 0;
  int open_pipes = 3;
  bool exited = false;
  ExitInfo exit;
  std::string started_at;
  Clock::time_point t0 = Clock::now();
  // Time this worker ran alongside others, and which trials those were
  // (--jobs N > 1: they shared the machine, and its timings show it).
  double overlap_s = 0;
  std::set<int64_t> overlapped;
};

// Runs a Runner's jobs on one event loop (Runner::run).
class Supervisor {
 public:
  Supervisor(const std::string& exe, int jobs, bool fork_server, Interleave interleave,
             const GpuAssignment& gpus, Capping capping, std::vector<TrialJob>&& queue,
             const RunnerCallbacks& cb);
  ~Supervisor();

  bool run();

 private:
  // supervisor.cpp: the signals, and workers started, reaped and finished.
  void wait_stop();
  void wait_child();
  void reap();
  SpawnedProcess spawn_worker(const WorkerArgs& worker);
  void fill();
  void start(TrialJob&& job, const QueuedTrial& trial, const Start& decided);
  void account_overlap();
  void maybe_finish(pid_t pid);

  // worker_io.cpp: a live worker's pipes, timeout, watchdog and samples.
  void arm_timeout(Worker* w);
  void sample(Worker* w);
  void watch(Worker* w);
  void pipe_closed(Worker* w);
  void read_proto(Worker* w);
  void read_out(Worker* w);
  void read_err(Worker* w);

  // turns.cpp: the scheduler's decisions done (turns opened, caps), and
  // the clocks of a worker's turns.
  bool gated() const { return scheduler_.gated(); }
  void end_turn(Worker* w, bool unmeasured);
  void open(const std::vector<Grant>& grants);
  void grant(Worker* w, const Grant& g);
  void schedule();
  void note_target(const TrialJob& job, const event::Target& target);

  // trial_gpus.cpp: what the scheduler needs to know of a queued trial.
  QueuedTrial queued(const TrialJob& job) const;
  size_t gpus_needed(const TrialJob& job) const;

  static double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }

  std::string exe_;
  bool fork_server_;
  size_t gpus_listed_;  // the GPUs the run hands out (run --gpus); 0: none
  TurnScheduler scheduler_;
  // This run's interleave group: time and process make it unique among the
  // runs a database holds.
  std::string group_ = utc_now() + "/" + std::to_string(::getpid());
  std::map<std::string, std::unique_ptr<ForkServer>> servers_;  // by plugin path; null: cannot
  const RunnerCallbacks& cb_;
  asio::io_context io_;
  asio::signal_set stop_signals_;
  asio::signal_set child_;
  std::deque<TrialJob> queue_;
  std::map<pid_t, std::unique_ptr<Worker>> running_;
  Clock::time_point last_change_ = Clock::now();
  bool interrupted_ = false;
  bool done_ = false;
};

}  // namespace gpusweep::host::detail
