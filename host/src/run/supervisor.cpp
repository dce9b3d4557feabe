// The supervisor's (supervisor.hpp) life on Boost.Asio: Ctrl-C and SIGCHLD,
// workers started (forked by a fork server or fresh processes), reaped and
// their trials finished; and Runner::run (runner.hpp), which drives it.
#include "run/runner.hpp"

#include "run/fork_server.hpp"
#include "run/monitor.hpp"
#include "run/supervisor.hpp"
#include "spec/gpus.hpp"
#include "spec/stats.hpp"
#include "support/format.hpp"
#include "support/procfs.hpp"
#include "support/spawn.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

namespace detail {

Supervisor::Supervisor(const std::string& exe, int jobs, bool fork_server, Interleave interleave,
                       const GpuAssignment& gpus, Capping capping, std::vector<TrialJob>&& queue,
                       const RunnerCallbacks& cb)
    : exe_(exe),
      fork_server_(fork_server),
      gpus_listed_(gpus.gpus.size()),
      scheduler_(jobs, interleave, gpus, std::move(capping)),
      cb_(cb),
      stop_signals_(io_, SIGINT, SIGTERM),
      child_(io_, SIGCHLD) {
  for (auto& j : queue) queue_.push_back(std::move(j));
}

// If the host fails mid-run (an exception out of a callback), no worker
// may outlive it.
Supervisor::~Supervisor() {
  for (auto& [pid, w] : running_) {
    if (w->exited) continue;
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
}

bool Supervisor::run() {
  wait_stop();
  wait_child();
  fill();
  if (running_.empty()) return true;
  io_.run();
  return !interrupted_;
}

void Supervisor::wait_stop() {
  if (done_) return;
  stop_signals_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    interrupted_ = true;
    scheduler_.stop();
    for (auto& [pid, w] : running_) {
      w->exit.interrupted = true;
      ::kill(-pid, SIGKILL);
    }
    wait_stop();
  });
}

void Supervisor::wait_child() {
  if (done_) return;
  child_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    reap();
    wait_child();
  });
}

// Every exited child: a trial's worker is finished; anything else (a fork
// server, or an orphan a worker left, adopted by this host as a subreaper)
// is only reaped. waitid with WNOWAIT looks before it takes.
void Supervisor::reap() {
  std::vector<pid_t> done;
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) break;
    const pid_t pid = info.si_pid;
    auto it = running_.find(pid);
    if (it == running_.end() || it->second->exited) {
      ::waitpid(pid, nullptr, 0);
      continue;
    }
    Worker* w = it->second.get();
    int status = 0;
    if (::wait4(pid, &status, 0, &w->usage) != pid) continue;
    account_overlap();
    if (scheduler_.taking_turn(pid)) w->turn_s += seconds_since(w->turn_since);
    w->exited = true;
    scheduler_.exited(pid);
    w->have_usage = true;
    w->monitor_timer.cancel();
    if (WIFEXITED(status)) w->exit.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) w->exit.signal = WTERMSIG(status);
    if (w->exit.signal && w->oom_kills_at_start) {
      if (auto now = cgroup_oom_kills()) w->exit.oom_kills = *now - *w->oom_kills_at_start;
    }
    w->timer.cancel();
    w->watchdog.cancel();
    // Anything the worker left behind in its group goes with it, so
    // that its pipes reach EOF; so does a data-parallel trial's rendezvous
    // folder, which a leader killed (timeout, silence, Ctrl-C) leaves.
    ::kill(-pid, SIGKILL);
    if (world_size_of(Json::parse(w->job.worker.config_json)) > 1) {
      remove_rendezvous_folders(static_cast<int>(pid));
    }
    done.push_back(pid);
  }
  for (pid_t pid : done) maybe_finish(pid);
}

SpawnedProcess Supervisor::spawn_worker(const WorkerArgs& worker) {
  if (fork_server_ && worker.servable()) {
    const std::string& plugin = worker.plugin_path;
    auto it = servers_.find(plugin);
    if (it == servers_.end()) {
      std::unique_ptr<ForkServer> server;
      try {
        server = std::make_unique<ForkServer>(exe_, plugin);
      } catch (const std::exception& e) {
        if (cb_.on_notice) {
          cb_.on_notice(std::string(e.what()) + "; its trials start fresh processes");
        }
      }
      it = servers_.emplace(plugin, std::move(server)).first;
    }
    if (it->second) {
      try {
        return it->second->spawn(worker);
      } catch (const std::exception& e) {
        if (cb_.on_notice) {
          cb_.on_notice(std::string(e.what()) + "; this plugin's trials start fresh processes");
        }
        it->second.reset();
      }
    }
  }
  return spawn_process(exe_, worker.to_argv(), {}, worker.gate_fd >= 0);
}

void Supervisor::fill() {
  while (!queue_.empty()) {
    const QueuedTrial next = queued(queue_.front());
    const std::optional<Start> decided = scheduler_.next_start(next);
    if (!decided) break;
    TrialJob job = std::move(queue_.front());
    queue_.pop_front();
    start(std::move(job), next, *decided);
  }
  schedule();
  if (running_.empty() && (queue_.empty() || interrupted_)) {
    done_ = true;  // handlers must not re-arm the signal waits
    stop_signals_.cancel();
    child_.cancel();
  }
}

void Supervisor::start(TrialJob&& job, const QueuedTrial& trial, const Start& decided) {
  const std::string started = utc_now();
  if (gated()) {
    job.worker.gate_fd = kGateFd;
    job.worker.parallel_starts = scheduler_.parallel_starts();
  }
  job.worker.target_cap_s = decided.cap_s;
  if (decided.visible_devices) job.worker.visible_devices = decided.visible_devices;
  SpawnedProcess p;
  try {
    p = spawn_worker(job.worker);
  } catch (const std::exception& e) {
    scheduler_.start_failed(decided);
    db::TrialOutcome o;
    o.status = db::TrialStatus::failed;
    o.error = e.what();
    o.started_at = o.finished_at = started;
    if (cb_.on_start) cb_.on_start(job);
    cb_.on_finish(job, std::move(o));
    return;
  }
  auto w = std::make_unique<Worker>(io_, std::move(job), p);
  w->started_at = started;
  w->exit.timeout_s = w->job.timeout_s;
  Worker* raw = w.get();
  account_overlap();
  scheduler_.started(p.pid, trial, decided);
  running_.emplace(p.pid, std::move(w));
  if (cb_.on_start) cb_.on_start(raw->job);
  read_proto(raw);
  read_out(raw);
  read_err(raw);
  if (raw->gate < 0) arm_timeout(raw);
  watch(raw);
  sample(raw);
}

// Charges the time since the last start or finish to every worker that
// ran alongside another meanwhile. Called before running_ changes.
// Only workers taking a turn count: interleaved trials waiting at their
// gates run nothing. Called before any worker's turn or life changes.
void Supervisor::account_overlap() {
  const auto now = Clock::now();
  const double dt = std::chrono::duration<double>(now - last_change_).count();
  last_change_ = now;
  std::vector<Worker*> busy_now;
  for (auto& [pid, w] : running_) {
    // A turn that measures nothing (parallel starts) shares no timing.
    if (!w->exited && scheduler_.measuring(pid)) busy_now.push_back(w.get());
  }
  if (busy_now.size() < 2) return;
  for (Worker* w : busy_now) {
    w->overlap_s += dt;
    for (Worker* other : busy_now) {
      if (other != w) w->overlapped.insert(other->job.trial_id);
    }
  }
}

void Supervisor::maybe_finish(pid_t pid) {
  auto it = running_.find(pid);
  if (it == running_.end()) return;
  Worker* w = it->second.get();
  if (!w->exited || w->open_pipes > 0) return;
  if (w->stderr_tail.size() > kStderrTailBytes) {
    w->stderr_tail.erase(0, w->stderr_tail.size() - kStderrTailBytes);
  }
  db::TrialOutcome o = w->job.collector->finish(w->exit, w->stderr_tail, w->stderr_bytes);
  o.started_at = w->started_at;
  o.finished_at = utc_now();
  o.wall_s = std::chrono::duration<double>(Clock::now() - w->t0).count();
  account_overlap();
  // What the trial ran for: its turns when it took turns, else its life.
  const double ran_s = w->gate >= 0 ? w->turn_s : o.wall_s;
  o.metrics.push_back({"stat", 0, host_stat::overlap_fraction,
                       ran_s > 0 ? std::min(1.0, w->overlap_s / ran_s) : 0});
  o.metrics.push_back(
      {"stat", 0, host_stat::overlap_trials, static_cast<double>(w->overlapped.size())});
  if (w->gate >= 0) {
    o.interleave_group = group_;
    o.metrics.push_back({"stat", 0, host_stat::turn_s, w->turn_s});
  }
  w->monitor.fetch_driver_samples();  // the last window's tail, stamped after the last poll
  for (auto& m : w->monitor.metrics(w->have_usage ? &w->usage : nullptr, ran_s)) {
    o.metrics.push_back(std::move(m));
  }
  std::unique_ptr<Worker> owned = std::move(it->second);
  running_.erase(it);
  scheduler_.finished(pid);
  cb_.on_finish(owned->job, std::move(o));
  // Destroy the worker after the handlers that reference it have run.
  asio::post(io_, [owned = std::shared_ptr<Worker>(std::move(owned))] {});
  fill();
}

}  // namespace detail

bool Runner::run(std::vector<TrialJob> jobs, const RunnerCallbacks& callbacks) {
  detail::Supervisor s(exe_, jobs_ < 1 ? 1 : jobs_, fork_server_, interleave_, gpus_, capping_,
                       std::move(jobs), callbacks);
  return s.run();
}

}  // namespace gpusweep::host
