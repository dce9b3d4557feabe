// Who runs next; see turn_scheduler.hpp.
#include "run/turn_scheduler.hpp"

#include <algorithm>
#include <utility>

namespace gpusweep::host {

TurnScheduler::TurnScheduler(int jobs, Interleave interleave, GpuAssignment gpus, Capping capping)
    : jobs_(jobs),
      interleave_(interleave),
      gpus_(std::move(gpus)),
      capping_(std::move(capping)),
      free_gpus_(gpus_.gpus.begin(), gpus_.gpus.end()),
      shuffle_rng_(interleave.seed) {
  // Adaptive capping's turns follow training time, not cycles: no turn
  // waits for a cycle's end there, so no start can (Interleave).
  if (capping_.slack > 0) interleave_.parallel_starts = false;
}

// Interleaved: a window of live trials, of which jobs_ take turns at once.
std::optional<Start> TurnScheduler::next_start(const QueuedTrial& next) {
  const int alive = gated() ? std::max(interleave_.window, jobs_) : jobs_;
  if (stopped_ || static_cast<int>(workers_.size()) >= alive || !round_open(next) ||
      !gpus_free_for(next)) {
    return std::nullopt;
  }
  Start s = take_gpus(next);
  s.cap_s = cap(next.round, next.config);
  return s;
}

void TurnScheduler::started(WorkerId id, const QueuedTrial& trial, const Start& start) {
  WorkerTurns& w = workers_[id];
  w.turn = gated() ? Turn::starting : Turn::running;
  w.start_order = started_count_++;
  w.round = trial.round;
  w.config = trial.config;
  w.pooled_gpus = start.pooled_gpus;
}

void TurnScheduler::start_failed(const Start& start) {
  free_gpus_.insert(free_gpus_.end(), start.pooled_gpus.begin(), start.pooled_gpus.end());
}

// Interleave::by_round: whether `next` may start now, no trial of an
// earlier round running.
bool TurnScheduler::round_open(const QueuedTrial& next) const {
  if (!interleave_.by_round || next.round < 0) return true;
  for (const auto& [id, w] : workers_) {
    if (w.round >= 0 && w.round < next.round) return false;
  }
  return true;
}

// Whether the next trial's GPUs are free (always, without --gpus or when
// the interleaved trials share theirs).
bool TurnScheduler::gpus_free_for(const QueuedTrial& next) const {
  return gpus_.gpus.empty() || gpus_.shared || next.gpus <= free_gpus_.size() || workers_.empty();
}

// The trial's GPUs (run --gpus): free ones of the run's, or the ones the
// interleaved trials share, one per rank, as one CUDA_VISIBLE_DEVICES list.
Start TurnScheduler::take_gpus(const QueuedTrial& next) {
  Start s;
  if (gpus_.gpus.empty()) return s;
  const bool pooled = !gpus_.shared && free_gpus_.size() >= next.gpus;
  std::string list;
  for (size_t i = 0; i < next.gpus && i < gpus_.gpus.size(); ++i) {
    std::string gpu = gpus_.gpus[i];
    if (pooled) {
      gpu = free_gpus_.front();
      free_gpus_.pop_front();
      s.pooled_gpus.push_back(gpu);
    }
    list += (i > 0 ? "," : "") + gpu;
  }
  s.visible_devices = list;
  return s;
}

std::vector<Grant> TurnScheduler::ready(WorkerId id, bool unmeasured, double trained_s) {
  const auto it = workers_.find(id);
  if (it == workers_.end() || !live(it->second)) return {};
  WorkerTurns& w = it->second;
  w.asks_unmeasured = unmeasured;
  w.trained_s = trained_s;
  w.turn = Turn::waiting;
  w.in_unmeasured = false;
  return schedule();
}

void TurnScheduler::exited(WorkerId id) {
  const auto it = workers_.find(id);
  if (it != workers_.end()) it->second.turn = Turn::exited;
}

void TurnScheduler::finished(WorkerId id) {
  const auto it = workers_.find(id);
  if (it == workers_.end()) return;
  const WorkerTurns w = std::move(it->second);
  workers_.erase(it);
  // A leader that ended without its target event (a crash): the others
  // of its round are capped as usual from now on.
  capping_.trained(w.round, w.config, std::nullopt);
  free_gpus_.insert(free_gpus_.end(), w.pooled_gpus.begin(), w.pooled_gpus.end());
}

bool TurnScheduler::taking_turn(WorkerId id) const {
  const auto it = workers_.find(id);
  return it != workers_.end() && it->second.turn == Turn::running;
}

bool TurnScheduler::measuring(WorkerId id) const {
  const auto it = workers_.find(id);
  return it != workers_.end() && it->second.turn == Turn::running && !it->second.in_unmeasured;
}

// Workers taking a measured turn (or running straight through).
int TurnScheduler::busy() const {
  int n = 0;
  for (const auto& [id, w] : workers_) n += w.turn == Turn::running && !w.in_unmeasured;
  return n;
}

void TurnScheduler::grant(WorkerId id, WorkerTurns& w, std::vector<Grant>& out) {
  w.had_first_turn = true;
  w.turn = Turn::running;
  w.in_unmeasured = interleave_.parallel_starts && w.asks_unmeasured;
  out.push_back({id, cycle_, w.in_unmeasured, cap(w.round, w.config)});
}

// Lets the next trials of the cycle take their turns, up to jobs_ at once.
// A cycle gives every live trial one turn, in an order shuffled for it; a
// trial that is not yet at its gate holds the cycle up until it is, so
// that the order is kept. With adaptive capping, turns go instead to the
// waiting trial that has trained least (schedule_least_trained).
std::vector<Grant> TurnScheduler::schedule() {
  std::vector<Grant> out;
  if (!gated() || stopped_) return out;
  if (capping_.slack > 0) {
    schedule_least_trained(out);
  } else if (!interleave_.parallel_starts || schedule_unmeasured(out)) {
    schedule_cycles(out);
  }
  return out;
}

void TurnScheduler::schedule_cycles(std::vector<Grant>& out) {
  while (busy() < jobs_) {
    if (turn_order_.empty()) {
      // Parallel starts: a cycle ends when its last turn has, so that the
      // turns waiting to measure nothing go between two cycles.
      if (interleave_.parallel_starts && busy() > 0) return;
      next_cycle();
      if (turn_order_.empty()) return;
    }
    const auto it = workers_.find(turn_order_.front());
    if (it == workers_.end() || !live(it->second)) {
      turn_order_.pop_front();
      continue;
    }
    if (it->second.turn != Turn::waiting) return;
    turn_order_.pop_front();
    grant(it->first, it->second, out);
  }
}

// A new cycle's order. Trials yet to take their first turn (loading,
// setup, warmup) go first, in the order they were started, which is the
// plan's: the run's start order is then round_order's design whatever the
// window, not one shuffle of a window that holds several repeats (a
// position effect tied to where a trial starts would otherwise be one draw
// for all of them). The others take turns in an order shuffled for the
// cycle. (With parallel starts every trial's first turn is its setup,
// which all take at once: no start order to keep.) No live trial: no cycle.
void TurnScheduler::next_cycle() {
  std::vector<std::pair<int64_t, WorkerId>> fresh;
  std::vector<WorkerId> shuffled;
  for (const auto& [id, w] : workers_) {
    // Parallel starts: a trial yet to reach its gate, or waiting to set up
    // or finish, takes no part in the cycle.
    if (!live(w) ||
        (interleave_.parallel_starts && (w.asks_unmeasured || w.turn == Turn::starting))) {
      continue;
    }
    if (w.had_first_turn) {
      shuffled.push_back(id);
    } else {
      fresh.emplace_back(w.start_order, id);
    }
  }
  if (shuffled.empty() && fresh.empty()) return;
  random::shuffle(shuffled, shuffle_rng_);
  std::sort(fresh.begin(), fresh.end());
  turn_order_.clear();
  for (const auto& f : fresh) turn_order_.push_back(f.second);
  turn_order_.insert(turn_order_.end(), shuffled.begin(), shuffled.end());
  ++cycle_;
}

// Parallel starts (Interleave::parallel_starts): between two cycles, every
// trial waiting for a turn that measures nothing (its setup and warmup, its
// final evaluation) takes it at once, the others' blocks held until all of
// them are over; a trial just started, not yet at its gate, is waited for,
// so that it sets up with the rest, and so is the one that will take an
// exited trial's place. Mid-cycle such a trial waits for the
// cycle's end. Returns whether measured turns may be granted now.
bool TurnScheduler::schedule_unmeasured(std::vector<Grant>& out) {
  bool unmeasured_running = false, starting = false, leaving = false, mid_cycle = busy() > 0;
  std::vector<WorkerId> ready;
  for (const auto& [id, w] : workers_) {
    // An exited trial not yet finished holds a place the next trial will
    // take: its setup goes with the others' (finished schedules again).
    leaving = leaving || !live(w);
    if (!live(w)) continue;
    unmeasured_running = unmeasured_running || (w.turn == Turn::running && w.in_unmeasured);
    starting = starting || w.turn == Turn::starting;
    if (w.turn == Turn::waiting && w.asks_unmeasured) ready.push_back(id);
  }
  for (WorkerId id : turn_order_) {
    const auto it = workers_.find(id);
    mid_cycle = mid_cycle || (it != workers_.end() && live(it->second));
  }
  if (unmeasured_running) return false;
  if (mid_cycle) return true;
  if (starting || (leaving && !ready.empty())) return false;
  if (ready.empty()) return true;
  for (WorkerId id : ready) grant(id, workers_.at(id), out);
  return false;
}

// Adaptive capping's turn order: the waiting trial with the least training
// so far goes next, so that live trials advance on one training clock and
// the first to reach its target does so while the others have trained
// about as long: their cap is known before they spend it. (Taking turns
// block by block instead, a config with 16 times longer blocks has
// trained 16 times as long, often its whole budget, by then.) A cycle is
// counted every time the live trials have had as many turns as they are.
void TurnScheduler::schedule_least_trained(std::vector<Grant>& out) {
  while (busy() < jobs_) {
    WorkerTurns* next = nullptr;
    WorkerId next_id = 0;
    size_t alive = 0;
    for (auto& [id, w] : workers_) {
      if (!live(w)) continue;
      ++alive;
      if (w.turn != Turn::waiting) continue;
      // Ties (trials yet to train) in the order they were started.
      if (next == nullptr || w.trained_s < next->trained_s ||
          (w.trained_s == next->trained_s && w.start_order < next->start_order)) {
        next = &w;
        next_id = id;
      }
    }
    if (next == nullptr) return;
    if (granted_ % std::max<size_t>(1, alive) == 0) ++cycle_;
    ++granted_;
    grant(next_id, *next, out);
  }
}

}  // namespace gpusweep::host
