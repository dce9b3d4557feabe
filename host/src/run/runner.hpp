// Runs trials in worker processes, at most `jobs` at a time, on one Boost.Asio
// event loop: reads each worker's protocol, stdout and stderr pipes, enforces
// timeouts, reaps exits (SIGCHLD) and turns Ctrl-C into `interrupted`.
#pragma once

#include "protocol/worker_args.hpp"
#include "run/collector.hpp"
#include "spec/gpus.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpusweep::host {

struct TrialJob {
  int64_t trial_id = 0;
  std::string label;  // for progress lines
  WorkerArgs worker;  // how the worker process is started
  double timeout_s = 600;
  double silence_s = 30;  // ended as `timeout` when no protocol line came for this long
  int64_t round = -1;     // its round (the repeat), for adaptive capping; -1: none
  int64_t config = -1;    // its config's index, for capping's leader rule
  std::unique_ptr<TrialCollector> collector;
  // The plugin build that runs it (PluginInfo::hash), recorded with its
  // outcome; and a check's build label ("base", "head"; "" otherwise),
  // which its worker's config does not carry.
  std::string plugin_hash;
  std::string build;
};

struct RunnerCallbacks {
  std::function<void(const TrialJob&)> on_start;
  std::function<void(const TrialJob&, const event::Event& event)> on_event;
  std::function<void(const TrialJob&, db::TrialOutcome&& outcome)> on_finish;
  std::function<void(const std::string& notice)> on_notice;  // e.g. a fork server that cannot serve
};

// Bytes of a worker's stderr kept for the database (the tail).
constexpr size_t kStderrTailBytes = 16 * 1024;

// Interleaved execution: `window` trials are kept alive at once (in queue
// order), and they take turns: each waits at its gate (worker --gate-fd)
// before setup and before each measured block, and the runner lets `jobs`
// of them go at a time, cycling through the live trials in an order
// shuffled afresh for every cycle from `seed`. A block is stamped with its
// cycle (TrialCollector::on_turn) and every trial of this run with one
// interleave group, so that blocks that ran back to back can be paired.
// timeout_s counts a trial's own turns, not its waits. window <= 1: no
// gates, each trial runs straight through.
struct Interleave {
  int window = 1;
  uint64_t seed = 0;
  // A round's trials at a time: a trial of a later round (TrialJob::round)
  // waits until no trial of an earlier one runs. Under measure.target a
  // round is a seed, whose configs are paired: trained at one time, drift of
  // the machine hits them alike. Without it the window slides as capped
  // trials end, and a seed's configs ran minutes apart.
  bool by_round = false;
  // Parallel starts (measure.starts): a trial's turns that measure nothing,
  // its setup and warmup and its final evaluation (the worker's awaits
  // marked unmeasured, worker --parallel-starts), are granted all at once
  // between cycles, and no measured turn runs until they are over. Not
  // under adaptive capping, whose turns follow training time.
  bool parallel_starts = false;
};

// Adaptive capping of measure.target trials (SMAC's rule): once a trial of
// a round has reached its target in T training seconds, every other trial
// of that round stops, censored, when it has trained slack x T: a trial
// starting later is given the cap when it starts (worker --target-cap), a
// gated one with its next turn (open_gate); one running straight through
// keeps the cap it started with. best_s: the rounds' best times from trials
// finished before this runner (a resumed run). slack <= 0: no capping.
struct Capping {
  double slack = 0;
  std::map<int64_t, double> best_s;
  // Rounds from this one on are never capped (a tune's confirmation
  // rounds: they measure how much faster the winner is, which a capped
  // baseline would only bound).
  int64_t uncapped_from = INT64_MAX;
  // A race's leader in a round (round -> its config): it is never capped,
  // and the others of its round are not capped before its own time is
  // known, nor below it when it reached the target. So a capped trial is
  // known to be slower than the leader whenever the leader reached: the
  // rounds a race on time to target can use.
  std::map<int64_t, int64_t> leader;
  std::map<int64_t, double> leader_s;  // the leader's time, where it reached
  std::set<int64_t> leader_done;       // rounds whose leader has finished training

  // The cap of a trial of `config` in `round`, in training seconds (0: none yet).
  double cap(int64_t round, int64_t config) const {
    if (slack <= 0 || round < 0 || round >= uncapped_from) return 0;
    const auto l = leader.find(round);
    if (l != leader.end() && (l->second == config || leader_done.count(round) == 0U)) return 0;
    const auto it = best_s.find(round);
    double c = it == best_s.end() ? 0 : slack * it->second;
    if (c > 0 && l != leader.end()) {
      if (const auto t = leader_s.find(round); t != leader_s.end()) c = std::max(c, t->second);
    }
    return c;
  }
  // A trial of config in round finished training (reached_s: its time, when
  // it reached the target): its time may be the round's best (note), and if
  // it leads its round, the others' caps follow.
  void trained(int64_t round, int64_t config, std::optional<double> reached_s) {
    if (reached_s) note(round, *reached_s);
    const auto l = leader.find(round);
    if (l == leader.end() || l->second != config) return;
    leader_done.insert(round);
    if (reached_s) leader_s[round] = *reached_s;
  }

  // A trial of round reached its target in time_s: the round's best, if
  // it is (a time of 0 or less caps nothing, and is not kept).
  void note(int64_t round, double time_s) {
    if (round < 0 || round >= uncapped_from || !(time_s > 0)) return;
    auto [it, fresh] = best_s.emplace(round, time_s);
    if (!fresh) it->second = std::min(it->second, time_s);
  }
};

class Runner {
 public:
  // With fork_server, each plugin's trials are forked from one pre-loaded
  // server process (fork_server.hpp) instead of started afresh; a plugin the
  // server cannot serve falls back to fresh processes, saying why once.
  // With gpus, each running trial gets one of them (worker
  // visible_devices) and gives it back when it ends (spec/gpus.hpp).
  Runner(std::string worker_exe, int jobs, bool fork_server = false, Interleave interleave = {},
         GpuAssignment gpus = {}, Capping capping = {})
      : exe_(std::move(worker_exe)),
        jobs_(jobs),
        fork_server_(fork_server),
        interleave_(interleave),
        gpus_(std::move(gpus)),
        capping_(std::move(capping)) {}

  // Runs every job; returns false when Ctrl-C (SIGINT/SIGTERM) stopped the run.
  // Jobs not started by then are left untouched.
  bool run(std::vector<TrialJob> jobs, const RunnerCallbacks& callbacks);

 private:
  std::string exe_;
  int jobs_;
  bool fork_server_;
  Interleave interleave_;
  GpuAssignment gpus_;
  Capping capping_;
};

}  // namespace gpusweep::host
