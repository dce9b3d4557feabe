// The results store's writes (see store.hpp): a run and its planned
// trials, its status, a trial's start and its outcome (summary, blocks,
// metrics, environment), each in one transaction where it takes several
// statements.
#include <gpusweep/db/store.hpp>
#include "series.hpp"

namespace gpusweep::db {

int64_t Store::create_sweep(const SweepRecord& s, const std::vector<TrialPlan>& trials) {
  // One transaction: a host killed here leaves either no run or a whole one,
  // never a run without its trials.
  Transaction tx(db_);
  const int64_t id = insert_sweep(s);
  insert_trials(id, trials);
  tx.commit();
  return id;
}

int64_t Store::insert_sweep(const SweepRecord& s) {
  auto st = db_.prepare(
      "INSERT INTO sweeps (name, workload, file_path, file_hash, spec_json, spec_hash, status, "
      "run_key, shard_index, shard_count, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  st.bind(1, s.name).bind(2, s.workload).bind(3, s.file_path).bind(4, s.file_hash);
  st.bind(5, s.spec_json).bind(6, s.spec_hash).bind(7, sweep_status_name(s.status));
  st.bind(8, s.run_key).bind(9, s.shard_index).bind(10, s.shard_count);
  st.bind(11, run_kind_name(s.kind));
  st.run();
  return db_.last_insert_rowid();
}

void Store::set_sweep_status(int64_t sweep_id, SweepStatus sweep_status) {
  const std::string status = sweep_status_name(sweep_status);
  auto st = db_.prepare(
      "UPDATE sweeps SET status = ?, finished_at = CASE WHEN ? = 'running' THEN NULL "
      "ELSE strftime('%Y-%m-%dT%H:%M:%fZ', 'now') END WHERE id = ?");
  st.bind(1, status).bind(2, status).bind(3, sweep_id);
  st.run();
}

void Store::set_sweep_spec(int64_t sweep_id, const std::string& spec_json) {
  auto st = db_.prepare("UPDATE sweeps SET spec_json = ? WHERE id = ?");
  st.bind(1, spec_json).bind(2, sweep_id);
  st.run();
}

std::vector<int64_t> Store::add_trials(int64_t sweep_id, const std::vector<TrialPlan>& trials) {
  Transaction tx(db_);
  auto ids = insert_trials(sweep_id, trials);
  tx.commit();
  return ids;
}

std::vector<int64_t> Store::insert_trials(int64_t sweep_id, const std::vector<TrialPlan>& trials) {
  std::vector<int64_t> ids;
  ids.reserve(trials.size());
  auto st = db_.prepare(
      "INSERT INTO trials (sweep_id, ordinal, config_index, repeat, workload, plugin_version, "
      "plugin_path, plugin_hash, abi_version, config_json, config_hash) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const auto& t : trials) {
    st.reset();
    st.bind(1, sweep_id).bind(2, t.ordinal).bind(3, t.config_index).bind(4, t.repeat);
    st.bind(5, t.workload).bind(6, t.plugin_version).bind(7, t.plugin_path);
    st.bind(8, t.plugin_hash).bind(9, t.abi_version).bind(10, t.config_json);
    st.bind(11, t.config_hash);
    st.run();
    ids.push_back(db_.last_insert_rowid());
  }
  return ids;
}

int64_t Store::upsert_environment(const EnvironmentInfo& e) {
  auto st = db_.prepare(
      "INSERT INTO environments (fingerprint, hostname, os, cpu_model, cpu_cores, "
      "torch_version, blas, threads, cuda_available, gpus, gpusweep_version, git_commit, "
      "details_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
      "ON CONFLICT (fingerprint) DO NOTHING");
  st.bind(1, e.fingerprint).bind(2, e.hostname).bind(3, e.os).bind(4, e.cpu_model);
  st.bind(5, e.cpu_cores).bind(6, e.torch_version).bind(7, e.blas).bind(8, e.threads);
  st.bind(9, int64_t{e.cuda_available}).bind(10, e.gpus_json).bind(11, e.gpusweep_version);
  st.bind(12, e.git_commit).bind(13, e.details_json);
  st.run();
  auto q = db_.prepare("SELECT id FROM environments WHERE fingerprint = ?");
  q.bind(1, e.fingerprint);
  q.step();
  return q.get_int(0);
}

void Store::commit_trial(int64_t trial_id, const TrialOutcome& o) {
  Transaction tx(db_);
  std::optional<int64_t> env_id;
  if (o.environment) env_id = upsert_environment(*o.environment);

  auto up = db_.prepare(
      "UPDATE trials SET status = ?, error = ?, exit_code = ?, signal = ?, stderr_tail = ?, "
      "stderr_bytes = ?, environment_id = ?, started_at = ?, finished_at = ?, wall_s = ?, "
      "slurm_job_id = ?, slurm_task_id = ?, interleave_group = ?, run_plugin_hash = ? "
      "WHERE id = ?");
  up.bind(1, status_name(o.status)).bind(2, o.error).bind(3, o.exit_code).bind(4, o.signal);
  up.bind(5, o.stderr_tail).bind(6, o.stderr_bytes).bind(7, env_id);
  up.bind(8, o.started_at).bind(9, o.finished_at).bind(10, o.wall_s);
  up.bind(11, o.slurm_job_id).bind(12, o.slurm_task_id).bind(13, o.interleave_group);
  up.bind(14, o.run_plugin_hash).bind(15, trial_id);
  up.run();
  if (db_.changes() != 1) {
    throw DbError("trial " + std::to_string(trial_id) + " does not exist", SQLITE_NOTFOUND);
  }

  // A re-run (after --resume) replaces what an earlier attempt stored.
  for (const char* table : {"trial_summary", "blocks", "metrics"}) {
    auto del = db_.prepare(std::string("DELETE FROM ") + table + " WHERE trial_id = ?");
    del.bind(1, trial_id);
    del.run();
  }

  if (o.summary) {
    const Summary& m = *o.summary;
    auto st = db_.prepare(
        "INSERT INTO trial_summary (trial_id, unit, secondary_unit, warmup_steps, "
        "steps_per_block, blocks, samples_per_step, throughput_median, throughput_mean, "
        "throughput_min, throughput_max, throughput_iqr, throughput_cv, "
        "secondary_throughput_median, step_time_median_s, step_time_min_s, step_time_max_s, "
        "peak_memory_bytes, input_wait_fraction, setup_s, evaluate_s, quality_metric, quality, "
        "quality_reference, quality_higher_is_better) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
        "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    st.bind(1, trial_id).bind(2, m.unit).bind(3, m.secondary_unit).bind(4, m.warmup_steps);
    st.bind(5, m.steps_per_block).bind(6, m.blocks).bind(7, m.samples_per_step);
    st.bind(8, m.throughput_median).bind(9, m.throughput_mean).bind(10, m.throughput_min);
    st.bind(11, m.throughput_max).bind(12, m.throughput_iqr).bind(13, m.throughput_cv);
    st.bind(14, m.secondary_throughput_median).bind(15, m.step_time_median_s);
    st.bind(16, m.step_time_min_s).bind(17, m.step_time_max_s).bind(18, m.peak_memory_bytes);
    st.bind(19, m.input_wait_fraction).bind(20, m.setup_s).bind(21, m.evaluate_s);
    st.bind(22, m.quality_metric).bind(23, m.quality).bind(24, m.quality_reference);
    if (m.quality_higher_is_better) {
      st.bind(25, int64_t{*m.quality_higher_is_better});
    } else {
      st.bind_null(25);
    }
    st.run();
  }

  auto bl = db_.prepare(
      "INSERT INTO blocks (trial_id, idx, steps, seconds, samples, secondary_samples, cycle, "
      "device_seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  for (const auto& b : o.blocks) {
    bl.reset();
    bl.bind(1, trial_id).bind(2, b.idx).bind(3, b.steps).bind(4, b.seconds);
    bl.bind(5, b.samples).bind(6, b.secondary_samples).bind(7, b.cycle);
    bl.bind(8, b.device_seconds);
    bl.run();
  }
  if (!o.blocks.empty()) insert_series(db_, trial_id, series_of(o.blocks));

  auto me = db_.prepare(
      "INSERT OR REPLACE INTO metrics (trial_id, kind, at_step, name, value) "
      "VALUES (?, ?, ?, ?, ?)");
  for (const auto& m : o.metrics) {
    me.reset();
    me.bind(1, trial_id).bind(2, m.kind).bind(3, m.at_step).bind(4, m.name).bind(5, m.value);
    me.run();
  }
  tx.commit();
}

void Store::mark_started(int64_t trial_id, const std::string& started_at) {
  auto st = db_.prepare("UPDATE trials SET started_at = ? WHERE id = ? AND status = 'pending'");
  st.bind(1, started_at).bind(2, trial_id);
  st.run();
}

}  // namespace gpusweep::db
