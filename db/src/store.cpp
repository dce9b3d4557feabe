// The results store; see store.hpp.
#include <gpusweep/db/migrate.hpp>

#include <gpusweep/db/store.hpp>
#include "copy.hpp"
#include "series.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <thread>

namespace gpusweep::db {

namespace {

SweepRecord read_sweep(const Statement& st) {
  SweepRecord s;
  s.id = st.get_int(0);
  s.name = st.get_text(1);
  s.workload = st.get_text(2);
  s.file_path = st.get_optional_text(3);
  s.file_hash = st.get_optional_text(4);
  s.spec_json = st.get_text(5);
  s.spec_hash = st.get_text(6);
  s.status = st.get_text(7);
  s.created_at = st.get_text(8);
  s.run_key = st.get_optional_text(9);
  if (!st.is_null(10)) s.shard_index = st.get_int(10);
  if (!st.is_null(11)) s.shard_count = st.get_int(11);
  return s;
}

constexpr const char* kSweepColumns =
    "id, name, workload, file_path, file_hash, spec_json, spec_hash, status, created_at, "
    "run_key, shard_index, shard_count";

}  // namespace

namespace {
std::atomic<int64_t> upgraded_copies{0};
}  // namespace

int64_t Store::upgraded_copies_made() { return upgraded_copies.load(); }

Store::Store(const std::string& path, Connection::Mode mode) : db_(path, mode) {
  db_.exec("PRAGMA foreign_keys = ON");
  if (mode == Connection::Mode::read_write) {
    // Two hosts creating the same new database race to switch it to WAL and
    // to create the tables; SQLite answers some of those races with BUSY at
    // once, without waiting in the busy handler (to rule out deadlocks). The
    // loser retries: by then the winner has done the work, or soon will.
    for (int attempt = 0;; ++attempt) {
      try {
        db_.exec("PRAGMA journal_mode = WAL");
        db_.exec("PRAGMA synchronous = NORMAL");
        migrate(db_);
        break;
      } catch (const DbError& e) {
        const bool busy = (e.code() & 0xff) == SQLITE_BUSY || (e.code() & 0xff) == SQLITE_LOCKED;
        if (!busy || attempt >= 500) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  } else {
    int have = current_version(db_);
    if (have > 0 && have < schema_version()) {
      // An older gpusweep wrote it: read an upgraded copy, leave the file be.
      copy_ = std::make_unique<TempFile>("gpusweep-read");
      migrated_copy(db_, copy_->path(), "database '" + path + "'");
      ++upgraded_copies;
      db_ = Connection(copy_->path(), Connection::Mode::read_only);
      db_.exec("PRAGMA foreign_keys = ON");
      have = current_version(db_);
    }
    require_readable(have, "database", path, "run a sweep into it first or pass the right --db",
                     "upgrade gpusweep to read it");
  }
}

Store::~Store() = default;

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
      "run_key, shard_index, shard_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  st.bind(1, s.name).bind(2, s.workload).bind(3, s.file_path).bind(4, s.file_hash);
  st.bind(5, s.spec_json).bind(6, s.spec_hash).bind(7, s.status);
  st.bind(8, s.run_key).bind(9, s.shard_index).bind(10, s.shard_count);
  st.run();
  return db_.last_insert_rowid();
}

void Store::set_sweep_status(int64_t sweep_id, const std::string& status) {
  auto st = db_.prepare(
      "UPDATE sweeps SET status = ?, finished_at = CASE WHEN ? = 'running' THEN NULL "
      "ELSE strftime('%Y-%m-%dT%H:%M:%fZ', 'now') END WHERE id = ?");
  st.bind(1, status).bind(2, status).bind(3, sweep_id);
  st.run();
}

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
    {"m.secondary_unit", false},
    {"m.warmup_steps", false},
    {"m.steps_per_block", false},
    {"m.blocks", false},
    {"m.samples_per_step", false},
    {"m.throughput_median", true},
    {"m.throughput_mean", false},
    {"m.throughput_min", false},
    {"m.throughput_max", false},
    {"m.throughput_iqr", false},
    {"m.throughput_cv", false},
    {"m.secondary_throughput_median", false},
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
  if (!all) return;
  m.secondary_unit = st.get_text(18);
  m.warmup_steps = st.get_int(19);
  m.steps_per_block = st.get_int(20);
  m.blocks = st.get_int(21);
  m.samples_per_step = st.get_double(22);
  m.throughput_mean = st.get_double(24);
  m.throughput_min = st.get_double(25);
  m.throughput_max = st.get_double(26);
  m.throughput_iqr = st.get_double(27);
  m.throughput_cv = st.get_double(28);
  m.secondary_throughput_median = st.get_optional_double(29);
  m.step_time_median_s = st.get_double(30);
  m.step_time_min_s = st.get_double(31);
  m.step_time_max_s = st.get_double(32);
  m.input_wait_fraction = st.get_optional_double(34);
  m.setup_s = st.get_optional_double(35);
  m.evaluate_s = st.get_optional_double(36);
  m.quality_reference = st.get_optional_double(39);
}

}  // namespace

std::vector<TrialRecord> Store::trials(int64_t sweep_id, TrialFields fields) {
  const bool all = fields == TrialFields::all;
  std::string columns;
  for (const auto& [column, brief] : kTrialColumns) {
    columns += (columns.empty() ? "" : ", ") + std::string(all || brief ? column : "NULL");
  }
  auto st = db_.prepare("SELECT " + columns +
                        " FROM trials t LEFT JOIN trial_summary m ON m.trial_id = t.id "
                        "WHERE t.sweep_id = ? ORDER BY t.ordinal");
  st.bind(1, sweep_id);
  std::vector<TrialRecord> out;
  // Sized first: a run of 100,000 trials grown by doubling moved every
  // record about twice.
  out.reserve(static_cast<size_t>(trial_counts(sweep_id).total));
  while (st.step()) {
    // Built in place: a record is 700 bytes.
    TrialRecord& r = out.emplace_back();
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
    if (!all) continue;
    r.plan.workload = st.get_text(5);
    r.plan.plugin_version = st.get_text(6);
    r.plan.plugin_path = st.get_text(7);
    r.plan.plugin_hash = st.get_text(8);
    r.plan.abi_version = st.get_text(9);
    r.plan.config_hash = st.get_text(11);
    if (!st.is_null(14)) r.signal = st.get_int(14);
    r.run_plugin_hash = st.get_optional_text(43);
  }
  return out;
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

std::vector<BlockSample> Store::blocks(int64_t trial_id) {
  // One prepared statement for every call: listing commands read the blocks
  // of thousands of trials one trial after another, in the trials' order,
  // which is cheaper than one joined query that has to be sorted.
  if (!blocks_query_) {
    blocks_query_.emplace(
        db_.prepare("SELECT idx, steps, seconds, samples, secondary_samples, cycle, device_seconds "
                    "FROM blocks WHERE trial_id = ? "
                    "ORDER BY idx"));
  }
  Statement& st = *blocks_query_;
  st.reset();
  st.bind(1, trial_id);
  std::vector<BlockSample> out;
  while (st.step()) {
    BlockSample& b = out.emplace_back();
    b.idx = st.get_int(0);
    b.steps = st.get_int(1);
    b.seconds = st.get_double(2);
    b.samples = st.get_double(3);
    b.secondary_samples = st.get_double(4);
    if (!st.is_null(5)) b.cycle = st.get_int(5);
    b.device_seconds = st.get_optional_double(6);
  }
  return out;
}

std::vector<MetricSample> Store::metrics(int64_t trial_id) {
  auto st = db_.prepare(
      "SELECT kind, at_step, name, value FROM metrics WHERE trial_id = ? "
      "ORDER BY kind, at_step, name");
  st.bind(1, trial_id);
  std::vector<MetricSample> out;
  while (st.step()) {
    out.push_back({st.get_text(0), st.get_int(1), st.get_text(2), st.get_double(3)});
  }
  return out;
}

std::optional<double> Store::last_stat(int64_t trial_id, const std::string& name) {
  auto st = db_.prepare(
      "SELECT value FROM metrics WHERE trial_id = ? AND kind = 'stat' AND name = ? "
      "ORDER BY at_step DESC LIMIT 1");
  st.bind(1, trial_id).bind(2, name);
  if (!st.step()) return std::nullopt;
  return st.get_double(0);
}

void Store::for_each_series(int64_t sweep_id, const std::function<void(int64_t, BlockSeries&)>& f) {
  auto st = db_.prepare(
      "SELECT s.trial_id, s.blocks, s.throughput, s.cycles FROM block_series s JOIN trials t ON "
      "t.id = s.trial_id WHERE t.sweep_id = ?");
  st.bind(1, sweep_id);
  BlockSeries s;
  while (st.step()) {
    const int64_t id = st.get_int(0);
    unpack_series(id, st.get_int(1), st.get_blob(2), st.get_blob(3), s);
    f(id, s);
  }
}

std::unordered_map<int64_t, std::vector<std::optional<double>>> Store::last_stats(
    int64_t sweep_id, const std::vector<std::string>& names) {
  std::unordered_map<int64_t, std::vector<std::optional<double>>> out;
  if (names.empty()) return out;
  std::string in;
  for (size_t i = 0; i < names.size(); ++i) in += i == 0 ? "?" : ", ?";
  // Unsorted (sorting 100,000s of rows cost more than the rest): the value
  // at the highest step is kept as the rows come.
  auto st = db_.prepare(
      "SELECT m.trial_id, m.name, m.at_step, m.value FROM metrics m JOIN trials t ON t.id = "
      "m.trial_id WHERE t.sweep_id = ? AND m.kind = 'stat' AND m.name IN (" +
      in + ")");
  st.bind(1, sweep_id);
  for (size_t i = 0; i < names.size(); ++i) st.bind(static_cast<int>(i) + 2, names[i]);
  // A trial's rows come together (the join walks the trials): its entries
  // are looked up once per trial, not once per row, and names compared
  // without copying them.
  std::unordered_map<int64_t, std::vector<int64_t>> steps;
  int64_t current = 0;
  std::vector<std::optional<double>>* values = nullptr;
  std::vector<int64_t>* at_steps = nullptr;
  while (st.step()) {
    const int64_t trial = st.get_int(0);
    const std::string_view name = st.get_text_view(1);
    const auto k = static_cast<size_t>(std::find(names.begin(), names.end(), name) - names.begin());
    if (k == names.size()) continue;
    const int64_t at = st.get_int(2);
    if (values == nullptr || trial != current) {
      current = trial;
      values = &out[trial];
      at_steps = &steps[trial];
      if (values->empty()) {
        values->resize(names.size());
        at_steps->assign(names.size(), INT64_MIN);
      }
    }
    if (at < (*at_steps)[k]) continue;
    (*at_steps)[k] = at;
    (*values)[k] = st.get_double(3);
  }
  return out;
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

void Store::mark_started(int64_t trial_id, const std::string& started_at) {
  auto st = db_.prepare("UPDATE trials SET started_at = ? WHERE id = ? AND status = 'pending'");
  st.bind(1, started_at).bind(2, trial_id);
  st.run();
}

std::vector<EnvironmentInfo> Store::environments(std::optional<int64_t> sweep_id) {
  auto st = db_.prepare(
      "SELECT e.fingerprint, e.hostname, e.os, e.cpu_model, e.cpu_cores, e.torch_version, e.blas, "
      "e.threads, e.cuda_available, e.gpus, e.gpusweep_version, e.git_commit, e.details_json, "
      "e.id FROM environments e " +
      std::string(sweep_id ? "WHERE e.id IN (SELECT environment_id FROM trials WHERE sweep_id = ? "
                             "AND environment_id IS NOT NULL) "
                           : "") +
      "ORDER BY e.id");
  if (sweep_id) st.bind(1, *sweep_id);
  std::vector<EnvironmentInfo> out;
  while (st.step()) {
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
    out.push_back(std::move(e));
  }
  return out;
}

Store::QueryResult Store::read_query(const std::string& sql) {
  db_.exec("PRAGMA query_only = ON");
  {
    // Refuse writes before running anything, with a message that says why.
    sqlite3_stmt* raw = nullptr;
    const char* tail = nullptr;
    if (sqlite3_prepare_v2(db_.handle(), sql.c_str(), -1, &raw, &tail) != SQLITE_OK) {
      const std::string msg = sqlite3_errmsg(db_.handle());
      sqlite3_finalize(raw);
      throw DbError(msg, SQLITE_ERROR);
    }
    const bool readonly = raw == nullptr || sqlite3_stmt_readonly(raw) != 0;
    sqlite3_finalize(raw);
    if (!readonly) {
      throw DbError(
          "the database is opened read-only; this statement would write (use the "
          "sqlite3 shell on a copy if you really mean to change it)",
          SQLITE_READONLY);
    }
    if (tail != nullptr && std::string(tail).find_first_not_of(" \t\r\n;") != std::string::npos) {
      throw DbError("give one statement at a time", SQLITE_MISUSE);
    }
  }
  QueryResult r;
  Statement st = db_.prepare(sql);
  for (int i = 0; i < st.columns(); ++i) r.columns.push_back(st.column_name(i));
  while (st.step()) {
    nlohmann::json row = nlohmann::json::object();
    for (int i = 0; i < st.columns(); ++i) {
      const std::string& name = r.columns[static_cast<size_t>(i)];
      switch (st.column_type(i)) {
        case SQLITE_INTEGER:
          row[name] = st.get_int(i);
          break;
        case SQLITE_FLOAT:
          row[name] = st.get_double(i);
          break;
        case SQLITE_NULL:
          row[name] = nullptr;
          break;
        default:
          row[name] = st.get_text(i);
      }
    }
    r.rows.push_back(std::move(row));
  }
  return r;
}

}  // namespace gpusweep::db
