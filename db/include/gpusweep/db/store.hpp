// The results store: sweeps, environments, trials, summaries, block samples
// and metrics (schema in db/migrations, documented in db/README.md). The host
// is the only writer; each finished trial is committed in one transaction.
#pragma once

#include <gpusweep/db/run_status.hpp>
#include <gpusweep/db/sqlite.hpp>
#include <gpusweep/db/trial_status.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace gpusweep::db {

struct SweepRecord {
  int64_t id = 0;
  std::string name;
  std::string workload;
  std::optional<std::string> file_path;
  std::optional<std::string> file_hash;
  std::string spec_json;
  std::string spec_hash;
  SweepStatus status = SweepStatus::running;
  RunKind kind = RunKind::sweep;
  std::string created_at;
  // A run split into shards (`run --shard i/n`): the key its shards share,
  // and in a shard database its slice (1-based index of count). In the run
  // merged from shards, the key and count without an index.
  std::optional<std::string> run_key;
  std::optional<int64_t> shard_index;
  std::optional<int64_t> shard_count;
};

// A trial as planned before it runs.
struct TrialPlan {
  int64_t ordinal = 0;
  int64_t config_index = 0;
  int64_t repeat = 0;
  std::string workload;
  std::string plugin_version;
  std::string plugin_path;
  std::string plugin_hash;
  std::string abi_version;
  std::string config_json;
  std::string config_hash;
};

struct Summary {
  std::string unit;
  std::string secondary_unit;
  int64_t warmup_steps = 0;
  int64_t steps_per_block = 0;
  int64_t blocks = 0;
  double samples_per_step = 0;
  double throughput_median = 0;
  double throughput_mean = 0;
  double throughput_min = 0;
  double throughput_max = 0;
  double throughput_iqr = 0;
  double throughput_cv = 0;
  std::optional<double> secondary_throughput_median;
  double step_time_median_s = 0;
  double step_time_min_s = 0;
  double step_time_max_s = 0;
  std::optional<double> peak_memory_bytes;
  std::optional<double> input_wait_fraction;
  std::optional<double> setup_s;
  std::optional<double> evaluate_s;
  std::optional<std::string> quality_metric;
  std::optional<double> quality;
  std::optional<double> quality_reference;
  std::optional<bool> quality_higher_is_better;
};

struct BlockSample {
  int64_t idx = 0;
  int64_t steps = 0;
  double seconds = 0;
  double samples = 0;
  double secondary_samples = 0;
  // Interleaved trials: the round of turns the block ran in, within the
  // trial's interleave group.
  std::optional<int64_t> cycle;
  // The device's own clock (CUDA events), when it has one.
  std::optional<double> device_seconds;
};

// A block's throughput, samples / seconds, and its step time, seconds /
// steps: none for a block that ran no step or took no time. Every reader of
// blocks (the summary, the series, race, claims, export) takes them here.
std::optional<double> block_throughput(const BlockSample& b);
std::optional<double> block_step_time(const BlockSample& b);

// A trial's blocks as the commands that read whole runs take them (the
// block_series table): the block_throughput of every block that has one, in
// idx order, and each one's cycle.
struct BlockSeries {
  std::vector<double> throughput;
  std::vector<std::optional<int64_t>> cycles;  // parallel to throughput
};
BlockSeries series_of(const std::vector<BlockSample>& blocks);

struct MetricSample {
  std::string kind;  // "eval" | "stat"
  int64_t at_step = 0;
  std::string name;
  double value = 0;
};

struct EnvironmentInfo {
  int64_t id = 0;  // set when read back from the database
  std::string fingerprint;
  std::string hostname;
  std::string os;
  std::string cpu_model;
  int64_t cpu_cores = 0;
  std::string torch_version;
  std::string blas;
  int64_t threads = 0;
  bool cuda_available = false;
  std::string gpus_json = "[]";
  std::string gpusweep_version;
  std::string git_commit;
  std::string details_json = "{}";
};

struct TrialOutcome {
  TrialStatus status = TrialStatus::pending;
  std::optional<std::string> error;
  std::optional<int64_t> exit_code;
  std::optional<int64_t> signal;
  std::string stderr_tail;
  int64_t stderr_bytes = 0;
  std::optional<EnvironmentInfo> environment;
  std::string started_at;
  std::string finished_at;
  double wall_s = 0;
  std::optional<Summary> summary;
  std::vector<BlockSample> blocks;
  std::vector<MetricSample> metrics;
  // The Slurm array job and task that ran the trial, when one did.
  std::optional<int64_t> slurm_job_id;
  std::optional<int64_t> slurm_task_id;
  // The trials interleaved with this one share this id (blocks' cycles
  // count within it); none when it ran alone.
  std::optional<std::string> interleave_group;
  // The hash of the plugin file the trial's worker loaded.
  std::optional<std::string> run_plugin_hash;
};

// What Store::trials reads of each trial (see there).
enum class TrialFields { all, brief };

// A stored trial with its summary (when it finished ok).
struct TrialRecord {
  int64_t id = 0;
  int64_t sweep_id = 0;
  TrialPlan plan;
  TrialStatus status = TrialStatus::pending;
  std::optional<std::string> error;
  std::optional<int64_t> signal;
  std::optional<double> wall_s;
  std::optional<Summary> summary;
  std::optional<int64_t> environment_id;  // where it ran (environments table)
  std::optional<std::string> interleave_group;
  std::optional<std::string> run_plugin_hash;  // the plugin build that ran it
  std::optional<std::string> started_at;       // set when its worker started (mark_started)
  std::optional<std::string> stderr_tail;      // for a trial that ended other than ok
};

// A run's trials counted, for a live view's progress and its change cursor.
struct RunCounts {
  int64_t sweep_id = 0;
  int64_t total = 0;
  int64_t finished = 0;  // neither pending nor interrupted
  int64_t ok = 0;
  int64_t failed = 0;   // finished, not ok
  int64_t started = 0;  // pending with a start recorded: running, if the run's lock is held
  int64_t max_trial_id = 0;
  std::string last_finished_at;
  double finished_wall_s = 0;  // the finished trials' wall time, summed
  double started_s = 0;        // how long the started pending ones have run, summed (now - start)
};

class TempFile;

class Store {
 public:
  // Opens (creating and migrating in read-write mode) the database at path.
  // Read-only never writes the file: a database an older gpusweep wrote is
  // read through a migrated copy in the temporary folder, removed on close
  // (the next read-write open, e.g. `run` or `resume`, upgrades the file).
  Store(const std::string& path, Connection::Mode mode);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // The file this store reads (an upgraded copy's, when it reads one): for a
  // second reader of the same data on another thread.
  const std::string& path() const { return db_.path(); }

  // True when this read-only store reads a migrated copy of an older file.
  bool reads_upgraded_copy() const { return copy_ != nullptr; }
  // How many such copies this process has made (each a whole copy of the
  // file and every pending migration): what a reader that opens an old
  // database again and again pays (serve reads one through db::Snapshots).
  static int64_t upgraded_copies_made();

  // A new run with its planned trials (as pending), in one transaction.
  int64_t create_sweep(const SweepRecord& sweep, const std::vector<TrialPlan>& trials = {});
  void set_sweep_status(int64_t sweep_id, SweepStatus status);
  // Rewrites a run's stored spec, its identity (spec_hash) kept: for what a
  // run learns of itself that does not change what it measures (a resumed
  // check's first finish).
  void set_sweep_spec(int64_t sweep_id, const std::string& spec_json);
  std::optional<SweepRecord> latest_sweep(const std::string& name);
  std::optional<SweepRecord> latest_sweep();
  std::optional<SweepRecord> sweep(int64_t sweep_id);
  // The latest run of shard `shard_index` of the sharded run `run_key`.
  std::optional<SweepRecord> shard_run(const std::string& run_key, int64_t shard_index);
  std::vector<SweepRecord> sweeps();

  // Inserts the planned trials as 'pending', all in one transaction.
  // Their ids, in order.
  std::vector<int64_t> add_trials(int64_t sweep_id, const std::vector<TrialPlan>& trials);
  // A run's trials in ordinal order. TrialFields::brief reads only what the
  // views that read every trial use (ids and place, config_json, status,
  // error, wall_s, environment, interleave group, started_at, stderr_tail,
  // and of the summary its unit, throughput median, peak memory, quality,
  // its metric and direction, samples per step and second throughput and
  // unit), leaving the rest default: at 100,000 trials, 46
  // columns a row cost twice the time of these.
  std::vector<TrialRecord> trials(int64_t sweep_id, TrialFields fields = TrialFields::all);
  // One trial, every field, by its id; none when there is no such trial.
  std::optional<TrialRecord> trial(int64_t trial_id);

  // How many trials a run has, and how many of them have finished (neither
  // pending nor interrupted).
  struct TrialCounts {
    int64_t total = 0;
    int64_t finished = 0;
  };
  TrialCounts trial_counts(int64_t sweep_id);
  // Every run's counts, in one read (a live view's whole refresh), or one
  // run's alone.
  std::vector<RunCounts> run_counts(std::optional<int64_t> sweep_id = std::nullopt);
  // Records that a pending trial's worker started, so that a reader sees it
  // running (a small write of its own, before the trial's commit).
  void mark_started(int64_t trial_id, const std::string& started_at);
  // The distinct environments a run's trials ran in, in the order first
  // recorded; without a run, every environment of the database (a small
  // table: reading it whole is cheaper than finding a big run's, which
  // reads every trial).
  std::vector<EnvironmentInfo> environments(std::optional<int64_t> sweep_id);
  // One environment by its id; none when there is no such row.
  std::optional<EnvironmentInfo> environment(int64_t environment_id);

  // One read-only statement of the user's (`gpusweep sql`): the column names
  // and each row as a JSON object (integers, reals, text, null). Throws
  // DbError, before running anything, for a statement that would write or
  // for more than one statement.
  struct QueryResult {
    std::vector<std::string> columns;
    std::vector<nlohmann::json> rows;
  };
  QueryResult read_query(const std::string& sql);

  // Records a finished trial (status, summary, blocks, metrics, environment)
  // in one transaction.
  void commit_trial(int64_t trial_id, const TrialOutcome& outcome);

  // A trial's blocks in idx order (the query is prepared once per store).
  std::vector<BlockSample> blocks(int64_t trial_id);
  // A trial's block series as compare reads it: its stored row, else (blocks
  // inserted by hand) made from its blocks.
  BlockSeries series(int64_t trial_id);
  std::vector<MetricSample> metrics(int64_t trial_id);
  // The last value (highest step) of statistic `name` of a trial, if any.
  std::optional<double> last_stat(int64_t trial_id, const std::string& name);

  // Reads of a whole run at once, for the commands that read every trial
  // (compare, report, best, serve): one statement each, not one a trial.
  // Every finished trial's block series, one trial at a time, in no
  // particular order: f(trial id, series) may move what it keeps out of the
  // series (reused between calls). A trial with blocks and no series row
  // (blocks inserted by hand) is missing here: read its blocks() instead.
  void for_each_series(int64_t sweep_id, const std::function<void(int64_t, BlockSeries&)>& f);
  // The last value (highest step) of each of `names` (statistics, or of
  // kind "eval" the evaluations) of every trial that has one, by trial id:
  // one value a name, in names' order.
  std::unordered_map<int64_t, std::vector<std::optional<double>>> last_stats(
      int64_t sweep_id, const std::vector<std::string>& names, const std::string& kind = "stat");

  // The connection itself, for db/'s own code and its tests: the host goes
  // through the methods above (scripts/check_layers.py refuses it there).
  Connection& connection() { return db_; }
  // Several reads that must see one state of the database, for the
  // returned object's lifetime (a reader's; see ReadTransaction).
  ReadTransaction read_transaction() { return ReadTransaction(db_); }

 private:
  int64_t upsert_environment(const EnvironmentInfo& env);
  int64_t insert_sweep(const SweepRecord& sweep);
  std::vector<int64_t> insert_trials(int64_t sweep_id, const std::vector<TrialPlan>& trials);
  std::unique_ptr<TempFile> copy_;  // before db_: removed after it closes
  Connection db_;
  std::optional<Statement> blocks_query_;  // after db_: finalized before it closes
  std::optional<Statement> series_query_;
};

}  // namespace gpusweep::db
