// The tune-batch loop; see batch_tuner.hpp.
#include "run/batch_tuner.hpp"

#include "support/error.hpp"

namespace gpusweep::host {

BatchTuneResult tune_batch(ProbeSession& session, const BatchTuneRequest& request,
                           const std::function<void(const BatchProbe&)>& on_probe) {
  BatchTuneResult out;
  auto run_probe = [&](int64_t batch, const MeasureSpec& measure, bool verify,
                       int64_t repeat) -> const BatchProbe& {
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
    out.probes.push_back(p);
    if (on_probe) on_probe(out.probes.back());
    return out.probes.back();
  };

  BatchSearch finder(request.search);
  while (auto batch = finder.next()) {
    const BatchProbe& p = run_probe(*batch, request.probe_measure, false, 0);
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

  // The largest fit less the margin, verified with the full protocol; if
  // even that fails, back off by the margin again (at most three times).
  std::optional<int64_t> candidate = out.interrupted ? std::nullopt : finder.with_margin();
  for (int attempt = 0; candidate && attempt < 3 && !out.interrupted; ++attempt) {
    if (run_probe(*candidate, request.verify_measure, true, 1 + attempt).status ==
        db::TrialStatus::ok) {
      out.recommended = candidate;
      break;
    }
    candidate = back_off(*candidate, request.search);
  }
  session.close(!out.interrupted);
  return out;
}

}  // namespace gpusweep::host
