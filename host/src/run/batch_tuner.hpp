// `gpusweep tune-batch`'s loop: probe batch sizes as BatchSearch asks, then
// verify the fastest size that fits with the margin with the full protocol
// (recommend_batch). Every probe and verification is a trial of the
// session's run.
#pragma once

#include "analysis/batch_search.hpp"
#include "protocol/worker_args.hpp"
#include "run/probe_session.hpp"

#include <functional>
#include <optional>
#include <vector>

namespace gpusweep::host {

struct BatchTuneRequest {
  SearchOptions search;
  Json base_config;            // the resolved config; batch_size is set per probe
  MeasureSpec probe_measure;   // the probes' short protocol
  MeasureSpec verify_measure;  // the verification's full protocol
  WorkerArgs worker;           // the workers' other options (a memory cap)
};

// The request for a workload: the search's bounds checked against its
// batch_size setting (the largest it accepts when search.max is unset), the
// sweep's one config as the base, its protocol for the verification and a
// short one (2 warm-up steps, 5 blocks of 2) for the probes, each probe's
// allocations capped at max_memory_bytes (0: no cap). Throws UsageError
// naming the option that is out of range, or a workload without an integer
// batch_size.
BatchTuneRequest batch_tune_request(const SweepSpec& spec, const PluginManifest& manifest,
                                    SearchOptions search, double max_memory_bytes);

// Throws UsageError when a probe is skipped: the settings cannot run here.
// on_probe sees each probe as it finishes (progress).
BatchTuneResult tune_batch(ProbeSession& session, const BatchTuneRequest& request,
                           const std::function<void(const BatchProbe&)>& on_probe);

// tune-batch's second stage with measure.target (given in sets): a sweep of
// the batch sizes that fit, each trained to the target over several seeds,
// validated against the manifest; its grid and baseline are filled in once
// the search is done.
SweepSpec target_sweep(const std::string& workload, const std::vector<std::string>& sets,
                       const PluginManifest& manifest);

// --objective (empty: not given) against --set measure.target: time to
// target needs one, and a target is trained to only for that objective.
// UsageError naming the fix.
void check_batch_objective(const std::string& objective, bool has_target);

}  // namespace gpusweep::host
