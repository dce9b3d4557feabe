// The turns of interleaved windows as gpusweep's own TurnScheduler
// (host/src/run/turn_scheduler.hpp) grants them, for simulate.py: scripted
// workers that ask for their turns as the real worker does, one window at a
// time, --jobs 1. simulate.py times the turns and draws the noise; which
// process runs when, and what runs beside what, is decided here.
//
//   build/bench/scheduler_sim --procs 4 --blocks 6 --starts parallel --windows 3 --seed 1
//   (--help lists the options)
//
// One line a window: its turns in the order granted, a space between turns
// granted one after another, a comma between turns granted at once. A turn
// is its kind and the process (0 to procs-1, in the order started):
//   S  start: loading, setup and warmup (the first turn)
//   Z  block sizing by time (starts "built": a measured turn of its own)
//   B  a measured block
//   L  the last measured block, its final evaluation in the same turn (serial)
//   E  the final evaluation (parallel starts: unmeasured, between cycles)
#include "run/turn_scheduler.hpp"
#include "sim_flags.hpp"

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

using namespace gpusweep::host;

namespace {

struct Options {
  int procs = 4;
  int blocks = 5;
  std::string starts = "parallel";
  int windows = 1;
  uint64_t seed = 1;
};

// A worker's turns after the first: what each holds, and whether the
// worker asks for it as one that measures nothing (worker --parallel-starts).
struct Ask {
  char kind;
  bool unmeasured;
};

std::vector<Ask> script(const Options& o) {
  const bool parallel = o.starts != "serial";
  std::vector<Ask> turns = {{'S', parallel}};
  if (o.starts == "built") turns.push_back({'Z', false});
  for (int b = 0; b < o.blocks; ++b) {
    const bool last = b + 1 == o.blocks;
    turns.push_back({last && !parallel ? 'L' : 'B', false});
  }
  if (parallel) turns.push_back({'E', true});
  return turns;
}

[[noreturn]] void fail(const std::string& why) {
  std::cerr << "scheduler_sim: " << why << "\n";
  std::exit(2);
}

// One window: procs workers started at once, each taking its script's
// turns; every turn granted ends before the next decision, which --jobs 1
// makes exact (a turn is granted beside another only when both measure
// nothing, and those all end before anything else is granted).
std::string window(const Options& o, uint64_t seed) {
  Interleave interleave;
  interleave.window = o.procs < 2 ? 2 : o.procs;  // gated even when alone
  interleave.seed = seed;
  interleave.parallel_starts = o.starts != "serial";
  TurnScheduler s(1, interleave, {}, {});
  const std::vector<Ask> turns = script(o);
  std::map<WorkerId, size_t> next;  // each worker's next turn in its script
  std::vector<Grant> granted;
  for (WorkerId id = 0; id < o.procs; ++id) {
    const auto start = s.next_start({});
    if (!start) fail("the scheduler refused a start within the window");
    s.started(id, {}, *start);
  }
  for (WorkerId id = 0; id < o.procs; ++id) {
    next[id] = 0;
    for (const Grant& g : s.ready(id, turns[0].unmeasured, 0)) granted.push_back(g);
  }
  std::string line;
  while (!granted.empty()) {
    std::vector<Grant> batch;
    batch.swap(granted);
    for (size_t i = 0; i < batch.size(); ++i) {
      const WorkerId id = batch[i].worker;
      line += (i == 0 ? (line.empty() ? "" : " ") : ",") + std::string(1, turns[next[id]].kind) +
              std::to_string(id);
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      const WorkerId id = batch[i].worker;
      if (!granted.empty()) fail("a turn was granted beside one still running");
      if (++next[id] == turns.size()) {
        s.exited(id);
        s.finished(id);
        granted = s.schedule();
      } else {
        granted = s.ready(id, turns[next[id]].unmeasured, static_cast<double>(next[id]));
      }
    }
  }
  for (const auto& [id, turn] : next) {
    if (turn != turns.size()) fail("a worker was left waiting for a turn");
  }
  return line;
}

Options parse(int argc, char** argv) {
  Options o;
  gpusweep::bench::SimFlags flags("scheduler_sim",
                                  "The turns of interleaved windows as the TurnScheduler grants "
                                  "them: one line a window.");
  flags.option("--procs", &o.procs, "worker processes a window")
      .at_least(1)
      .option("--blocks", &o.blocks, "measured blocks a process")
      .at_least(1)
      .option("--starts", &o.starts, "how a window's processes start",
              {"serial", "parallel", "built"})
      .option("--windows", &o.windows, "windows to print")
      .at_least(1)
      .option("--seed", &o.seed, "random seed");
  flags.parse(argc, argv);
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  for (int w = 0; w < o.windows; ++w) {
    std::cout << window(o, o.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(w)) << "\n";
  }
}
