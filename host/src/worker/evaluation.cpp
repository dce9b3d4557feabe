// A trial's evaluations, and its measured phase of measure.blocks blocks
// with an evaluation every eval_every_blocks and at the end.
#include "worker/trial.hpp"

#include "protocol/event_payloads.hpp"
#include "protocol/event_writer.hpp"
#include "protocol/events.hpp"
#include "worker/worker.hpp"

#include <gpusweep/plugin.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>

namespace gpusweep::host::detail {

// Evaluations get their own phase (a hang there is reported as such), and
// measuring resumes after one between blocks. `clock` joins the event
// (the training clock under measure.target); returns the metrics and sets
// *seconds to the evaluation's time when asked.
Json Trial::evaluate(Phase phase, std::optional<std::pair<double, double>> clock, double* seconds) {
  out_.emit(event::Phase{phase}.to_json());
  const auto t0 = Clock::now();
  const char* metrics = nullptr;
  check(plugin_->evaluate(inst_, &metrics), phase, steps_done_);
  const double took = seconds_since(t0);
  event::Eval e;
  e.at_step = steps_done_;
  e.seconds = took;
  e.metrics = parse_or_raw(metrics);
  if (clock) {
    e.train_s = clock->first;
    e.samples = clock->second;
  }
  out_.emit(e.to_json());
  if (seconds != nullptr) *seconds = took;
  return e.metrics;
}

void Trial::measure() {
  if (measure_.target) {
    measure_to_target(*measure_.target);
    return;
  }
  out_.emit(event::Phase{Phase::measure, std::nullopt, measure_.blocks}.to_json());
  mark_window(true);
  bool evaluated_last = false;
  for (int64_t b = 0; b < measure_.blocks; ++b) {
    double samples = 0;
    run_block(b, &samples);
    // Parallel starts: the final evaluation measures nothing, and runs
    // beside the other trials' in a turn between cycles.
    if (b + 1 == measure_.blocks && args_.parallel_starts) next_turn(true);
    evaluated_last = false;
    if (measure_.eval_every_blocks > 0 && (b + 1) % measure_.eval_every_blocks == 0) {
      mark_window(false);
      evaluate(Phase::evaluate);
      evaluated_last = true;
      if (b + 1 < measure_.blocks) {
        out_.emit(event::Phase{Phase::measure}.to_json());
        mark_window(true);
      }
    }
  }
  check_block_length(block_seconds_, device_timed_);
  if (!evaluated_last) {
    mark_window(false);
    evaluate(Phase::evaluate);
  }
}

}  // namespace gpusweep::host::detail
