// The results store's reads of runs and trials (see store.hpp): the runs,
// a run's trials with their summaries, the counts of its trials, and the
// environments its trials ran in.
#include <gpusweep/db/store.hpp>
#include "sweep_row.hpp"

namespace gpusweep::db {

std::optional<SweepRecord> Store::latest_sweep(const std::string& name) {
  auto st = db_.prepare(std::string("SELECT ") + kSweepColumns +
                        " FROM sweeps WHERE name = ? ORDER BY id DESC LIMIT 1");
  st.bind(1, name);
  if (!st.step()) return std::nullopt;
  return read_sweep(st);
}

std::optional<SweepRecord> Store::latest_sweep() {
  auto st =
      db_.prepare(std::string("SELECT ") + kSweepColumns + " FROM sweeps ORDER BY id DESC LIMIT 1");
  if (!st.step()) return std::nullopt;
  return read_sweep(st);
}

std::optional<SweepRecord> Store::sweep(int64_t sweep_id) {
  auto st = db_.prepare(std::string("SELECT ") + kSweepColumns + " FROM sweeps WHERE id = ?");
  st.bind(1, sweep_id);
  if (!st.step()) return std::nullopt;
  return read_sweep(st);
}

std::optional<SweepRecord> Store::shard_run(const std::string& run_key, int64_t shard_index) {
  auto st =
      db_.prepare(std::string("SELECT ") + kSweepColumns +
                  " FROM sweeps WHERE run_key = ? AND shard_index = ? ORDER BY id DESC LIMIT 1");
  st.bind(1, run_key).bind(2, shard_index);
  if (!st.step()) return std::nullopt;
  return read_sweep(st);
}

std::vector<SweepRecord> Store::sweeps() {
  auto st = db_.prepare(std::string("SELECT ") + kSweepColumns + " FROM sweeps ORDER BY id");
  std::vector<SweepRecord> out;
  while (st.step()) out.push_back(read_sweep(st));
  return out;
}

namespace {

// Store::trials' columns in the order it reads them; true: among the brief
// ones (TrialFields::brief reads NULL in place of the others).
const std::vector<std::pair<const char*, bool>> kTrialColumns = {
    {"t.id", true},
    {"t.sweep_id", true},
    {"t.ordinal", true},
    {"t.config_index", true},
    {"t.repeat", true},
    {"t.workload", false},
    {"t.plugin_version", false},
    {"t.plugin_path", false},
    {"t.plugin_hash", false},
    {"t.abi_version", false},
    {"t.config_json", true},
    {"t.config_hash", false},
    {"t.status", true},
    {"t.error", true},
    {"t.signal", false},
    {"t.wall_s", true},
    {"m.trial_id", true},
    {"m.unit", true},
    {"m.secondary_unit", true},
    {"m.warmup_steps", false},
    {"m.steps_per_block", false},
    {"m.blocks", false},
    {"m.samples_per_step", true},
    {"m.throughput_median", true},
    {"m.throughput_mean", false},
    {"m.throughput_min", false},
    {"m.throughput_max", false},
    {"m.throughput_iqr", false},
    {"m.throughput_cv", false},
    {"m.secondary_throughput_median", true},
    {"m.step_time_median_s", false},
    {"m.step_time_min_s", false},
    {"m.step_time_max_s", false},
    {"m.peak_memory_bytes", true},
    {"m.input_wait_fraction", false},
    {"m.setup_s", false},
    {"m.evaluate_s", false},
    {"m.quality_metric", true},
    {"m.quality", true},
    {"m.quality_reference", false},
    {"m.quality_higher_is_better", true},
    {"t.environment_id", true},
    {"t.interleave_group", true},
    {"t.run_plugin_hash", false},
    {"t.started_at", true},
    {"CASE WHEN t.status IN ('ok', 'pending') THEN NULL ELSE t.stderr_tail END", true},
};

// A summary's columns from 16 on (16: the summary row's key).
void read_summary(const Statement& st, bool all, Summary& m) {
  m.unit = st.get_text(17);
  m.throughput_median = st.get_double(23);
  m.peak_memory_bytes = st.get_optional_double(33);
  m.quality = st.get_optional_double(38);
  if (!st.is_null(40)) m.quality_higher_is_better = st.get_int(40) != 0;
  m.quality_metric = st.get_optional_text(37);
  // compare's tokens/s and FLOP/s read these.
  m.secondary_unit = st.get_text(18);
  m.samples_per_step = st.get_double(22);
  m.secondary_throughput_median = st.get_optional_double(29);
  if (!all) return;
  m.warmup_steps = st.get_int(19);
  m.steps_per_block = st.get_int(20);
  m.blocks = st.get_int(21);
  m.throughput_mean = st.get_double(24);
  m.throughput_min = st.get_double(25);
  m.throughput_max = st.get_double(26);
  m.throughput_iqr = st.get_double(27);
  m.throughput_cv = st.get_double(28);
  m.step_time_median_s = st.get_double(30);
  m.step_time_min_s = st.get_double(31);
  m.step_time_max_s = st.get_double(32);
  m.input_wait_fraction = st.get_optional_double(34);
  m.setup_s = st.get_optional_double(35);
  m.evaluate_s = st.get_optional_double(36);
  m.quality_reference = st.get_optional_double(39);
}

}  // namespace

namespace {

// The columns kTrialColumns names, those a brief read leaves out as NULL.
std::string trial_columns(bool all) {
  std::string columns;
  for (const auto& [column, brief] : kTrialColumns) {
    columns += (columns.empty() ? "" : ", ") + std::string(all || brief ? column : "NULL");
  }
  return columns;
}

// One row of trial_columns into r.
void read_trial_row(Statement& st, bool all, TrialRecord& r) {
  r.id = st.get_int(0);
  r.sweep_id = st.get_int(1);
  r.plan.ordinal = st.get_int(2);
  r.plan.config_index = st.get_int(3);
  r.plan.repeat = st.get_int(4);
  r.plan.config_json = st.get_text(10);
  const std::string_view status = st.get_text_view(12);
  const auto parsed = parse_trial_status(status);
  if (!parsed) {
    throw DbError(
        "trial " + std::to_string(r.id) + " has an unknown status '" + std::string(status) + "'",
        SQLITE_CORRUPT);
  }
  r.status = *parsed;
  r.error = st.get_optional_text(13);
  r.wall_s = st.get_optional_double(15);
  if (!st.is_null(16)) read_summary(st, all, r.summary.emplace());
  if (!st.is_null(41)) r.environment_id = st.get_int(41);
  r.interleave_group = st.get_optional_text(42);
  r.started_at = st.get_optional_text(44);
  r.stderr_tail = st.get_optional_text(45);
  if (!all) return;
  r.plan.workload = st.get_text(5);
  r.plan.plugin_version = st.get_text(6);
  r.plan.plugin_path = st.get_text(7);
  r.plan.plugin_hash = st.get_text(8);
  r.plan.abi_version = st.get_text(9);
  r.plan.config_hash = st.get_text(11);
  if (!st.is_null(14)) r.signal = st.get_int(14);
  r.run_plugin_hash = st.get_optional_text(43);
}

}  // namespace

std::vector<TrialRecord> Store::trials(int64_t sweep_id, TrialFields fields) {
  const bool all = fields == TrialFields::all;
  auto st = db_.prepare("SELECT " + trial_columns(all) +
                        " FROM trials t LEFT JOIN trial_summary m ON m.trial_id = t.id "
                        "WHERE t.sweep_id = ? ORDER BY t.ordinal");
  st.bind(1, sweep_id);
  std::vector<TrialRecord> out;
  // Sized first: a run of 100,000 trials grown by doubling moved every
  // record about twice.
  out.reserve(static_cast<size_t>(trial_counts(sweep_id).total));
  // Built in place: a record is 700 bytes.
  while (st.step()) read_trial_row(st, all, out.emplace_back());
  return out;
}

std::optional<TrialRecord> Store::trial(int64_t trial_id) {
  auto st = db_.prepare("SELECT " + trial_columns(true) +
                        " FROM trials t LEFT JOIN trial_summary m ON m.trial_id = t.id "
                        "WHERE t.id = ?");
  st.bind(1, trial_id);
  if (!st.step()) return std::nullopt;
  TrialRecord r;
  read_trial_row(st, true, r);
  return r;
}

Store::TrialCounts Store::trial_counts(int64_t sweep_id) {
  auto st = db_.prepare(
      "SELECT count(*), coalesce(sum(status NOT IN ('pending', 'interrupted')), 0) FROM trials "
      "WHERE sweep_id = ?");
  st.bind(1, sweep_id);
  st.step();
  return {st.get_int(0), st.get_int(1)};
}

std::vector<RunCounts> Store::run_counts(std::optional<int64_t> sweep_id) {
  auto st = db_.prepare(
      std::string(
          "SELECT sweep_id, count(*), coalesce(sum(status NOT IN ('pending', 'interrupted')), 0), "
          "coalesce(sum(status = 'ok'), 0), "
          "coalesce(sum(status NOT IN ('pending', 'interrupted', 'ok')), 0), "
          "coalesce(sum(status = 'pending' AND started_at IS NOT NULL), 0), max(id), "
          "coalesce(max(finished_at), ''), "
          "coalesce(sum(CASE WHEN status NOT IN ('pending', 'interrupted') THEN wall_s END), 0), "
          "coalesce(sum(CASE WHEN status = 'pending' AND started_at IS NOT NULL THEN "
          "max(0, (julianday('now') - julianday(started_at)) * 86400) END), 0) "
          "FROM trials ") +
      (sweep_id ? "WHERE sweep_id = ? " : "") + "GROUP BY sweep_id ORDER BY sweep_id");
  if (sweep_id) st.bind(1, *sweep_id);
  std::vector<RunCounts> out;
  while (st.step()) {
    out.push_back({st.get_int(0), st.get_int(1), st.get_int(2), st.get_int(3), st.get_int(4),
                   st.get_int(5), st.get_int(6), st.get_text(7), st.get_double(8),
                   st.get_double(9)});
  }
  return out;
}

namespace {

const char kEnvironmentColumns[] =
    "SELECT e.fingerprint, e.hostname, e.os, e.cpu_model, e.cpu_cores, e.torch_version, e.blas, "
    "e.threads, e.cuda_available, e.gpus, e.gpusweep_version, e.git_commit, e.details_json, "
    "e.id FROM environments e ";

EnvironmentInfo read_environment_row(Statement& st) {
  EnvironmentInfo e;
  e.fingerprint = st.get_text(0);
  e.hostname = st.get_text(1);
  e.os = st.get_text(2);
  e.cpu_model = st.get_text(3);
  e.cpu_cores = st.get_int(4);
  e.torch_version = st.get_text(5);
  e.blas = st.get_text(6);
  e.threads = st.get_int(7);
  e.cuda_available = st.get_int(8) != 0;
  e.gpus_json = st.get_text(9);
  e.gpusweep_version = st.get_text(10);
  e.git_commit = st.get_text(11);
  e.details_json = st.get_text(12);
  e.id = st.get_int(13);
  return e;
}

}  // namespace

std::vector<EnvironmentInfo> Store::environments(std::optional<int64_t> sweep_id) {
  auto st = db_.prepare(
      kEnvironmentColumns +
      std::string(sweep_id ? "WHERE e.id IN (SELECT environment_id FROM trials WHERE sweep_id = ? "
                             "AND environment_id IS NOT NULL) "
                           : "") +
      "ORDER BY e.id");
  if (sweep_id) st.bind(1, *sweep_id);
  std::vector<EnvironmentInfo> out;
  while (st.step()) out.push_back(read_environment_row(st));
  return out;
}

std::optional<EnvironmentInfo> Store::environment(int64_t environment_id) {
  auto st = db_.prepare(kEnvironmentColumns + std::string("WHERE e.id = ?"));
  st.bind(1, environment_id);
  if (!st.step()) return std::nullopt;
  return read_environment_row(st);
}

}  // namespace gpusweep::db
