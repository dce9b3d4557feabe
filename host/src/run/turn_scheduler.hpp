// Who runs next, with no I/O: which queued trial may start (the window, a
// round at a time, the GPUs free), which waiting worker takes the next turn
// (a cycle in a shuffled order, parallel starts' unmeasured turns, adaptive
// capping's least trained first), the cap a turn carries, and the GPUs a
// trial is handed. The Supervisor (supervisor.hpp) keeps the pipes, signals
// and clocks, tells it what happened and does what it decides; the unit
// tests and bench/gpu_precision/scheduler_sim drive it with scripted events.
#pragma once

#include "run/runner.hpp"
#include "spec/gpus.hpp"

#include <gpusweep/random.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

// A worker, as the Supervisor names it (its pid).
using WorkerId = int64_t;

// Where a worker stands in its turns. A worker without a gate runs from
// start to end.
enum class Turn {
  starting,  // gated, has not yet asked for its first turn
  waiting,   // gated, at its gate
  running,   // taking its turn (or not gated)
  exited,    // its process ended; it holds its slot until its trial is finished
};

// A queued trial, as far as starting it goes.
struct QueuedTrial {
  int64_t round = -1;   // TrialJob::round
  int64_t config = -1;  // TrialJob::config
  size_t gpus = 1;      // the GPUs it takes under run --gpus (one per rank)
};

// A decision to start the queue's next trial.
struct Start {
  double cap_s = 0;  // adaptive capping's cap it starts with (worker --target-cap); 0: none
  // Its CUDA_VISIBLE_DEVICES under run --gpus: one per rank, comma-separated.
  std::optional<std::string> visible_devices;
  // Those of them taken from the run's free GPUs, given back when it ends
  // (none when the interleaved trials share theirs).
  std::vector<std::string> pooled_gpus;
};

// A decision to open a worker's gate.
struct Grant {
  WorkerId worker = 0;
  int64_t cycle = -1;       // the cycle its turn belongs to (TrialCollector::on_turn)
  bool unmeasured = false;  // parallel starts: the turn measures nothing
  double cap_s = 0;         // adaptive capping's cap the turn carries (open_gate); 0: none
};

class TurnScheduler {
 public:
  TurnScheduler(int jobs, Interleave interleave, GpuAssignment gpus, Capping capping);

  // Whether workers take turns at gates (measure.interleave > 1).
  bool gated() const { return interleave_.window > 1; }
  // Parallel starts as run: never under adaptive capping (Interleave).
  bool parallel_starts() const { return interleave_.parallel_starts; }
  // The adaptive cap of a trial of config in round now (Capping); 0: none.
  double cap(int64_t round, int64_t config) const { return capping_.cap(round, config); }

  // Whether `next`, the queue's front, may start now; if so its GPUs are
  // taken and the decision returned. Then exactly one of started() and
  // start_failed() follows.
  std::optional<Start> next_start(const QueuedTrial& next);
  void started(WorkerId id, const QueuedTrial& trial, const Start& start);
  void start_failed(const Start& start);

  // The worker asked for its next turn (its await event): its turn, if it
  // was taking one, is over. unmeasured: the turn it asks for measures
  // nothing (parallel starts); trained_s: its blocks' seconds so far.
  // Returns the turns to open now.
  std::vector<Grant> ready(WorkerId id, bool unmeasured, double trained_s);
  // The worker's process ended: it takes no more turns (its trial is
  // finished later, when its pipes are drained).
  void exited(WorkerId id);
  // Its trial is finished: its slot and GPUs are free again, and a round's
  // leader that ended without its target caps the rest of its round.
  void finished(WorkerId id);
  // A trial reached its target, or trained to its end without (reached_s
  // empty): its round's best time and so its cap.
  void trained(int64_t round, int64_t config, std::optional<double> reached_s) {
    capping_.trained(round, config, reached_s);
  }
  // Ctrl-C: nothing more starts, and no more turns are granted.
  void stop() { stopped_ = true; }

  // The turns to open now (after trials started or finished).
  std::vector<Grant> schedule();

  // Whether the worker is taking a turn (or runs ungated), and whether that
  // turn measures something: it then shares the machine's timing with the
  // others doing so (overlap).
  bool taking_turn(WorkerId id) const;
  bool measuring(WorkerId id) const;

 private:
  // What the scheduler holds of a started worker.
  struct WorkerTurns {
    Turn turn = Turn::starting;
    int64_t start_order = 0;  // its place among the started workers (the plan's order)
    int64_t round = -1, config = -1;
    bool had_first_turn = false;   // gated: it has been granted a turn
    bool asks_unmeasured = false;  // parallel starts: the turn it waits for measures nothing
    bool in_unmeasured = false;    // parallel starts: the turn it takes measures nothing
    double trained_s = 0;          // its blocks' seconds when it last asked for a turn
    std::vector<std::string> pooled_gpus;  // given back when its trial is finished
  };

  bool live(const WorkerTurns& w) const { return w.turn != Turn::exited; }
  int busy() const;
  bool round_open(const QueuedTrial& next) const;
  bool gpus_free_for(const QueuedTrial& next) const;
  Start take_gpus(const QueuedTrial& next);
  void grant(WorkerId id, WorkerTurns& w, std::vector<Grant>& out);
  void schedule_cycles(std::vector<Grant>& out);
  void next_cycle();
  bool schedule_unmeasured(std::vector<Grant>& out);
  void schedule_least_trained(std::vector<Grant>& out);

  int jobs_;
  Interleave interleave_;
  GpuAssignment gpus_;
  Capping capping_;                          // its best_s grows as trials reach their targets
  std::deque<std::string> free_gpus_;        // not held by a running trial
  random::SplitMix64 shuffle_rng_;           // the cycles' turn orders
  std::map<WorkerId, WorkerTurns> workers_;  // started, trial not yet finished
  std::deque<WorkerId> turn_order_;          // the rest of this cycle's turns
  int64_t cycle_ = -1;
  size_t granted_ = 0;         // turns granted (schedule_least_trained's cycles)
  int64_t started_count_ = 0;  // workers started (WorkerTurns::start_order)
  bool stopped_ = false;
};

}  // namespace gpusweep::host
