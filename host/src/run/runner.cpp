// Worker supervision on Boost.Asio; see runner.hpp.
#include "run/runner.hpp"

#include "model/gpus.hpp"
#include "protocol/events.hpp"
#include "run/fork_server.hpp"
#include "run/monitor.hpp"
#include "support/format.hpp"
#include "support/procfs.hpp"
#include "support/spawn.hpp"

#include <gpusweep/random.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

namespace gpusweep::host {

namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

// The trial's resolved config, for the monitor (null if it does not parse:
// the worker refuses it anyway).
nlohmann::json parse_config(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  }
}

// Protocol lines longer than this mean a broken worker, not a big event.
constexpr size_t kMaxLine = 16 * 1024 * 1024;

// Where a worker stands in interleaved execution. A worker without a gate
// runs from start to end.
enum class Turn {
  starting,  // gated, has not yet asked for its first turn
  waiting,   // gated, at its gate
  running,   // taking its turn (or not gated)
};

struct Worker {
  Worker(asio::io_context& io, TrialJob&& j, const SpawnedProcess& p)
      : job(std::move(j)),
        pid(p.pid),
        gate(p.gate_fd),
        proto(io, p.proto_fd),
        out(io, p.stdout_fd),
        err(io, p.stderr_fd),
        timer(io),
        watchdog(io),
        monitor_timer(io),
        monitor(p.pid, Nvml::shared(), parse_config(job.worker.config_json)) {
    turn = gate >= 0 ? Turn::starting : Turn::running;
    budget_s = job.timeout_s;
  }
  ~Worker() {
    if (gate >= 0) ::close(gate);
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  TrialJob job;
  pid_t pid;
  int gate;  // the host's end of the worker's gate; -1: not gated
  Turn turn;
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
  // The order this worker was started in (the queue's: the plan's
  // ordinals), and whether it has had a turn yet (gated).
  int64_t start_seq = 0;
  bool had_turn = false;
};

class Supervisor {
 public:
  Supervisor(const std::string& exe, int jobs, bool fork_server, Interleave interleave,
             const GpuAssignment& gpus, Capping capping, std::vector<TrialJob>&& queue,
             const RunnerCallbacks& cb)
      : exe_(exe),
        jobs_(jobs),
        fork_server_(fork_server),
        interleave_(interleave),
        gpus_(gpus),
        capping_(std::move(capping)),
        free_gpus_(gpus.gpus.begin(), gpus.gpus.end()),
        shuffle_rng_(interleave.seed),
        cb_(cb),
        stop_signals_(io_, SIGINT, SIGTERM),
        child_(io_, SIGCHLD) {
    for (auto& j : queue) queue_.push_back(std::move(j));
  }

  // If the host fails mid-run (an exception out of a callback), no worker
  // may outlive it.
  ~Supervisor() {
    for (auto& [pid, w] : running_) {
      if (w->exited) continue;
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }

  bool run() {
    wait_stop();
    wait_child();
    fill();
    if (running_.empty()) return true;
    io_.run();
    return !interrupted_;
  }

 private:
  void wait_stop() {
    if (done_) return;
    stop_signals_.async_wait([this](const boost::system::error_code& ec, int) {
      if (ec) return;
      interrupted_ = true;
      for (auto& [pid, w] : running_) {
        w->exit.interrupted = true;
        ::kill(-pid, SIGKILL);
      }
      wait_stop();
    });
  }

  void wait_child() {
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
  void reap() {
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
      if (w->turn == Turn::running) w->turn_s += seconds_since(w->turn_since);
      w->exited = true;
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
      // that its pipes reach EOF.
      ::kill(-pid, SIGKILL);
      done.push_back(pid);
    }
    for (pid_t pid : done) maybe_finish(pid);
  }

  SpawnedProcess spawn_worker(const WorkerArgs& worker) {
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

  bool gated() const { return interleave_.window > 1; }

  // Interleave::by_round: whether `job` may start now, no trial of an
  // earlier round running.
  bool round_open(const TrialJob& job) const {
    if (!interleave_.by_round || job.round < 0) return true;
    for (const auto& [pid, w] : running_) {
      if (w->job.round >= 0 && w->job.round < job.round) return false;
    }
    return true;
  }

  void fill() {
    // Interleaved: a window of live trials, of which jobs_ take turns at once.
    const int alive = gated() ? std::max(interleave_.window, jobs_) : jobs_;
    while (!interrupted_ && static_cast<int>(running_.size()) < alive && !queue_.empty() &&
           round_open(queue_.front()) && gpus_free_for(queue_.front())) {
      TrialJob job = std::move(queue_.front());
      queue_.pop_front();
      start(std::move(job));
    }
    schedule();
    if (running_.empty() && (queue_.empty() || interrupted_)) {
      done_ = true;  // handlers must not re-arm the signal waits
      stop_signals_.cancel();
      child_.cancel();
    }
  }

  // The GPUs a trial takes: one per rank (world_size), or fewer for Gloo's
  // ranks, which may share (gpus_for_trial).
  size_t gpus_needed(const TrialJob& job) const {
    try {
      const Json config = Json::parse(job.worker.config_json);
      if (config.value("device", std::string("auto")) == "cpu") return 1;  // ranks on CPUs
      return static_cast<size_t>(gpus_for_trial(config, gpus_.gpus.size()));
    } catch (const Json::exception&) {
      return 1;
    }
  }
  // Whether the next trial's GPUs are free (always, without --gpus or when
  // the interleaved trials share theirs).
  bool gpus_free_for(const TrialJob& job) const {
    return gpus_.gpus.empty() || gpus_.shared || gpus_needed(job) <= free_gpus_.size() ||
           running_.empty();
  }
  // The trial's GPUs (run --gpus): free ones of the run's, or the ones the
  // interleaved trials share, one per rank, as one CUDA_VISIBLE_DEVICES
  // list; back to the pool when the trial ends.
  void take_gpu(TrialJob& job) {
    if (gpus_.gpus.empty()) return;
    const size_t n = gpus_needed(job);
    job.pooled_gpus = !gpus_.shared && free_gpus_.size() >= n;
    std::string list;
    for (size_t i = 0; i < n && i < gpus_.gpus.size(); ++i) {
      std::string gpu = gpus_.gpus[i];
      if (job.pooled_gpus) {
        gpu = free_gpus_.front();
        free_gpus_.pop_front();
      }
      list += (i > 0 ? "," : "") + gpu;
    }
    job.worker.visible_devices = list;
  }
  void return_gpu(const TrialJob& job) {
    if (!job.pooled_gpus || !job.worker.visible_devices) return;
    std::stringstream in(*job.worker.visible_devices);
    for (std::string gpu; std::getline(in, gpu, ',');) free_gpus_.push_back(gpu);
  }

  // The adaptive cap of a trial's round now (Capping); 0: none.
  double cap_for(const TrialJob& job) const { return capping_.cap(job.round, job.config); }

  // A trial reached its target: its round's best time, and so its cap.
  void note_target(const TrialJob& job, const Json& event) {
    const auto t = event.find("time_s");
    const bool reached = event.value("reached", false) && t != event.end() && t->is_number();
    capping_.trained(job.round, job.config,
                     reached ? std::optional<double>(t->get<double>()) : std::nullopt);
  }

  void start(TrialJob&& job) {
    const std::string started = utc_now();
    if (gated()) job.worker.gate_fd = kGateFd;
    job.worker.target_cap_s = cap_for(job);
    take_gpu(job);
    SpawnedProcess p;
    try {
      p = spawn_worker(job.worker);
    } catch (const std::exception& e) {
      return_gpu(job);
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
    w->start_seq = started_count_++;
    w->exit.timeout_s = w->job.timeout_s;
    Worker* raw = w.get();
    account_overlap();
    running_.emplace(p.pid, std::move(w));
    if (cb_.on_start) cb_.on_start(raw->job);
    read_proto(raw);
    read_out(raw);
    read_err(raw);
    if (raw->turn == Turn::running) arm_timeout(raw);
    watch(raw);
    sample(raw);
  }

  // Ends the worker when what is left of its timeout_s runs out.
  void arm_timeout(Worker* w) {
    w->timer.expires_after(std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(std::max(0.0, w->budget_s))));
    w->timer.async_wait([w](const boost::system::error_code& ec) {
      if (ec || w->exited) return;
      w->exit.timed_out = true;
      ::kill(-w->pid, SIGKILL);
    });
  }

  static double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }

  int busy() const {
    int n = 0;
    for (const auto& [pid, w] : running_) n += !w->exited && w->turn == Turn::running;
    return n;
  }

  // A gated worker asked for its next turn: its turn is over, and its
  // clock (timeout, monitor's measured phase) stops while it waits.
  void end_turn(Worker* w) {
    if (w->turn == Turn::running) {
      account_overlap();
      const double took = seconds_since(w->turn_since);
      w->turn_s += took;
      w->budget_s -= took;
      w->timer.cancel();
      w->monitor.set_measuring(false);
    }
    w->turn = Turn::waiting;
    schedule();
  }

  void grant(Worker* w) {
    account_overlap();
    w->had_turn = true;
    w->turn = Turn::running;
    w->turn_since = Clock::now();
    w->job.collector->on_turn(cycle_);
    w->monitor.set_measuring(w->job.collector->phase() == "measure");
    arm_timeout(w);
    // A worker that died meanwhile is reaped as usual.
    open_gate(w->gate, cap_for(w->job));
  }

  // Lets the next trials of the cycle take their turns, up to jobs_ at once.
  // A cycle gives every live trial one turn, in an order shuffled for it; a
  // trial that is not yet at its gate holds the cycle up until it is, so
  // that the order is kept. With adaptive capping, turns go instead to the
  // waiting trial that has trained least (schedule_least_trained).
  void schedule() {
    if (!gated() || interrupted_) return;
    if (capping_.slack > 0) return schedule_least_trained();
    while (busy() < jobs_) {
      if (turn_order_.empty()) {
        // Trials yet to take their first turn (loading, setup, warmup) go
        // first, in the order they were started, which is the plan's: the
        // run's start order is then round_order's design whatever the
        // window, not one shuffle of a window that holds several repeats
        // (a position effect tied to where a trial starts would otherwise
        // be one draw for all of them). The others take turns in an order
        // shuffled for the cycle.
        std::vector<std::pair<int64_t, pid_t>> fresh;
        std::vector<pid_t> live;
        for (const auto& [pid, w] : running_) {
          if (w->exited) continue;
          if (w->had_turn) {
            live.push_back(pid);
          } else {
            fresh.emplace_back(w->start_seq, pid);
          }
        }
        if (live.empty() && fresh.empty()) return;
        random::shuffle(live, shuffle_rng_);
        std::sort(fresh.begin(), fresh.end());
        turn_order_.clear();
        for (const auto& f : fresh) turn_order_.push_back(f.second);
        turn_order_.insert(turn_order_.end(), live.begin(), live.end());
        ++cycle_;
      }
      auto it = running_.find(turn_order_.front());
      if (it == running_.end() || it->second->exited) {
        turn_order_.pop_front();
        continue;
      }
      Worker* w = it->second.get();
      if (w->turn != Turn::waiting) return;
      turn_order_.pop_front();
      grant(w);
    }
  }

  // Adaptive capping's turn order: the waiting trial with the least training
  // so far goes next, so that live trials advance on one training clock and
  // the first to reach its target does so while the others have trained
  // about as long: their cap is known before they spend it. (Taking turns
  // block by block instead, a config with 16 times longer blocks has
  // trained 16 times as long, often its whole budget, by then.) A cycle is
  // counted every time the live trials have had as many turns as they are.
  void schedule_least_trained() {
    while (busy() < jobs_) {
      Worker* next = nullptr;
      size_t live = 0;
      for (const auto& [pid, w] : running_) {
        if (w->exited) continue;
        ++live;
        if (w->turn != Turn::waiting) continue;
        // Ties (trials yet to train) in the order they were started.
        const double trained = w->job.collector->blocks_seconds();
        if (next == nullptr || trained < next->job.collector->blocks_seconds() ||
            (trained == next->job.collector->blocks_seconds() && w->start_seq < next->start_seq)) {
          next = w.get();
        }
      }
      if (next == nullptr) return;
      if (granted_ % std::max<size_t>(1, live) == 0) ++cycle_;
      ++granted_;
      grant(next);
    }
  }

  // A reading now (so that even a short trial has one), then every interval.
  void sample(Worker* w) {
    w->monitor.sample();
    w->monitor_timer.expires_after(std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(kMonitorIntervalS)));
    w->monitor_timer.async_wait([this, w](const boost::system::error_code& ec) {
      if (ec || w->exited) return;
      sample(w);
    });
  }

  // A live worker writes a heartbeat line twice a second whatever its plugin
  // does; silence means the process is stopped, frozen or wedged, and there
  // is no point in waiting out the whole timeout_s for it.
  void watch(Worker* w) {
    const auto period = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(std::min(0.25, w->job.silence_s / 4)));
    w->watchdog.expires_after(period);
    w->watchdog.async_wait([this, w](const boost::system::error_code& ec) {
      if (ec || w->exited) return;
      const double quiet = std::chrono::duration<double>(Clock::now() - w->last_heard).count();
      if (quiet > w->job.silence_s) {
        w->exit.silent_s = quiet;
        ::kill(-w->pid, SIGKILL);
        return;
      }
      watch(w);
    });
  }

  void pipe_closed(Worker* w) {
    --w->open_pipes;
    maybe_finish(w->pid);
  }

  void read_proto(Worker* w) {
    w->proto.async_read_some(
        asio::buffer(w->proto_buf), [this, w](const boost::system::error_code& ec, size_t n) {
          if (ec) return pipe_closed(w);
          w->last_heard = Clock::now();
          w->line.append(w->proto_buf.data(), n);
          size_t start = 0;
          for (size_t nl; (nl = w->line.find('\n', start)) != std::string::npos; start = nl + 1) {
            auto event = w->job.collector->on_line(w->line.substr(start, nl - start));
            if (!event) continue;
            const std::string kind = event::kind(*event);
            w->monitor.on_event(*event);
            if (kind == event::target) note_target(w->job, *event);
            if (cb_.on_event) cb_.on_event(w->job, *event);
            if (w->gate >= 0 && kind == event::await) end_turn(w);
          }
          w->line.erase(0, start);
          if (w->line.size() > kMaxLine) {
            w->line.clear();
            ::kill(-w->pid, SIGKILL);
          }
          read_proto(w);
        });
  }

  void read_out(Worker* w) {
    // A plugin's stdout is drained (so it never blocks) and dropped.
    w->out.async_read_some(asio::buffer(w->out_buf),
                           [this, w](const boost::system::error_code& ec, size_t) {
                             if (ec) return pipe_closed(w);
                             read_out(w);
                           });
  }

  void read_err(Worker* w) {
    w->err.async_read_some(asio::buffer(w->err_buf),
                           [this, w](const boost::system::error_code& ec, size_t n) {
                             if (ec) return pipe_closed(w);
                             w->stderr_bytes += static_cast<int64_t>(n);
                             w->stderr_tail.append(w->err_buf.data(), n);
                             if (w->stderr_tail.size() > 2 * kStderrTailBytes) {
                               w->stderr_tail.erase(0, w->stderr_tail.size() - kStderrTailBytes);
                             }
                             read_err(w);
                           });
  }

  // Charges the time since the last start or finish to every worker that
  // ran alongside another meanwhile. Called before running_ changes.
  // Only workers taking a turn count: interleaved trials waiting at their
  // gates run nothing. Called before any worker's turn or life changes.
  void account_overlap() {
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - last_change_).count();
    last_change_ = now;
    std::vector<Worker*> busy_now;
    for (auto& [pid, w] : running_) {
      if (!w->exited && w->turn == Turn::running) busy_now.push_back(w.get());
    }
    if (busy_now.size() < 2) return;
    for (Worker* w : busy_now) {
      w->overlap_s += dt;
      for (Worker* other : busy_now) {
        if (other != w) w->overlapped.insert(other->job.trial_id);
      }
    }
  }

  void maybe_finish(pid_t pid) {
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
    o.metrics.push_back(
        {"stat", 0, "overlap_fraction", ran_s > 0 ? std::min(1.0, w->overlap_s / ran_s) : 0});
    o.metrics.push_back({"stat", 0, "overlap_trials", static_cast<double>(w->overlapped.size())});
    if (w->gate >= 0) {
      o.interleave_group = group_;
      o.metrics.push_back({"stat", 0, "turn_s", w->turn_s});
    }
    w->monitor.fetch_driver_samples();  // the last window's tail, stamped after the last poll
    for (auto& m : w->monitor.metrics(w->have_usage ? &w->usage : nullptr, ran_s)) {
      o.metrics.push_back(std::move(m));
    }
    std::unique_ptr<Worker> owned = std::move(it->second);
    running_.erase(it);
    // A leader that ended without its target event (a crash): the others
    // of its round are capped as usual from now on.
    capping_.trained(owned->job.round, owned->job.config, std::nullopt);
    return_gpu(owned->job);
    cb_.on_finish(owned->job, std::move(o));
    // Destroy the worker after the handlers that reference it have run.
    asio::post(io_, [owned = std::shared_ptr<Worker>(std::move(owned))] {});
    fill();
  }

  std::string exe_;
  int jobs_;
  bool fork_server_;
  Interleave interleave_;
  GpuAssignment gpus_;
  Capping capping_;                    // its best_s grows as trials reach their targets
  std::deque<std::string> free_gpus_;  // not held by a running trial
  random::SplitMix64 shuffle_rng_;     // the cycles' turn orders
  std::deque<pid_t> turn_order_;       // the rest of this cycle's turns
  int64_t cycle_ = -1;
  size_t granted_ = 0;         // turns granted (schedule_least_trained's cycles)
  int64_t started_count_ = 0;  // workers started (Worker::start_seq)
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

}  // namespace

bool Runner::run(std::vector<TrialJob> jobs, const RunnerCallbacks& callbacks) {
  Supervisor s(exe_, jobs_ < 1 ? 1 : jobs_, fork_server_, interleave_, gpus_, capping_,
               std::move(jobs), callbacks);
  return s.run();
}

}  // namespace gpusweep::host
