// One-at-a-time trials recorded as a sweep; see probe_session.hpp.
#include "run/probe_session.hpp"
#include "protocol/event_payloads.hpp"
#include "protocol/events.hpp"

#include "run/runner.hpp"
#include "run/sweep_run.hpp"
#include "spec/hashing.hpp"
#include "support/error.hpp"
#include "support/spawn.hpp"

namespace gpusweep::host {

ProbeSession::ProbeSession(const std::string& db_path, const SweepSpec& spec,
                           const PluginInfo& info, db::RunKind kind)
    : info_(info) {
  store_.emplace(db_path, db::Connection::Mode::read_write);
  db::SweepRecord record = sweep_record(spec);
  record.kind = kind;
  sweep_id_ = store_->create_sweep(record, {});
  lock_ = db::RunLock::try_acquire(db_path, sweep_id_);
  if (!lock_) {
    throw UsageError("run " + std::to_string(sweep_id_) + " of '" + spec.name +
                     "' was taken over by a `resume` as it was created; run the command again");
  }
}

ProbeResult ProbeSession::run(const Json& config, const MeasureSpec& measure, WorkerArgs worker,
                              int64_t repeat) {
  const db::TrialPlan plan = trial_row(info_, ordinal_, ordinal_, repeat, config);
  ++ordinal_;
  ProbeResult result;
  result.trial_id = store_->add_trials(sweep_id_, {plan}).front();

  TrialJob job;
  job.trial_id = result.trial_id;
  worker.plugin_path = info_.file.path;
  worker.config_json = plan.config_json;
  worker.measure_json = measure.to_json().dump();
  job.worker = std::move(worker);
  job.timeout_s = measure.timeout_s;
  job.silence_s = measure.silence_s;
  job.collector = std::make_unique<TrialCollector>(info_.manifest, measure);

  RunnerCallbacks cb;
  cb.on_event = [&result](const TrialJob&, const event::Event& e) {
    if (!std::holds_alternative<event::Heartbeat>(e)) result.events.push_back(e);
  };
  cb.on_finish = [&](const TrialJob& j, db::TrialOutcome&& o) {
    store_->commit_trial(j.trial_id, o);
    result.outcome = std::move(o);
  };
  std::vector<TrialJob> jobs;
  jobs.push_back(std::move(job));
  Runner runner(worker_executable(), 1);
  result.interrupted = !runner.run(std::move(jobs), cb);
  return result;
}

TrialReadings ProbeResult::readings() const {
  TrialReadings r;
  for (const auto& e : events) {
    if (const auto* s = std::get_if<event::StatsSnapshot>(&e)) r.stats_snapshot = s->stats;
    if (const auto* s = std::get_if<event::Stats>(&e)) r.stats = s->stats;
    if (const auto* p = std::get_if<event::Probe>(&e)) r.matmul = p->matmul.value_or(Json());
    if (const auto* rt = std::get_if<event::Runtime>(&e)) {
      r.runtime = rt->runtime.is_object() ? rt->runtime : Json::object();
    }
  }
  return r;
}

void ProbeSession::close(bool complete) {
  store_->set_sweep_status(sweep_id_,
                           complete ? db::SweepStatus::finished : db::SweepStatus::interrupted);
}

SweepSpec command_sweep(const std::string& command, const std::string& workload,
                        const std::string& description, int64_t warmup_steps,
                        int64_t steps_per_block, const std::vector<std::string>& sets) {
  SweepSpec spec;
  spec.workload = workload;
  spec.name = command + "-" + workload;
  spec.source = "--set";
  spec.description = description;
  spec.measure.warmup_steps = warmup_steps;
  spec.measure.steps_per_block = steps_per_block;
  spec.measure.blocks = 5;
  apply_overrides(spec, sets);
  return spec;
}

Json resolve_single_config(const SweepSpec& spec, const PluginManifest& manifest) {
  validate_sweep(spec, manifest);
  const auto configs = expand_configs(spec, manifest);
  if (configs.size() != 1) {
    throw UsageError("expected one config, the settings give " + std::to_string(configs.size()));
  }
  return configs.front();
}

}  // namespace gpusweep::host
