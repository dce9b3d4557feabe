// The turn scheduler's rules on scripted events, without processes: the
// window of live trials and a round at a time, cycles (fresh trials in the
// order started, then a shuffled order per cycle, jobs turns at once),
// parallel starts' unmeasured turns between cycles, adaptive capping's
// least trained first and the caps turns carry, and the GPUs handed out.
#include "run/turn_scheduler.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <vector>

using namespace gpusweep::host;

namespace {

Interleave interleave(int window, bool parallel_starts = false) {
  Interleave i;
  i.window = window;
  i.seed = 7;
  i.parallel_starts = parallel_starts;
  return i;
}

// Starts the queue's trials while the scheduler lets them, as ids 1, 2, ...
// after `first`; returns the ids started.
std::vector<WorkerId> fill(TurnScheduler& s, std::vector<QueuedTrial>& queue, WorkerId first = 1) {
  std::vector<WorkerId> ids;
  while (!queue.empty()) {
    const auto start = s.next_start(queue.front());
    if (!start) break;
    ids.push_back(first + static_cast<WorkerId>(ids.size()));
    s.started(ids.back(), queue.front(), *start);
    queue.erase(queue.begin());
  }
  return ids;
}

std::vector<WorkerId> granted(const std::vector<Grant>& grants) {
  std::vector<WorkerId> ids;
  for (const Grant& g : grants) ids.push_back(g.worker);
  return ids;
}

using Ids = std::vector<WorkerId>;

}  // namespace

TEST_CASE("turn scheduler: a window of trials lives at once, and ungated jobs of them", "[turns]") {
  TurnScheduler gated(1, interleave(3), {}, {});
  std::vector<QueuedTrial> queue(5);
  CHECK(fill(gated, queue) == Ids{1, 2, 3});
  // An exited worker holds its slot until its trial is finished.
  gated.exited(2);
  CHECK(fill(gated, queue, 4).empty());
  gated.finished(2);
  CHECK(fill(gated, queue, 4) == Ids{4});

  TurnScheduler ungated(2, interleave(1), {}, {});
  std::vector<QueuedTrial> more(3);
  CHECK(fill(ungated, more) == Ids{1, 2});
  CHECK(ungated.taking_turn(1));  // no gate: it runs from start to end
  CHECK(ungated.schedule().empty());
}

TEST_CASE("turn scheduler: a later round starts when no trial of an earlier one is left",
          "[turns]") {
  Interleave i = interleave(4);
  i.by_round = true;
  TurnScheduler s(1, i, {}, {});
  std::vector<QueuedTrial> queue = {{0, 0, 1}, {0, 1, 1}, {1, 0, 1}, {1, 1, 1}};
  CHECK(fill(s, queue) == Ids{1, 2});
  s.finished(1);
  CHECK(fill(s, queue, 3).empty());
  s.finished(2);
  CHECK(fill(s, queue, 3) == Ids{3, 4});
}

TEST_CASE("turn scheduler: the first cycle in the order started, then a shuffled one each",
          "[turns]") {
  TurnScheduler s(1, interleave(4), {}, {});
  std::vector<QueuedTrial> queue(4);
  REQUIRE(fill(s, queue) == Ids{1, 2, 3, 4});
  // Trials at their gates in another order: worker 1, not yet there, holds
  // the cycle up, so that the start order is kept.
  CHECK(s.ready(4, false, 0).empty());
  CHECK(s.ready(3, false, 0).empty());
  CHECK(s.ready(2, false, 0).empty());
  std::vector<Grant> g = s.ready(1, false, 0);
  Ids order = granted(g);
  CHECK(g.front().cycle == 0);
  CHECK_FALSE(g.front().unmeasured);
  // Each turn over at once: one turn at a time (jobs 1), one per live
  // trial a cycle.
  std::vector<Ids> cycles;
  for (int turn = 0; turn < 40; ++turn) {
    REQUIRE(g.size() == 1);
    const Grant done = g.front();
    if (static_cast<size_t>(done.cycle) == cycles.size()) cycles.emplace_back();
    cycles.back().push_back(done.worker);
    CHECK(s.measuring(done.worker));
    g = s.ready(done.worker, false, 0);
  }
  CHECK(cycles.front() == Ids{1, 2, 3, 4});
  bool shuffled = false;
  for (Ids c : cycles) {
    shuffled = shuffled || c != Ids{1, 2, 3, 4};
    std::sort(c.begin(), c.end());
    CHECK(c == Ids{1, 2, 3, 4});
  }
  CHECK(cycles.size() == 10);
  CHECK(shuffled);
}

TEST_CASE("turn scheduler: jobs turns at once, an exited trial's turn skipped", "[turns]") {
  TurnScheduler s(2, interleave(4), {}, {});
  std::vector<QueuedTrial> queue(4);
  REQUIRE(fill(s, queue) == Ids{1, 2, 3, 4});
  CHECK(granted(s.ready(1, false, 0)) == Ids{1});
  CHECK(granted(s.ready(2, false, 0)) == Ids{2});
  CHECK(s.ready(3, false, 0).empty());  // two turns already run
  CHECK(s.ready(4, false, 0).empty());
  s.exited(3);
  CHECK(granted(s.ready(1, false, 0)) == Ids{4});  // 4 waits behind 3, which is gone
  CHECK_FALSE(s.taking_turn(3));
}

TEST_CASE("turn scheduler: parallel starts run setups and evaluations at once, beside no block",
          "[turns]") {
  TurnScheduler s(1, interleave(3, true), {}, {});
  REQUIRE(s.parallel_starts());
  std::vector<QueuedTrial> queue(3);
  REQUIRE(fill(s, queue) == Ids{1, 2, 3});
  // Setups wait for the trial not yet at its gate, then go all at once.
  CHECK(s.ready(1, true, 0).empty());
  CHECK(s.ready(2, true, 0).empty());
  std::vector<Grant> setups = s.ready(3, true, 0);
  CHECK(granted(setups) == Ids{1, 2, 3});
  for (const Grant& g : setups) {
    CHECK(g.unmeasured);
    CHECK(s.taking_turn(g.worker));
    CHECK_FALSE(s.measuring(g.worker));  // shares no timing
  }
  // No block while a setup runs.
  CHECK(s.ready(1, false, 0).empty());
  CHECK(s.ready(2, false, 0).empty());
  std::vector<Grant> g = s.ready(3, false, 0);
  REQUIRE(g.size() == 1);
  CHECK_FALSE(g.front().unmeasured);
  CHECK(s.measuring(g.front().worker));
  // One block each, then the evaluation: asked mid-cycle, it waits for the
  // cycle's last block, then all go at once.
  Ids blocks;
  for (int turn = 0; turn < 3; ++turn) {
    REQUIRE(g.size() == 1);
    blocks.push_back(g.front().worker);
    g = s.ready(g.front().worker, true, 0);
  }
  std::sort(blocks.begin(), blocks.end());
  CHECK(blocks == Ids{1, 2, 3});
  CHECK(granted(g) == Ids{1, 2, 3});
  for (const Grant& e : g) CHECK(e.unmeasured);
}

TEST_CASE("turn scheduler: a window's next setups wait for the leaving trials' places", "[turns]") {
  // Two at a time, four trials: the second pair sets up together even when
  // the first trial started in a freed place reaches its gate while the
  // other leaving trial has exited but is not yet finished (its pipes still
  // open), and so not yet replaced.
  TurnScheduler s(1, interleave(2, true), {}, {});
  std::vector<QueuedTrial> queue(4);
  REQUIRE(fill(s, queue) == Ids{1, 2});
  CHECK(s.ready(1, true, 0).empty());
  CHECK(granted(s.ready(2, true, 0)) == Ids{1, 2});
  CHECK(s.ready(1, true, 0).empty());
  CHECK(granted(s.ready(2, true, 0)) == Ids{1, 2});  // both evaluate at once
  s.exited(1);
  s.finished(1);
  REQUIRE(fill(s, queue, 3) == Ids{3});
  s.exited(2);
  CHECK(s.ready(3, true, 0).empty());
  CHECK(s.schedule().empty());
  s.finished(2);
  REQUIRE(fill(s, queue, 4) == Ids{4});
  CHECK(s.schedule().empty());
  CHECK(granted(s.ready(4, true, 0)) == Ids{3, 4});
}

TEST_CASE("turn scheduler: serial starts take an unmeasured turn as a measured one", "[turns]") {
  TurnScheduler s(1, interleave(2), {}, {});
  REQUIRE_FALSE(s.parallel_starts());
  std::vector<QueuedTrial> queue(2);
  fill(s, queue);
  const std::vector<Grant> g = s.ready(1, true, 0);
  REQUIRE(granted(g) == Ids{1});
  CHECK_FALSE(g.front().unmeasured);
  CHECK(s.measuring(1));
  CHECK(s.ready(2, true, 0).empty());  // one at a time: it waits its turn
}

TEST_CASE("turn scheduler: under capping the least trained goes next, with its round's cap",
          "[turns]") {
  Capping capping;
  capping.slack = 1.5;
  TurnScheduler s(1, interleave(3, true), {}, capping);
  CHECK_FALSE(s.parallel_starts());  // turns follow training time, not cycles
  std::vector<QueuedTrial> queue = {{0, 0, 1}, {0, 1, 1}, {0, 2, 1}, {0, 3, 1}};
  REQUIRE(fill(s, queue) == Ids{1, 2, 3});
  CHECK(granted(s.ready(1, false, 0)) == Ids{1});  // no cycle to wait for
  CHECK(s.ready(3, false, 0).empty());
  CHECK(s.ready(2, false, 0).empty());
  // Ties in the order started, then the least trained.
  CHECK(granted(s.ready(1, false, 2.0)) == Ids{2});
  CHECK(granted(s.ready(2, false, 0.5)) == Ids{3});
  CHECK(granted(s.ready(3, false, 1.0)) == Ids{2});
  // Config 0 reached its target in 4 s: the others' next turns carry the cap.
  s.trained(0, 0, 4.0);
  const std::vector<Grant> g = s.ready(2, false, 1.5);
  REQUIRE(granted(g) == Ids{3});
  CHECK(g.front().cap_s == Approx(6.0));
  s.finished(1);
  std::vector<QueuedTrial> next = {{0, 3, 1}};
  const auto start = s.next_start(next.front());
  REQUIRE(start);
  CHECK(start->cap_s == Approx(6.0));  // a trial starting later starts capped
}

TEST_CASE("turn scheduler: a round's leader ended without its target caps the rest", "[turns]") {
  Capping capping;
  capping.slack = 1.5;
  capping.leader[0] = 0;
  TurnScheduler s(1, interleave(3), {}, capping);
  std::vector<QueuedTrial> queue = {{0, 0, 1}, {0, 1, 1}};
  REQUIRE(fill(s, queue) == Ids{1, 2});
  s.trained(0, 1, 2.0);
  CHECK(s.cap(0, 1) == 0);  // the leader still trains
  s.exited(1);
  s.finished(1);  // it crashed: no target event
  CHECK(s.cap(0, 1) == Approx(3.0));
}

TEST_CASE("turn scheduler: GPUs handed out from the run's pool and given back", "[turns]") {
  GpuAssignment gpus;
  gpus.gpus = {"a", "b", "c"};
  TurnScheduler s(2, interleave(1), gpus, {});
  // Nothing running: a trial starts even with more ranks than GPUs free.
  const auto first = s.next_start({0, 0, 2});
  REQUIRE(first);
  CHECK(first->visible_devices == std::optional<std::string>("a,b"));
  CHECK(first->pooled_gpus == std::vector<std::string>{"a", "b"});
  s.started(1, {0, 0, 2}, *first);
  CHECK_FALSE(s.next_start({0, 1, 2}));  // one GPU free
  const auto failed = s.next_start({0, 1, 1});
  REQUIRE(failed);
  CHECK(failed->visible_devices == std::optional<std::string>("c"));
  s.start_failed(*failed);
  s.finished(1);
  const auto second = s.next_start({0, 1, 2});
  REQUIRE(second);
  CHECK(second->visible_devices == std::optional<std::string>("c,a"));

  // Interleaved trials share theirs: nobody waits for a GPU.
  gpus.shared = true;
  TurnScheduler shared(1, interleave(3), gpus, {});
  std::vector<QueuedTrial> queue(3);
  CHECK(fill(shared, queue) == Ids{1, 2, 3});
  const auto start = shared.next_start({});
  CHECK_FALSE(start);
  shared.finished(1);
  const auto later = shared.next_start({});
  REQUIRE(later);
  CHECK(later->visible_devices == std::optional<std::string>("a"));
  CHECK(later->pooled_gpus.empty());
}

TEST_CASE("turn scheduler: after Ctrl-C nothing starts and no turn opens", "[turns]") {
  TurnScheduler s(1, interleave(2), {}, {});
  std::vector<QueuedTrial> queue(3);
  REQUIRE(fill(s, queue) == Ids{1, 2});
  s.stop();
  CHECK(s.ready(1, false, 0).empty());
  s.finished(2);
  CHECK_FALSE(s.next_start({}));
}
