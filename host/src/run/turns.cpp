// Interleaved execution on the runner's side (Interleave): which gated
// worker takes the next turn (a cycle in an order shuffled afresh, or under
// adaptive capping the least trained first), and the caps (Capping) that
// turns carry as trials reach their targets.
#include "run/supervisor.hpp"

#include "protocol/event_payloads.hpp"
#include "support/spawn.hpp"

#include <gpusweep/random.hpp>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace gpusweep::host::detail {

// Workers taking a measured turn (or running straight through).
int Supervisor::busy() const {
  int n = 0;
  for (const auto& [pid, w] : running_) {
    n += !w->exited && w->turn == Turn::running && !w->in_unmeasured;
  }
  return n;
}

// A gated worker asked for its next turn: its turn is over, and its
// clock (timeout, monitor's measured phase) stops while it waits.
void Supervisor::end_turn(Worker* w) {
  if (w->turn == Turn::running) {
    account_overlap();
    const double took = seconds_since(w->turn_since);
    w->turn_s += took;
    w->budget_s -= took;
    w->timer.cancel();
    w->monitor.set_measuring(false);
  }
  w->turn = Turn::waiting;
  w->in_unmeasured = false;
  schedule();
}

void Supervisor::grant(Worker* w) {
  account_overlap();
  w->had_turn = true;
  w->turn = Turn::running;
  w->in_unmeasured = interleave_.parallel_starts && w->wants_unmeasured;
  w->turn_since = Clock::now();
  w->job.collector->on_turn(cycle_);
  w->monitor.set_measuring(!w->in_unmeasured && w->job.collector->phase() == "measure");
  arm_timeout(w);
  // A worker that died meanwhile is reaped as usual.
  open_gate(w->gate, cap_for(w->job));
}

// Lets the next trials of the cycle take their turns, up to jobs_ at once.
// A cycle gives every live trial one turn, in an order shuffled for it; a
// trial that is not yet at its gate holds the cycle up until it is, so
// that the order is kept. With adaptive capping, turns go instead to the
// waiting trial that has trained least (schedule_least_trained).
void Supervisor::schedule() {
  if (!gated() || interrupted_) return;
  if (capping_.slack > 0) return schedule_least_trained();
  if (interleave_.parallel_starts && !schedule_unmeasured()) return;
  while (busy() < jobs_) {
    if (turn_order_.empty()) {
      // Parallel starts: a cycle ends when its last turn has, so that the
      // turns waiting to measure nothing go between two cycles.
      if (interleave_.parallel_starts && busy() > 0) return;
      // Trials yet to take their first turn (loading, setup, warmup) go
      // first, in the order they were started, which is the plan's: the
      // run's start order is then round_order's design whatever the
      // window, not one shuffle of a window that holds several repeats
      // (a position effect tied to where a trial starts would otherwise
      // be one draw for all of them). The others take turns in an order
      // shuffled for the cycle. (With parallel starts every trial's first
      // turn is its setup, which all take at once: no start order to keep.)
      std::vector<std::pair<int64_t, pid_t>> fresh;
      std::vector<pid_t> live;
      for (const auto& [pid, w] : running_) {
        // Parallel starts: a trial yet to reach its gate, or waiting to
        // set up or finish, takes no part in the cycle.
        if (w->exited ||
            (interleave_.parallel_starts && (w->wants_unmeasured || w->turn == Turn::starting))) {
          continue;
        }
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

// Parallel starts (Interleave::parallel_starts): between two cycles, every
// trial waiting for a turn that measures nothing (its setup and warmup, its
// final evaluation) takes it at once, the others' blocks held until all of
// them are over; a trial just started, not yet at its gate, is waited for,
// so that it sets up with the rest. Mid-cycle such a trial waits for the
// cycle's end. Returns whether measured turns may be granted now.
bool Supervisor::schedule_unmeasured() {
  bool unmeasured_running = false, starting = false, mid_cycle = busy() > 0;
  std::vector<Worker*> ready;
  for (const auto& [pid, w] : running_) {
    if (w->exited) continue;
    unmeasured_running = unmeasured_running || (w->turn == Turn::running && w->in_unmeasured);
    starting = starting || w->turn == Turn::starting;
    if (w->turn == Turn::waiting && w->wants_unmeasured) ready.push_back(w.get());
  }
  for (pid_t pid : turn_order_) {
    const auto it = running_.find(pid);
    mid_cycle = mid_cycle || (it != running_.end() && !it->second->exited);
  }
  if (unmeasured_running) return false;
  if (mid_cycle) return true;
  if (starting) return false;
  if (ready.empty()) return true;
  for (Worker* w : ready) grant(w);
  return false;
}

// Adaptive capping's turn order: the waiting trial with the least training
// so far goes next, so that live trials advance on one training clock and
// the first to reach its target does so while the others have trained
// about as long: their cap is known before they spend it. (Taking turns
// block by block instead, a config with 16 times longer blocks has
// trained 16 times as long, often its whole budget, by then.) A cycle is
// counted every time the live trials have had as many turns as they are.
void Supervisor::schedule_least_trained() {
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

// A trial reached its target: its round's best time, and so its cap.
void Supervisor::note_target(const TrialJob& job, const Json& e) {
  const auto t = event::Target::from_json(e);
  capping_.trained(job.round, job.config, t.reached ? t.time_s : std::nullopt);
}

}  // namespace gpusweep::host::detail
