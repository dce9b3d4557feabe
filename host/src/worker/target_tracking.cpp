// A trial's measured phase under measure.target (time to quality): its
// metric, the blocks and the evaluation cadence until the target is reached
// or the budget or the adaptive cap censors the trial.
#include "worker/trial.hpp"

#include "protocol/event_payloads.hpp"
#include "protocol/event_writer.hpp"
#include "protocol/events.hpp"
#include "spec/sweep.hpp"
#include "worker/gate.hpp"
#include "worker/worker.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace gpusweep::host::detail {

// The target's metric and direction: as the sweep names them, else the
// manifest's quality metric and the direction it (or its "metrics" entry)
// gives.
std::pair<std::string, bool> Trial::target_metric(const TargetSpec& target) const {
  const Json manifest = parse_or_raw(manifest_.c_str());
  const Json quality = manifest.is_object() ? manifest.value("quality", Json::object()) : Json();
  std::string metric = target.metric;
  if (metric.empty() && quality.is_object()) metric = quality.value("metric", "");
  std::optional<bool> higher = target.higher_is_better;
  if (!higher && quality.is_object() && quality.value("metric", "") == metric) {
    higher = quality.value("higher_is_better", true);
  }
  if (!higher && manifest.is_object()) {
    for (const auto& mj : manifest.value("metrics", Json::array())) {
      if (mj.is_object() && mj.value("name", "") == metric) {
        higher = mj.value("higher_is_better", true);
      }
    }
  }
  return {metric, higher.value_or(true)};
}

// Time to quality (measure.target): an evaluation at the start (the
// curve's first point, after the warmup, whose time and steps count),
// then blocks, evaluated every eval_every_blocks
// (default 1; without it set, the cadence halves whenever an evaluation
// took more than a tenth of the training time since the last one, so that
// evaluating stays a small share), until an evaluation reaches the target
// or the training budget ends: max_s of blocks' time, max_steps of
// measured steps, or the adaptive cap (--target-cap at the start, or one
// a later turn brings: the host's slack times the best time to target of
// the trial's round). The time to target is interpolated between the last
// evaluation short of it and the first at or past it, on the training
// clock (the blocks' time; evaluations timed apart). A trial that runs out
// of budget is censored, after one more evaluation: its time is the
// training time it had, a lower bound; `capped` says the cap ended it.
// Near the target the adaptive cadence tightens: when, at the pace of the
// last two evaluations, the target is less than two intervals away, the
// next evaluation comes after a quarter of the blocks it would take (at
// least one), so the interpolation's last interval is short for every
// config (linear interpolation of a convex curve is late by a share of that
// interval: +0.8% at a quarter of the time to target, +3.3% at half).
// Long by design: the loop of blocks and evaluations reads top to bottom,
// with the few closures it shares.
void Trial::measure_to_target(const TargetSpec& target) {
  const auto resolved = target_metric(target);
  const std::string metric = resolved.first;
  const bool higher = resolved.second;
  const bool fixed_cadence = measure_.eval_every_blocks > 0;
  int64_t every = std::max<int64_t>(1, measure_.eval_every_blocks);
  // Warmup steps train the model too: their time and steps are on the
  // clock, and the first evaluation follows them.
  double train_s = warmup_s_, samples = 0, eval_s = 0, since_eval_s = 0;
  int64_t measured_steps = steps_done_, evaluations = 0, blocks_since = 0;
  // A metric that went NaN (a diverged run: JSON carries it as null) never
  // reaches the target: NaN here, and the trial ends censored.
  auto value_of = [&](const Json& metrics) {
    auto it = metrics.is_object() ? metrics.find(metric) : metrics.end();
    if (it != metrics.end() && it->is_null()) return std::nan("");
    if (it == metrics.end() || !it->is_number()) {
      end_trial("failed", Phase::evaluate, steps_done_,
                "measure.target: evaluate() did not report '" + metric +
                    "' as a number (it reported " + metrics.dump() + ")");
    }
    return it->get<double>();
  };
  auto evaluate_now = [&] {
    double took = 0;
    const Json metrics = evaluate(Phase::evaluate, std::make_pair(train_s, samples), &took);
    eval_s += took;
    ++evaluations;
    return value_of(metrics);
  };
  auto reached = [&](double v) { return higher ? v >= target.value : v <= target.value; };
  // The adaptive cap now: the lower of the one given at the start and the
  // latest a turn brought.
  auto cap_s = [&] {
    const double given = args_.target_cap_s, sent = gate_.cap_s();
    return given > 0 && sent > 0 ? std::min(given, sent) : std::max(given, sent);
  };
  auto finish_target = [&](bool ok, double time_s, bool diverged = false, bool capped = false) {
    event::Target e;
    e.reached = ok;
    e.diverged = diverged;
    e.time_s = time_s;
    e.at_step = measured_steps;
    e.train_s = train_s;
    e.evaluations = evaluations;
    e.eval_s = eval_s;
    e.metric = metric;
    e.value = target.value;
    if (capped) {
      e.capped = true;
      e.cap_s = cap_s();  // the cap it stopped at
    }
    out_.emit(e.to_json());
  };
  auto over_cap = [&] { return cap_s() > 0 && train_s >= cap_s(); };
  double prev_v = evaluate_now();
  double prev_t = train_s;
  // An evaluation: reached (interpolated from the last one short of it),
  // or, when the budget is spent or the metric diverged, censored. True
  // when the trial's target is settled either way.
  double blocks_to_target = -1;  // at the last two evaluations' pace; -1: not approaching
  auto judge = [&](bool budget_spent, bool capped) {
    const double v = evaluate_now();
    if (reached(v)) {
      // Linear between the last evaluation short of the target and this one.
      const double f = v == prev_v ? 1 : (target.value - prev_v) / (v - prev_v);
      finish_target(true, prev_t + std::clamp(f, 0.0, 1.0) * (train_s - prev_t));
      return true;
    }
    if (budget_spent || capped || std::isnan(v)) {
      finish_target(false, train_s, std::isnan(v), capped && !budget_spent);
      return true;
    }
    const double progress = higher ? v - prev_v : prev_v - v;
    const double left = higher ? target.value - v : v - target.value;
    blocks_to_target = progress > 0 && blocks_since > 0
                           ? left / (progress / static_cast<double>(blocks_since))
                           : -1;
    prev_v = v;
    prev_t = train_s;
    return false;
  };
  // Reached before training: time 0, after one block (the throughput's).
  const bool at_start = reached(prev_v);
  out_.emit(event::Phase{Phase::measure, std::nullopt, std::nullopt, target.to_json()}.to_json());
  mark_window(true);
  for (int64_t b = 0;; ++b) {
    next_turn();  // gated: the turn, and with it perhaps a cap
    if (!at_start && over_cap()) {
      // Capped while waiting for this turn: no block past the cap.
      mark_window(false);
      if (blocks_since == 0) {
        finish_target(false, train_s, false, true);
      } else {
        judge(false, true);
      }
      break;
    }
    double block_samples = 0;
    const double seconds = run_block(b, &block_samples, true);
    train_s += seconds;
    since_eval_s += seconds;
    samples += block_samples;
    measured_steps += measure_.steps_per_block;
    if (at_start) {
      mark_window(false);
      finish_target(true, prev_t);
      break;
    }
    const bool spent = (target.max_s > 0 && train_s >= target.max_s) ||
                       (target.max_steps > 0 && measured_steps >= target.max_steps);
    const bool capped = over_cap();
    if (++blocks_since < every && !spent && !capped) continue;
    mark_window(false);
    const double before_s = eval_s;
    if (judge(spent, capped)) break;
    if (!fixed_cadence && eval_s - before_s > 0.1 * since_eval_s) every *= 2;
    if (!fixed_cadence && blocks_to_target >= 0 &&
        blocks_to_target < 2.0 * static_cast<double>(every)) {
      every = std::max<int64_t>(1, static_cast<int64_t>(blocks_to_target / 4));
    }
    blocks_since = 0;
    since_eval_s = 0;
    out_.emit(event::Phase{Phase::measure}.to_json());
    mark_window(true);
  }
  check_block_length(block_seconds_, device_timed_);
}

}  // namespace gpusweep::host::detail
