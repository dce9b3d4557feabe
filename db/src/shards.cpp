// Merging shard databases and recording launches; see shards.hpp.
#include <gpusweep/db/migrate.hpp>
#include <gpusweep/db/shards.hpp>

#include "copy.hpp"
#include "sweep_row.hpp"

#include <unistd.h>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace gpusweep::db {

namespace {

namespace fs = std::filesystem;

// Statuses of a trial that has not finished: never imported, re-run instead.
constexpr const char* kUnfinished = "('pending', 'interrupted')";

// Copies a consistent snapshot of `source` (only committed transactions)
// into `dest`, then brings the copy to this build's schema.
void snapshot(const std::string& source, const std::string& dest) {
  Connection src(source, Connection::Mode::read_only);
  int version = 0;
  try {
    version = current_version(src);
  } catch (const DbError& e) {
    throw DbError("shard '" + source + "' cannot be read: " + e.what(), e.code());
  }
  require_readable(version, "shard", source,
                   "merge takes the shard databases written by `gpusweep run --shard` or "
                   "`launch`",
                   "merge it with a newer gpusweep");
  migrated_copy(src, dest, "shard '" + source + "'");
}

// The columns of a table of the target database, quoted, minus `skip`.
std::vector<std::string> columns(Connection& db, const std::string& table,
                                 const std::vector<std::string>& skip) {
  auto st = db.prepare("SELECT name FROM pragma_table_info(?) ORDER BY cid");
  st.bind(1, table);
  std::vector<std::string> out;
  while (st.step()) {
    const std::string name = st.get_text(0);
    bool skipped = false;
    for (const auto& s : skip) skipped = skipped || s == name;
    if (!skipped) out.push_back("\"" + name + "\"");
  }
  return out;
}

std::string joined(const std::vector<std::string>& cols, const std::string& prefix = "") {
  std::string out;
  for (const auto& c : cols) out += (out.empty() ? "" : ", ") + prefix + c;
  return out;
}

int64_t scalar(Statement& st) {
  st.step();
  return st.get_int(0);
}

class Merger {
 public:
  Merger(Connection& db, std::string source, bool allow_plugin_change)
      : db_(db), source_(std::move(source)), allow_plugin_change_(allow_plugin_change) {
    // What a finished trial carries beyond its plan; new outcome columns of
    // later migrations are copied without changes here.
    outcome_cols_ = columns(db_, "trials",
                            {"id", "sweep_id", "ordinal", "config_index", "repeat", "workload",
                             "plugin_version", "plugin_path", "plugin_hash", "abi_version",
                             "config_json", "config_hash", "environment_id"});
    env_cols_ = joined(columns(db_, "environments", {"id"}));
    summary_cols_ = joined(columns(db_, "trial_summary", {"trial_id"}));
    block_cols_ = joined(columns(db_, "blocks", {"trial_id"}));
    series_cols_ = joined(columns(db_, "block_series", {"trial_id"}));
    metric_cols_ = joined(columns(db_, "metrics", {"trial_id"}));
  }

  std::vector<MergeResult> run() {
    std::vector<MergeResult> out;
    auto st =
        db_.prepare(std::string("SELECT ") + kSweepColumns + " FROM shard.sweeps ORDER BY id");
    while (st.step()) {
      SweepRecord s = read_sweep(st);
      // A run merged from shards is the result of a merge, not a shard:
      // its shards are merged themselves.
      if (s.run_key && !s.shard_index) continue;
      // An ordinary run (or one from before shards existed) is a whole run:
      // shard 1 of 1 of a key of its own.
      if (!s.run_key) s.run_key = "run:" + s.spec_hash + "@" + s.created_at;
      s.shard_index = s.shard_index.value_or(1);
      s.shard_count = s.shard_count.value_or(1);
      out.push_back(merge_run(s));
    }
    return out;
  }

 private:
  // Refuses a shard whose finished trials ran a plugin build other than the
  // run's: the run's planned hash, or (merged first) the shard's own plan.
  void check_plugin(int64_t into, int64_t shard_run) {
    auto q = db_.prepare(
        std::string("WITH run(hash) AS (SELECT plugin_hash FROM main.trials WHERE sweep_id = ?2 "
                    "AND plugin_hash IS NOT NULL UNION ALL SELECT plugin_hash FROM shard.trials "
                    "WHERE sweep_id = ?1 AND plugin_hash IS NOT NULL AND NOT EXISTS (SELECT 1 "
                    "FROM main.trials WHERE sweep_id = ?2)), "
                    "ran(hash, path) AS (SELECT coalesce(run_plugin_hash, plugin_hash), "
                    "plugin_path FROM shard.trials WHERE sweep_id = ?1 AND status NOT IN ") +
        kUnfinished +
        ") SELECT ran.hash, ran.path, (SELECT hash FROM run LIMIT 1) FROM ran WHERE "
        "ran.hash IS NOT NULL AND EXISTS (SELECT 1 FROM run) AND ran.hash NOT IN (SELECT hash "
        "FROM run) LIMIT 1");
    q.bind(1, shard_run).bind(2, into);
    if (!q.step()) return;
    throw DbError("shard '" + source_ + "' has trials run by plugin build " +
                      q.get_text(0).substr(0, 12) + " (" + q.get_text(1) + "), but run " +
                      std::to_string(into) + " of '" + db_.path() + "' is of build " +
                      q.get_text(2).substr(0, 12) +
                      ": results of two plugin builds would be compared as one; re-run the "
                      "shard with the run's plugin, or pass --allow-plugin-change to merge "
                      "them anyway (each trial keeps the hash of the build that ran it)",
                  SQLITE_CONSTRAINT);
  }

  int64_t target_run(const SweepRecord& s) {
    auto find = db_.prepare(
        "SELECT id, spec_hash, shard_count FROM main.sweeps WHERE run_key = ? AND "
        "shard_index IS NULL ORDER BY id DESC LIMIT 1");
    find.bind(1, *s.run_key);
    if (find.step()) {
      const int64_t id = find.get_int(0);
      if (find.get_text(1) != s.spec_hash || find.get_int(2) != *s.shard_count) {
        throw DbError("shard '" + source_ + "' (" + std::to_string(*s.shard_index) + "/" +
                          std::to_string(*s.shard_count) + " of run key '" + *s.run_key +
                          "') does not match run " + std::to_string(id) + " of '" + db_.path() +
                          "', merged from the same key with another sweep or shard count; "
                          "merge it into another --db",
                      SQLITE_CONSTRAINT);
      }
      return id;
    }
    auto ins = db_.prepare(
        "INSERT INTO main.sweeps (name, workload, file_path, file_hash, spec_json, spec_hash, "
        "status, run_key, shard_count, kind) VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?)");
    ins.bind(1, s.name).bind(2, s.workload).bind(3, s.file_path).bind(4, s.file_hash);
    ins.bind(5, s.spec_json).bind(6, s.spec_hash).bind(7, s.run_key).bind(8, s.shard_count);
    ins.bind(9, run_kind_name(s.kind));
    ins.run();
    return db_.last_insert_rowid();
  }

  // Long by design: the statements of one merge transaction (find or create
  // the run, copy environments, trials, summaries, blocks and metrics, mark
  // it finished), in the order they must run.
  MergeResult merge_run(const SweepRecord& s) {
    MergeResult r;
    r.source = source_;
    r.sweep = s.name;
    r.shard_index = *s.shard_index;
    r.shard_count = *s.shard_count;
    const int64_t into = target_run(s);
    r.into_sweep_id = into;
    if (!allow_plugin_change_) check_plugin(into, s.id);

    // Every trial of the shard has a row in the run (pending until merged).
    auto plan = db_.prepare(
        "INSERT OR IGNORE INTO main.trials (sweep_id, ordinal, config_index, repeat, workload, "
        "plugin_version, plugin_path, plugin_hash, abi_version, config_json, config_hash) "
        "SELECT ?, ordinal, config_index, repeat, workload, plugin_version, plugin_path, "
        "plugin_hash, abi_version, config_json, config_hash FROM shard.trials WHERE sweep_id = ?");
    plan.bind(1, into).bind(2, s.id);
    plan.run();

    auto counts = db_.prepare(std::string("SELECT count(*), coalesce(sum(status NOT IN ") +
                              kUnfinished + "), 0) FROM shard.trials WHERE sweep_id = ?");
    counts.bind(1, s.id);
    counts.step();
    r.trials = counts.get_int(0);
    const int64_t finished = counts.get_int(1);
    r.unfinished = r.trials - finished;

    // The machines the shard's finished trials ran on (nodes differ).
    auto envs = db_.prepare("INSERT OR IGNORE INTO main.environments (" + env_cols_ + ") SELECT " +
                            env_cols_ +
                            " FROM shard.environments WHERE id IN (SELECT environment_id FROM "
                            "shard.trials WHERE sweep_id = ? AND status NOT IN " +
                            kUnfinished + ")");
    envs.bind(1, s.id);
    envs.run();

    // Finished in the shard, not yet in the run: (shard trial, run trial).
    auto pairs =
        db_.prepare(std::string("SELECT s.id, m.id FROM shard.trials s JOIN main.trials m ON "
                                "m.sweep_id = ? AND m.config_hash = s.config_hash AND "
                                "m.repeat = s.repeat WHERE s.sweep_id = ? AND s.status NOT IN ") +
                    kUnfinished + " AND m.status IN " + kUnfinished + " ORDER BY s.id");
    pairs.bind(1, into).bind(2, s.id);
    // Read in full before the updates below change the rows the query reads.
    std::vector<std::pair<int64_t, int64_t>> to_import;
    while (pairs.step()) to_import.emplace_back(pairs.get_int(0), pairs.get_int(1));

    auto outcome =
        db_.prepare("UPDATE main.trials SET (" + joined(outcome_cols_) +
                    ", environment_id) = (SELECT " + joined(outcome_cols_, "s.") +
                    ", (SELECT me.id FROM main.environments me JOIN shard.environments se ON "
                    "se.fingerprint = me.fingerprint WHERE se.id = s.environment_id) "
                    "FROM shard.trials s WHERE s.id = ?) WHERE id = ?");
    std::vector<Statement> clear;
    for (const char* table : {"trial_summary", "blocks", "block_series", "metrics"}) {
      clear.push_back(
          db_.prepare(std::string("DELETE FROM main.") + table + " WHERE trial_id = ?"));
    }
    auto summary =
        db_.prepare("INSERT INTO main.trial_summary (trial_id, " + summary_cols_ + ") SELECT ?, " +
                    summary_cols_ + " FROM shard.trial_summary WHERE trial_id = ?");
    auto blocks = db_.prepare("INSERT INTO main.blocks (trial_id, " + block_cols_ + ") SELECT ?, " +
                              block_cols_ + " FROM shard.blocks WHERE trial_id = ?");
    auto series =
        db_.prepare("INSERT INTO main.block_series (trial_id, " + series_cols_ + ") SELECT ?, " +
                    series_cols_ + " FROM shard.block_series WHERE trial_id = ?");
    auto metrics =
        db_.prepare("INSERT INTO main.metrics (trial_id, " + metric_cols_ + ") SELECT ?, " +
                    metric_cols_ + " FROM shard.metrics WHERE trial_id = ?");
    for (const auto& [from, to] : to_import) {
      outcome.reset();
      outcome.bind(1, from).bind(2, to);
      outcome.run();
      for (auto& c : clear) {
        c.reset();
        c.bind(1, to);
        c.run();
      }
      for (Statement* st : {&summary, &blocks, &series, &metrics}) {
        st->reset();
        st->bind(1, to).bind(2, from);
        st->run();
      }
    }
    r.imported = static_cast<int64_t>(to_import.size());
    r.already = finished - r.imported;

    // Which shards went into the run; rewritten only when something changed,
    // so that merging again leaves the database as it was.
    auto shard = db_.prepare(
        "INSERT INTO main.merged_shards (sweep_id, shard_index, shard_count, source, trials, "
        "trials_finished) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (sweep_id, shard_index) DO UPDATE "
        "SET shard_count = excluded.shard_count, source = excluded.source, trials = "
        "excluded.trials, trials_finished = excluded.trials_finished, merged_at = "
        "excluded.merged_at WHERE excluded.source != source OR excluded.trials != trials OR "
        "excluded.trials_finished != trials_finished");
    shard.bind(1, into).bind(2, r.shard_index).bind(3, r.shard_count).bind(4, source_);
    shard.bind(5, r.trials).bind(6, finished);
    shard.run();

    auto merged = db_.prepare("SELECT count(*) FROM main.merged_shards WHERE sweep_id = ?");
    merged.bind(1, into);
    auto open = db_.prepare(std::string("SELECT count(*) FROM main.trials WHERE sweep_id = ? AND "
                                        "status IN ") +
                            kUnfinished);
    open.bind(1, into);
    r.run_finished = scalar(merged) >= r.shard_count && scalar(open) == 0;
    const std::string status = r.run_finished ? "finished" : "running";
    auto up = db_.prepare(
        "UPDATE main.sweeps SET status = ?, finished_at = CASE WHEN ? = 'finished' THEN "
        "strftime('%Y-%m-%dT%H:%M:%fZ', 'now') END WHERE id = ? AND status != ?");
    up.bind(1, status).bind(2, status).bind(3, into).bind(4, status);
    up.run();
    return r;
  }

  Connection& db_;
  std::string source_;
  bool allow_plugin_change_;
  std::vector<std::string> outcome_cols_;
  std::string env_cols_, summary_cols_, block_cols_, series_cols_, metric_cols_;
};

// ATTACHes a database for the lifetime of the object.
class Attached {
 public:
  Attached(Connection& db, const std::string& path, const std::string& as) : db_(db), as_(as) {
    auto st = db_.prepare("ATTACH DATABASE ? AS " + as_);
    st.bind(1, path);
    st.run();
  }
  ~Attached() {
    try {
      db_.exec("DETACH DATABASE " + as_);
    } catch (const DbError&) {
      // Nothing to do: the connection closes soon, which detaches too.
    }
  }
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;

 private:
  Connection& db_;
  std::string as_;
};

}  // namespace

std::vector<MergeResult> merge_shard(Store& into, const std::string& shard_path,
                                     bool allow_plugin_change) {
  std::error_code ec;
  if (!fs::is_regular_file(shard_path, ec)) {
    throw DbError("no shard database at '" + shard_path + "'", SQLITE_CANTOPEN);
  }
  const std::string source = fs::canonical(shard_path).string();
  if (fs::exists(into.connection().path(), ec) &&
      fs::equivalent(source, into.connection().path(), ec)) {
    throw DbError("'" + shard_path +
                      "' is the database being merged into; pass the shards and "
                      "another --db",
                  SQLITE_MISUSE);
  }
  TempFile copy("gpusweep-merge");
  snapshot(source, copy.path());
  Connection& db = into.connection();
  Attached attached(db, copy.path(), "shard");
  Merger merger(db, source, allow_plugin_change);
  Transaction tx(db);
  auto results = merger.run();
  tx.commit();
  return results;
}

int64_t record_launch(Store& store, int64_t sweep_id, const std::string& scheduler,
                      const std::string& run_dir, int64_t tasks) {
  auto st = store.connection().prepare(
      "INSERT INTO launches (sweep_id, scheduler, run_dir, tasks) VALUES (?, ?, ?, ?)");
  st.bind(1, sweep_id).bind(2, scheduler).bind(3, run_dir).bind(4, tasks);
  st.run();
  return store.connection().last_insert_rowid();
}

void set_launch_job(Store& store, int64_t launch_id, int64_t job_id) {
  auto st = store.connection().prepare("UPDATE launches SET job_id = ? WHERE id = ?");
  st.bind(1, job_id).bind(2, launch_id);
  st.run();
}

void delete_sweep(Store& store, int64_t sweep_id) {
  Transaction tx(store.connection());
  // Trials, their summaries, blocks and metrics and the launch rows go
  // with it (ON DELETE CASCADE).
  auto st = store.connection().prepare("DELETE FROM sweeps WHERE id = ?");
  st.bind(1, sweep_id);
  st.run();
  tx.commit();
}

}  // namespace gpusweep::db
