// Interleaved execution on the runner's side: what the TurnScheduler decides
// (which gated worker takes the next turn, with which cap) done on the
// workers' gates, and the clocks of their turns (timeout, overlap, the
// monitor's measured phase).
#include "run/supervisor.hpp"

#include "protocol/event_payloads.hpp"
#include "support/spawn.hpp"

#include <optional>
#include <vector>

namespace gpusweep::host::detail {

// A gated worker asked for its next turn: its turn is over, and its
// clock (timeout, monitor's measured phase) stops while it waits.
void Supervisor::end_turn(Worker* w, bool unmeasured) {
  account_overlap();
  if (scheduler_.taking_turn(w->pid)) {
    const double took = seconds_since(w->turn_since);
    w->turn_s += took;
    w->budget_s -= took;
    w->timer.cancel();
    w->monitor.set_measuring(false);
  }
  open(scheduler_.ready(w->pid, unmeasured, w->job.collector->blocks_seconds()));
}

// The turns the scheduler opens now (after trials started or finished).
void Supervisor::schedule() {
  account_overlap();
  open(scheduler_.schedule());
}

void Supervisor::open(const std::vector<Grant>& grants) {
  for (const Grant& g : grants) {
    const auto it = running_.find(static_cast<pid_t>(g.worker));
    if (it != running_.end()) grant(it->second.get(), g);
  }
}

void Supervisor::grant(Worker* w, const Grant& g) {
  w->turn_since = Clock::now();
  w->job.collector->on_turn(g.cycle);
  w->monitor.set_measuring(!g.unmeasured && w->job.collector->phase() == Phase::measure);
  arm_timeout(w);
  // A worker that died meanwhile is reaped as usual.
  open_gate(w->gate, g.cap_s);
}

// A trial reached its target: its round's best time, and so its cap.
void Supervisor::note_target(const TrialJob& job, const event::Target& t) {
  scheduler_.trained(job.round, job.config, t.reached ? t.time_s : std::nullopt);
}

}  // namespace gpusweep::host::detail
