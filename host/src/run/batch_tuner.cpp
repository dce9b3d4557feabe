// The tune-batch loop; see batch_tuner.hpp.
#include "run/batch_tuner.hpp"

#include "support/error.hpp"
#include "support/format.hpp"

#include <algorithm>
#include <cmath>

namespace gpusweep::host {

BatchTuneResult tune_batch(ProbeSession& session, const BatchTuneRequest& request,
                           const std::function<void(const BatchProbe&)>& on_probe) {
  BatchTuneResult out;
  // One trial at batch; the caller records it in out.probes.
  auto run_trial = [&](int64_t batch, const MeasureSpec& measure, bool verify,
                       int64_t repeat) -> BatchProbe {
    Json config = request.base_config;
    config["batch_size"] = batch;
    ProbeResult r = session.run(config, measure, request.worker, repeat);
    BatchProbe p;
    p.batch = batch;
    p.status = r.outcome.status;
    p.summary = r.outcome.summary;
    p.error = r.outcome.error.value_or("");
    p.verify = verify;
    p.trial_id = r.trial_id;
    out.interrupted = r.interrupted;
    if (on_probe) on_probe(p);
    return p;
  };

  BatchSearch finder(request.search);
  while (auto batch = finder.next()) {
    out.probes.push_back(run_trial(*batch, request.probe_measure, false, 0));
    const BatchProbe& p = out.probes.back();
    if (out.interrupted) break;
    if (p.status == db::TrialStatus::skipped) {
      session.close(true);
      throw UsageError("the settings cannot run here: " + p.error);
    }
    finder.record(*batch, p.status == db::TrialStatus::ok);
  }
  out.largest_fit = finder.largest_fit();
  out.first_failure = finder.first_failure();
  out.reached_max = finder.reached_max();

  // The fastest size that fits with the margin, verified with the full
  // protocol (recommend_batch; a failed verification rules out its size and
  // larger ones, at most three verifications).
  if (const auto cap = finder.with_margin(); cap && !out.interrupted) {
    int64_t attempt = 0;
    out.recommended = recommend_batch(out.probes, *cap, [&](int64_t size) {
      if (out.interrupted) {
        BatchProbe skipped;
        skipped.batch = size;
        skipped.status = db::TrialStatus::interrupted;
        skipped.verify = true;
        return skipped;
      }
      return run_trial(size, request.verify_measure, true, 1 + attempt++);
    });
    if (out.interrupted) {
      out.recommended.reset();
      // The verifications that never ran (trial 0) are not records.
      out.probes.erase(std::remove_if(out.probes.begin(), out.probes.end(),
                                      [](const BatchProbe& p) { return p.trial_id == 0; }),
                       out.probes.end());
    }
  }
  session.close(!out.interrupted);
  return out;
}

BatchTuneRequest batch_tune_request(const SweepSpec& spec, const PluginManifest& manifest,
                                    SearchOptions search, double max_memory_bytes) {
  if (!(search.margin >= 0 && search.margin <= 0.9)) {
    throw UsageError("--margin " + fixed(search.margin, 3) + ": use a fraction from 0 to 0.9");
  }
  if (search.min < 1) throw UsageError("--min " + std::to_string(search.min) + ": use 1 or more");
  const ParamSpec* batch_param = manifest.find("batch_size");
  if (batch_param == nullptr || batch_param->type != ParamType::integer) {
    throw UsageError("workload '" + manifest.name + "' has no integer batch_size setting to tune");
  }
  const auto param_max = static_cast<int64_t>(batch_param->max.value_or(1 << 30));
  if (!search.max) search.max = param_max;
  if (*search.max < search.min) {
    throw UsageError("--max " + std::to_string(*search.max) + " is below --min " +
                     std::to_string(search.min));
  }
  if (*search.max > param_max) {
    throw UsageError("--max " + std::to_string(*search.max) + ": " + manifest.name +
                     " accepts batch_size up to " + std::to_string(param_max));
  }
  if (spec.base.contains("batch_size")) {
    throw UsageError("--set batch_size: tune-batch chooses the batch size; use --min and --max");
  }
  BatchTuneRequest request;
  request.search = search;
  request.base_config = resolve_single_config(spec, manifest);
  request.verify_measure = spec.measure;
  request.probe_measure = spec.measure;
  request.probe_measure.warmup_steps = std::min<int64_t>(spec.measure.warmup_steps, 2);
  request.probe_measure.steps_per_block = std::min<int64_t>(spec.measure.steps_per_block, 2);
  request.probe_measure.block_s = 0;  // a probe's blocks are two steps, whatever the sweep's
  request.probe_measure.min_warmup_s = 0;
  request.probe_measure.blocks = 5;
  // A probe asks whether a batch fits, with blocks of two steps; its timing
  // is a sketch, and the verification's blocks are held to the minimum.
  request.probe_measure.min_block_s = 0;
  request.worker.max_memory_bytes = std::floor(max_memory_bytes);
  return request;
}

// tune-batch's second stage with measure.target: a sweep of the batch sizes
// that fit, each trained to the target over several seeds (6 unless
// measure.repeats says: the fewest that give the paired ratio a 95%
// interval), capped adaptively unless measure.target.cap says otherwise.
// Its grid and baseline are filled in once the search is done.
SweepSpec target_sweep(const std::string& workload, const std::vector<std::string>& sets,
                       const PluginManifest& manifest) {
  SweepSpec s =
      command_sweep("tune-batch", workload,
                    "gpusweep tune-batch: the batch sizes that fit, to the target", 0, 5, sets);
  s.name += "-target";
  bool repeats = false;
  for (const auto& set : sets) repeats = repeats || set.rfind("measure.repeats=", 0) == 0;
  if (!repeats) s.measure.repeats = 6;
  s.measure.target->cap_by_default();
  // A bad target is refused before the search runs.
  validate_sweep(s, manifest);
  return s;
}

// --objective against --set measure.target: time to target needs one, and a
// target is trained to only for that objective. UsageError naming the fix.
void check_batch_objective(const std::string& o, bool has_target) {
  if (o.empty()) return;
  if (o != "throughput" && o != "time_to_target") {
    throw UsageError("--objective " + o + ": use throughput or time_to_target");
  }
  if (o == "time_to_target" && !has_target) {
    throw UsageError(
        "--objective time_to_target: no target to train to; give one with --set "
        "'measure.target={\"value\": V, \"max_s\": T}' (`gpusweep plugins WORKLOAD` lists "
        "the metrics it may name)");
  }
  if (o == "throughput" && has_target) {
    throw UsageError(
        "--objective throughput: --set measure.target trains each size to the target, which "
        "throughput does not need; drop the target, or use --objective time_to_target");
  }
}

}  // namespace gpusweep::host
