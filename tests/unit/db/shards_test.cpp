// Merging shard databases: idempotent, only finished trials, environments
// kept per trial, shards from older schema versions read through a copy.
#include <gpusweep/db/migrate.hpp>
#include <gpusweep/db/shards.hpp>
#include <gpusweep/db/store.hpp>

#include "count.hpp"
#include "migrations.hpp"

#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>
#include <filesystem>
#include <fstream>

using namespace gpusweep::db;
using Catch::Matchers::Contains;
using gpusweep::db::TrialStatus;
using gpusweep::test::count;

namespace {

// Each test's scratch folder.
struct TempDir : gpusweep::test::TempDir {
  TempDir() : gpusweep::test::TempDir("gpusweep_shards_test") {}
};

TrialPlan plan(int64_t config, int64_t repeat, int64_t ordinal) {
  TrialPlan p;
  p.ordinal = ordinal;
  p.config_index = config;
  p.repeat = repeat;
  p.workload = "noop";
  p.plugin_version = "1.0.0";
  p.config_json = "{\"x\":" + std::to_string(config) + "}";
  p.config_hash = "hash" + std::to_string(config);
  return p;
}

TrialOutcome ok_outcome(const std::string& host, double throughput, int64_t task) {
  TrialOutcome o;
  o.status = TrialStatus::ok;
  o.started_at = "2026-01-01T00:00:00Z";
  o.finished_at = "2026-01-01T00:00:01Z";
  o.wall_s = 1;
  o.stderr_tail = "tail of " + host;
  Summary s;
  s.unit = "steps";
  s.blocks = 2;
  s.throughput_median = throughput;
  o.summary = s;
  o.blocks = {{0, 10, 0.1, 10, 0}, {1, 10, 0.2, 10, 0}};
  o.metrics = {{"eval", 20, "quality", 1.0}};
  EnvironmentInfo env;
  env.fingerprint = "fp-" + host;
  env.hostname = host;
  o.environment = env;
  o.slurm_job_id = 900;
  o.slurm_task_id = task;
  return o;
}

// Shard `index` of 2 of a 4-trial run (configs 0..3, round robin), with the
// first `finish` of its trials committed ok on node `host`.
void write_shard(const std::string& path, int64_t index, int finish, const std::string& host,
                 const std::string& plugin_build = "build-a") {
  Store store(path, Connection::Mode::read_write);
  SweepRecord s;
  s.name = "sharded";
  s.workload = "noop";
  s.spec_json = "{\"name\":\"sharded\"}";
  s.spec_hash = "spec";
  s.run_key = "launch:test";
  s.shard_index = index;
  s.shard_count = 2;
  std::vector<TrialPlan> trials;
  for (int64_t c = index - 1; c < 4; c += 2) {
    trials.push_back(plan(c, 0, c));
    trials.back().plugin_hash = "build-a";
  }
  const int64_t id = store.create_sweep(s, trials);
  const auto rows = store.trials(id);
  for (int i = 0; i < finish; ++i) {
    TrialOutcome o = ok_outcome(host, 100.0 * (rows[i].plan.config_index + 1), index);
    o.run_plugin_hash = plugin_build;
    store.commit_trial(rows[i].id, o);
  }
}

// Every row of every table, as text: what "changes nothing" compares.
std::string dump(Connection& db) {
  std::string out;
  auto tables = db.prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
      "ORDER BY name");
  while (tables.step()) {
    const std::string table = tables.get_text(0);
    out += "## " + table + "\n";
    auto rows = db.prepare("SELECT * FROM \"" + table + "\" ORDER BY 1, 2");
    while (rows.step()) {
      for (int c = 0; c < rows.columns(); ++c) {
        out += rows.is_null(c) ? std::string("NULL") : rows.get_text(c);
        out += "|";
      }
      out += "\n";
    }
  }
  return out;
}

}  // namespace

TEST_CASE("merging shards is idempotent and keeps each trial's node and Slurm ids", "[db][merge]") {
  TempDir d;
  write_shard(d.file("s1.db"), 1, 2, "node-a");
  write_shard(d.file("s2.db"), 2, 2, "node-b");
  Store main(d.file("main.db"), Connection::Mode::read_write);
  Connection& db = main.connection();

  const auto r1 = merge_shard(main, d.file("s1.db"));
  REQUIRE(r1.size() == 1);
  CHECK(r1[0].shard_index == 1);
  CHECK(r1[0].shard_count == 2);
  CHECK(r1[0].trials == 2);
  CHECK(r1[0].imported == 2);
  CHECK(r1[0].already == 0);
  CHECK_FALSE(r1[0].run_finished);  // shard 2 is missing
  CHECK(count(db, "SELECT status = 'running' FROM sweeps") == 1);

  const auto r2 = merge_shard(main, d.file("s2.db"));
  REQUIRE(r2.size() == 1);
  CHECK(r2[0].imported == 2);
  CHECK(r2[0].into_sweep_id == r1[0].into_sweep_id);  // one run, gathered from two shards
  CHECK(r2[0].run_finished);
  CHECK(count(db, "SELECT count(*) FROM sweeps") == 1);
  CHECK(count(db,
              "SELECT status = 'finished' AND run_key = 'launch:test' AND "
              "shard_count = 2 AND shard_index IS NULL FROM sweeps") == 1);
  CHECK(count(db, "SELECT count(*) FROM trials WHERE status = 'ok'") == 4);
  CHECK(count(db, "SELECT count(*) FROM trial_summary") == 4);
  CHECK(count(db, "SELECT count(*) FROM blocks") == 8);
  // Each trial's block series came with its blocks, the same bytes.
  CHECK(count(db,
              "SELECT count(*) FROM block_series s JOIN trials t ON t.id = s.trial_id WHERE "
              "t.status = 'ok' AND s.blocks = 2 AND length(s.throughput) = 16") == 4);
  CHECK(count(db, "SELECT count(*) FROM metrics") == 4);
  CHECK(count(db, "SELECT count(*) FROM merged_shards") == 2);
  // The trial's own numbers, plan position, node and array task came along.
  CHECK(count(db,
              "SELECT throughput_median FROM trial_summary m JOIN trials t ON "
              "t.id = m.trial_id WHERE t.config_index = 2") == 300);
  CHECK(count(db, "SELECT ordinal FROM trials WHERE config_index = 3") == 3);
  CHECK(count(db, "SELECT count(*) FROM environments") == 2);
  CHECK(count(db,
              "SELECT count(*) FROM trials t JOIN environments e ON e.id = t.environment_id "
              "WHERE (t.config_index % 2 = 0 AND e.hostname = 'node-a' AND t.slurm_task_id = 1) "
              "OR (t.config_index % 2 = 1 AND e.hostname = 'node-b' AND t.slurm_task_id = 2)") ==
        4);
  CHECK(count(db, "SELECT count(*) FROM trials WHERE slurm_job_id = 900") == 4);
  CHECK(count(db, "SELECT count(*) FROM trials WHERE stderr_tail LIKE 'tail of node-%'") == 4);

  // Merging again, in any order, changes nothing at all.
  const std::string before = dump(db);
  for (const char* shard : {"s2.db", "s1.db", "s1.db"}) {
    const auto again = merge_shard(main, d.file(shard));
    REQUIRE(again.size() == 1);
    CHECK(again[0].imported == 0);
    CHECK(again[0].already == 2);
  }
  CHECK(dump(db) == before);
  auto check = db.prepare("PRAGMA integrity_check");
  REQUIRE(check.step());
  CHECK(check.get_text(0) == "ok");
}

TEST_CASE("a partly written shard gives only its finished trials, the rest later", "[db][merge]") {
  TempDir d;
  write_shard(d.file("s1.db"), 1, 1, "node-a");
  {
    // The second trial was being run when the task died: still pending. An
    // interrupted one is not finished either.
    Store shard(d.file("s1.db"), Connection::Mode::read_write);
    shard.connection().exec("UPDATE trials SET status = 'interrupted' WHERE config_index = 2");
  }
  Store main(d.file("main.db"), Connection::Mode::read_write);
  Connection& db = main.connection();
  auto r = merge_shard(main, d.file("s1.db"));
  REQUIRE(r.size() == 1);
  CHECK(r[0].imported == 1);
  CHECK(r[0].unfinished == 1);
  CHECK(count(db, "SELECT count(*) FROM trials WHERE status = 'ok'") == 1);
  CHECK(count(db, "SELECT count(*) FROM trials WHERE status = 'pending'") == 1);
  CHECK(count(db, "SELECT count(*) FROM blocks") == 2);
  CHECK(count(db, "SELECT trials_finished FROM merged_shards") == 1);

  // The shard resumes and finishes its trial; the next merge brings it in.
  {
    Store shard(d.file("s1.db"), Connection::Mode::read_write);
    const auto rows = shard.trials(shard.latest_sweep("sharded")->id);
    shard.commit_trial(rows[1].id, ok_outcome("node-c", 5, 1));
  }
  r = merge_shard(main, d.file("s1.db"));
  CHECK(r[0].imported == 1);
  CHECK(r[0].already == 1);
  CHECK(r[0].unfinished == 0);
  CHECK(count(db, "SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
  CHECK(count(db, "SELECT trials_finished FROM merged_shards") == 2);
  CHECK(count(db, "SELECT count(*) FROM environments") == 2);
}

TEST_CASE("a shard from an older database version merges through a migrated copy", "[db][merge]") {
  TempDir d;
  const std::string old = d.file("old.db");
  {
    // Only migrations 001 and 002: no shard columns, no Slurm ids.
    Connection c(old, Connection::Mode::read_write);
    c.exec("PRAGMA journal_mode = WAL");
    c.exec(embedded_migrations().at(0).sql);
    c.exec(embedded_migrations().at(1).sql);
    c.exec("PRAGMA user_version = 2");
    c.exec(
        "INSERT INTO sweeps (name, workload, spec_json, spec_hash, status) "
        "VALUES ('old', 'noop', '{}', 'h', 'finished')");
    c.exec(
        "INSERT INTO environments (fingerprint, hostname, details_json) "
        "VALUES ('fp-old', 'old-node', '{}')");
    c.exec(
        "INSERT INTO trials (sweep_id, ordinal, config_index, repeat, workload, plugin_version, "
        "config_json, config_hash, status, environment_id, wall_s) VALUES "
        "(1, 0, 0, 0, 'noop', '1', '{}', 'c0', 'ok', 1, 2.5), "
        "(1, 1, 1, 0, 'noop', '1', '{}', 'c1', 'pending', NULL, NULL)");
    c.exec(
        "INSERT INTO trial_summary (trial_id, unit, warmup_steps, steps_per_block, blocks, "
        "throughput_median, quality_higher_is_better) VALUES (1, 'steps', 0, 1, 5, 42, 1)");
    c.exec(
        "INSERT INTO blocks (trial_id, idx, steps, seconds, samples) VALUES "
        "(1, 0, 1, 0.1, 1), (1, 1, 1, 0.1, 1)");
  }
  REQUIRE(schema_version() > 2);
  Store main(d.file("main.db"), Connection::Mode::read_write);
  Connection& db = main.connection();
  const auto r = merge_shard(main, old);
  REQUIRE(r.size() == 1);
  CHECK(r[0].sweep == "old");
  CHECK(r[0].shard_index == 1);  // a whole run: shard 1 of 1
  CHECK(r[0].shard_count == 1);
  CHECK(r[0].imported == 1);
  CHECK(r[0].unfinished == 1);
  CHECK(count(db,
              "SELECT count(*) FROM trials WHERE status = 'ok' AND wall_s = 2.5 AND "
              "slurm_job_id IS NULL") == 1);
  CHECK(count(db, "SELECT throughput_median FROM trial_summary") == 42);
  CHECK(count(db, "SELECT quality_higher_is_better FROM trial_summary") == 1);
  CHECK(count(db, "SELECT count(*) FROM blocks") == 2);
  // The migrated copy's series (backfilled from its blocks) came along.
  CHECK(count(db, "SELECT count(*) FROM block_series WHERE blocks = 2") == 1);
  CHECK(count(db,
              "SELECT count(*) FROM trials t JOIN environments e ON e.id = t.environment_id "
              "WHERE e.hostname = 'old-node'") == 1);
  // The shard file itself was read, never written (nor upgraded).
  {
    Connection c(old, Connection::Mode::read_only);
    CHECK(current_version(c) == 2);
    CHECK(
        count(c, "SELECT count(*) FROM pragma_table_info('trials') WHERE name = 'slurm_job_id'") ==
        0);
  }
  const std::string before = dump(db);
  CHECK(merge_shard(main, old)[0].imported == 0);
  CHECK(dump(db) == before);
}

TEST_CASE("merge refuses a shard run by another plugin build unless told", "[db][merge]") {
  TempDir d;
  write_shard(d.file("s1.db"), 1, 2, "node-a");
  write_shard(d.file("s2.db"), 2, 2, "node-b", "build-b");  // a task ran a rebuilt plugin
  Store main(d.file("main.db"), Connection::Mode::read_write);
  merge_shard(main, d.file("s1.db"));
  const std::string before = dump(main.connection());
  CHECK_THROWS_WITH(merge_shard(main, d.file("s2.db")),
                    Contains("has trials run by plugin build build-b") &&
                        Contains("is of build build-a") && Contains("--allow-plugin-change"));
  CHECK(dump(main.connection()) == before);  // nothing of the refused shard was kept

  const auto r = merge_shard(main, d.file("s2.db"), /*allow_plugin_change=*/true);
  REQUIRE(r.size() == 1);
  CHECK(r[0].imported == 2);
  CHECK(count(main.connection(),
              "SELECT count(*) FROM trials WHERE run_plugin_hash = "
              "'build-b' AND plugin_hash = 'build-a'") == 2);
  CHECK(count(main.connection(),
              "SELECT count(*) FROM trials WHERE run_plugin_hash = "
              "plugin_hash") == 2);
}

TEST_CASE("merge refuses what is not a shard, naming the file", "[db][merge]") {
  TempDir d;
  Store main(d.file("main.db"), Connection::Mode::read_write);
  CHECK_THROWS_WITH(merge_shard(main, d.file("missing.db")), Contains("missing.db"));
  std::ofstream(d.file("text.db")) << "not a database at all, just some text that is long enough";
  CHECK_THROWS_WITH(merge_shard(main, d.file("text.db")), Contains("text.db"));
  { Connection c(d.file("empty.db"), Connection::Mode::read_write); }
  CHECK_THROWS_WITH(merge_shard(main, d.file("empty.db")), Contains("not a gpusweep database"));
  {
    Connection c(d.file("newer.db"), Connection::Mode::read_write);
    c.exec("PRAGMA user_version = 999");
  }
  CHECK_THROWS_WITH(merge_shard(main, d.file("newer.db")), Contains("newer"));
  CHECK_THROWS_WITH(merge_shard(main, d.file("main.db")), Contains("being merged into"));
  // Nothing was half-imported.
  CHECK(count(main.connection(), "SELECT count(*) FROM sweeps") == 0);

  // Two different sweeps under one run key are not mixed.
  write_shard(d.file("a.db"), 1, 1, "n");
  {
    Store other(d.file("b.db"), Connection::Mode::read_write);
    SweepRecord s;
    s.name = "sharded";
    s.workload = "noop";
    s.spec_json = "{}";
    s.spec_hash = "another spec";
    s.run_key = "launch:test";
    s.shard_index = 2;
    s.shard_count = 2;
    other.create_sweep(s, {plan(1, 0, 1)});
  }
  merge_shard(main, d.file("a.db"));
  CHECK_THROWS_WITH(merge_shard(main, d.file("b.db")), Contains("does not match run"));
  CHECK(count(main.connection(), "SELECT count(*) FROM trials") == 2);
}
