// Migrations and the results store.
#include <gpusweep/db/migrate.hpp>
#include <gpusweep/db/store.hpp>

#include "count.hpp"
#include "migrations.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

using namespace gpusweep::db;
using Catch::Matchers::Contains;
using gpusweep::db::TrialStatus;
using gpusweep::test::count;

namespace {

struct TempDb {
  std::string path;
  TempDb() {
    char tmpl[] = "/tmp/gpusweep_db_test_XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = std::string(tmpl) + "/test.db";
  }
  ~TempDb() { std::filesystem::remove_all(std::filesystem::path(path).parent_path()); }
};

TrialPlan plan(int64_t config, int64_t repeat) {
  TrialPlan p;
  p.ordinal = config * 10 + repeat;
  p.config_index = config;
  p.repeat = repeat;
  p.workload = "noop";
  p.plugin_version = "1.0.0";
  p.config_json = "{\"x\":" + std::to_string(config) + "}";
  p.config_hash = "hash" + std::to_string(config);
  return p;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

SweepRecord sweep_named(const std::string& name) {
  SweepRecord s;
  s.name = name;
  s.workload = "noop";
  s.spec_json = "{}";
  s.spec_hash = "h";
  return s;
}

// A run's block series by trial id.
std::map<int64_t, BlockSeries> series_by_trial(Store& store, int64_t sweep_id) {
  std::map<int64_t, BlockSeries> out;
  store.for_each_series(sweep_id,
                        [&](int64_t id, BlockSeries& s) { out.emplace(id, std::move(s)); });
  return out;
}

}  // namespace

TEST_CASE("a fresh database migrates to the current schema", "[db]") {
  TempDb t;
  Store store(t.path, Connection::Mode::read_write);
  CHECK(current_version(store.connection()) == schema_version());
  CHECK(schema_version() >= 1);
  for (const char* table :
       {"sweeps", "environments", "trials", "trial_summary", "blocks", "metrics"}) {
    CHECK(count(store.connection(),
                std::string("SELECT count(*) FROM sqlite_master WHERE name = '") + table + "'") ==
          1);
  }
  auto st = store.connection().prepare("PRAGMA journal_mode");
  st.step();
  CHECK(st.get_text(0) == "wal");
}

TEST_CASE("opening an existing database applies nothing and keeps its data", "[db]") {
  TempDb t;
  {
    Store store(t.path, Connection::Mode::read_write);
    SweepRecord s;
    s.name = "a";
    s.workload = "noop";
    s.spec_json = "{}";
    s.spec_hash = "h";
    store.create_sweep(s);
  }
  Connection db(t.path, Connection::Mode::read_write);
  CHECK(migrate(db) == 0);
  Store again(t.path, Connection::Mode::read_write);
  REQUIRE(again.latest_sweep("a"));
  CHECK(again.latest_sweep("a")->workload == "noop");
}

TEST_CASE("a database from a newer gpusweep or another program is refused", "[db]") {
  TempDb t;
  {
    Connection db(t.path, Connection::Mode::read_write);
    db.exec("PRAGMA user_version = 999");
  }
  try {
    Store store(t.path, Connection::Mode::read_write);
    FAIL("a newer schema must be refused");
  } catch (const DbError& e) {
    CHECK_THAT(e.what(), Contains("schema version 999") && Contains("upgrade gpusweep"));
  }
  TempDb other;
  {
    Connection db(other.path, Connection::Mode::read_write);
    db.exec("CREATE TABLE customers (id INTEGER)");
  }
  CHECK_THROWS_WITH(Store(other.path, Connection::Mode::read_write),
                    Contains("not a gpusweep one"));
}

TEST_CASE("trials commit atomically with summary, blocks and metrics", "[db]") {
  TempDb t;
  Store store(t.path, Connection::Mode::read_write);
  SweepRecord s;
  s.name = "a";
  s.workload = "noop";
  s.spec_json = "{}";
  s.spec_hash = "h";
  const int64_t id = store.create_sweep(s);
  store.add_trials(id, {plan(0, 0), plan(1, 0), plan(0, 1)});
  auto trials = store.trials(id);
  REQUIRE(trials.size() == 3);
  for (const auto& tr : trials) CHECK(tr.status == TrialStatus::pending);

  // The identity (sweep, config hash, repeat) is unique.
  CHECK_THROWS_AS(store.add_trials(id, {plan(0, 0)}), DbError);
  CHECK(store.trials(id).size() == 3);  // the failed batch rolled back

  TrialOutcome o;
  o.status = TrialStatus::ok;
  o.started_at = "2026-01-01T00:00:00Z";
  o.finished_at = "2026-01-01T00:00:01Z";
  o.wall_s = 1;
  Summary sum;
  sum.unit = "steps";
  sum.blocks = 2;
  sum.throughput_median = 123;
  o.summary = sum;
  o.blocks = {{0, 10, 0.1, 10, 0}, {1, 10, 0.1, 10, 0}};
  o.metrics = {{"eval", 20, "quality", 1.0}, {"stat", 0, "peak_memory_bytes", 1e6}};
  EnvironmentInfo env;
  env.fingerprint = "fp";
  env.hostname = "h";
  o.environment = env;
  store.commit_trial(trials[0].id, o);
  store.commit_trial(trials[1].id, o);  // same environment: deduplicated
  CHECK(count(store.connection(), "SELECT count(*) FROM environments") == 1);

  trials = store.trials(id);
  CHECK(trials[0].status == TrialStatus::ok);
  REQUIRE(trials[0].summary);
  CHECK(trials[0].summary->throughput_median == 123);
  CHECK(store.blocks(trials[0].id).size() == 2);
  CHECK(store.metrics(trials[0].id).size() == 2);
  CHECK_FALSE(trials[2].summary);

  // Re-committing (a re-run after --resume) replaces, never duplicates.
  o.blocks.pop_back();
  store.commit_trial(trials[0].id, o);
  CHECK(store.blocks(trials[0].id).size() == 1);
  CHECK(count(store.connection(), "SELECT count(*) FROM trial_summary") == 2);

  // A failing commit leaves the trial as it was.
  TrialOutcome bad = o;
  bad.status = static_cast<TrialStatus>(99);  // a name the table's CHECK refuses mid-commit
  CHECK_THROWS_AS(store.commit_trial(trials[2].id, bad), DbError);
  CHECK(store.trials(id)[2].status == TrialStatus::pending);
  CHECK(store.blocks(trials[2].id).empty());

  CHECK_THROWS_AS(store.commit_trial(99999, o), DbError);
  CHECK(count(store.connection(), "SELECT count(*) FROM trial_results WHERE status = 'ok'") == 2);

  // One trial by its id reads as the run's listing reads it, with its
  // environment; an id that is none reads as nothing.
  const auto one = store.trial(trials[1].id);
  REQUIRE(one);
  CHECK(one->plan.config_json == store.trials(id)[1].plan.config_json);
  CHECK(one->plan.workload == "noop");
  REQUIRE(one->summary);
  CHECK(one->summary->throughput_median == 123);
  REQUIRE(one->environment_id);
  const auto where = store.environment(*one->environment_id);
  REQUIRE(where);
  CHECK(where->hostname == "h");
  CHECK_FALSE(store.trial(99999));
  CHECK_FALSE(store.environment(99999));
}

TEST_CASE("read-only stores refuse writes and non-gpusweep files", "[db]") {
  TempDb t;
  { Store store(t.path, Connection::Mode::read_write); }
  Store ro(t.path, Connection::Mode::read_only);
  SweepRecord s;
  s.name = "a";
  s.workload = "noop";
  s.spec_json = "{}";
  s.spec_hash = "h";
  CHECK_THROWS_AS(ro.create_sweep(s), DbError);
  TempDb empty;
  { Connection c(empty.path, Connection::Mode::read_write); }
  CHECK_THROWS_WITH(Store(empty.path, Connection::Mode::read_only),
                    Contains("not a gpusweep database"));
  // The same refusal, with the same code, as merge gives a shard: a usage
  // error the user fixes by passing another file (exit 2).
  try {
    Store again(empty.path, Connection::Mode::read_only);
    FAIL("an empty file opened as a gpusweep database");
  } catch (const DbError& e) {
    CHECK((e.code() & 0xff) == SQLITE_NOTADB);
  }
}

TEST_CASE("a version 1 database is read through an upgraded copy, and upgraded by a writer",
          "[db]") {
  TempDb t;
  {
    Connection db(t.path, Connection::Mode::read_write);
    db.exec(embedded_migrations().at(0).sql);
    db.exec("PRAGMA user_version = 1");
    db.exec(
        "INSERT INTO sweeps (name, workload, spec_json, spec_hash) VALUES ('old', 'noop', '{}', "
        "'h')");
    db.exec(
        "INSERT INTO trials (sweep_id, ordinal, config_index, repeat, workload, plugin_version, "
        "config_json, config_hash, status) VALUES (1, 0, 0, 0, 'noop', '1', '{}', 'c', 'ok')");
    db.exec(
        "INSERT INTO trial_summary (trial_id, unit, warmup_steps, steps_per_block, blocks, "
        "throughput_median) VALUES (1, 'steps', 0, 1, 5, 42)");
  }
  const std::string bytes = file_bytes(t.path);
  const auto mtime = std::filesystem::last_write_time(t.path);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // an mtime a write would move
  {
    // A reader sees the current schema through an upgraded copy, and never
    // writes the file it was given (it once migrated it in place).
    Store reader(t.path, Connection::Mode::read_only);
    CHECK(reader.reads_upgraded_copy());
    CHECK(current_version(reader.connection()) == schema_version());
    const auto trials = reader.trials(1);
    REQUIRE(trials.size() == 1);
    REQUIRE(trials[0].summary);
    CHECK(trials[0].summary->throughput_median == 42);
    CHECK_FALSE(trials[0].summary->quality_higher_is_better);
    CHECK_THROWS_AS(reader.connection().exec("DELETE FROM trials"), DbError);
  }
  CHECK(file_bytes(t.path) == bytes);
  CHECK(std::filesystem::last_write_time(t.path) == mtime);
  {
    Connection raw(t.path, Connection::Mode::read_only);
    CHECK(current_version(raw) == 1);
  }
  // A writer upgrades the file itself, and a reader then reads it directly.
  { Store writer(t.path, Connection::Mode::read_write); }
  Store reader(t.path, Connection::Mode::read_only);
  CHECK_FALSE(reader.reads_upgraded_copy());
  CHECK(reader.trials(1).size() == 1);
}

TEST_CASE("the store answers what the host asks without SQL of its own", "[db]") {
  TempDb t;
  {
    Store store(t.path, Connection::Mode::read_write);
    SweepRecord s;
    s.name = "a";
    s.workload = "noop";
    s.spec_json = "{}";
    s.spec_hash = "h";
    const int64_t id = store.create_sweep(s);
    const auto ids = store.add_trials(id, {plan(0, 0), plan(1, 0), plan(2, 0)});
    REQUIRE(ids.size() == 3);
    CHECK(store.trials(id).at(1).id == ids[1]);  // add_trials returns the ids, in order
    TrialOutcome o;
    o.status = TrialStatus::ok;
    EnvironmentInfo env;
    env.fingerprint = "gpu-node";
    env.hostname = "n1";
    env.cuda_available = true;
    o.environment = env;
    store.commit_trial(ids[0], o);
    o.status = TrialStatus::interrupted;
    store.commit_trial(ids[2], o);
    const auto counts = store.trial_counts(id);
    CHECK(counts.total == 3);
    CHECK(counts.finished == 1);  // pending and interrupted are not finished
    const auto envs = store.environments(id);
    REQUIRE(envs.size() == 1);
    CHECK(envs[0].hostname == "n1");
    CHECK(envs[0].cuda_available);
  }
  Store reader(t.path, Connection::Mode::read_only);
  const auto r = reader.read_query("SELECT config_index, status FROM trials ORDER BY ordinal");
  CHECK(r.columns == std::vector<std::string>{"config_index", "status"});
  REQUIRE(r.rows.size() == 3);
  CHECK(r.rows[0].at("status") == "ok");
  CHECK(r.rows[1].at("config_index") == 1);
  CHECK_THROWS_WITH(reader.read_query("DELETE FROM trials"), Contains("would write"));
  CHECK_THROWS_WITH(reader.read_query("SELECT 1; SELECT 2"), Contains("one statement"));
  CHECK(reader.trial_counts(1).total == 3);  // the refused statements changed nothing
}

TEST_CASE(
    "block series: written with the blocks, backfilled for a version 5 database, the same "
    "numbers",
    "[db][series]") {
  TempDb t;
  // Blocks as a run writes them: a block without time and one without steps
  // (left out of the series), one without a cycle, two blocks in one cycle,
  // a cycle back.
  std::vector<BlockSample> blocks = {{0, 10, 0.5, 40, 0, 3, std::nullopt},
                                     {1, 10, 0.0, 40, 0, 4, std::nullopt},
                                     {2, 10, 0.25, 41, 0, std::nullopt, std::nullopt},
                                     {3, 10, 0.125, 42, 0, 5, std::nullopt},
                                     {4, 10, 0.3, 43, 0, 5, std::nullopt},
                                     {5, 10, 0.7, 44, 0, 2, std::nullopt},
                                     {6, 0, 0.2, 0, 0, 2, std::nullopt}};
  const BlockSeries expected = series_of(blocks);
  CHECK_FALSE(block_throughput(blocks[1]));
  CHECK_FALSE(block_step_time(blocks[6]));
  CHECK(block_step_time(blocks[0]) == 0.05);
  REQUIRE(expected.throughput.size() == 5);
  CHECK(expected.throughput[0] == 40 / 0.5);
  CHECK_FALSE(expected.cycles[1]);
  CHECK(expected.cycles[4] == 2);
  const auto same = [&](const BlockSeries& s) {
    CHECK(s.throughput == expected.throughput);  // bit for bit
    CHECK(s.cycles == expected.cycles);
  };
  {
    // Version 5: blocks and no series table; two trials with blocks.
    Connection db(t.path, Connection::Mode::read_write);
    for (const auto& m : embedded_migrations()) {
      if (std::atoi(m.file.c_str()) <= 5) db.exec(m.sql);
    }
    db.exec("PRAGMA user_version = 5");
    db.exec(
        "INSERT INTO sweeps (name, workload, spec_json, spec_hash) VALUES ('old', 'noop', "
        "'{}', 'h')");
    for (int id = 1; id <= 2; ++id) {
      db.exec(
          "INSERT INTO trials (sweep_id, ordinal, config_index, repeat, workload, "
          "plugin_version, config_json, config_hash, status) VALUES (1, " +
          std::to_string(id) + ", " + std::to_string(id) + ", 0, 'noop', '1', '{}', 'c" +
          std::to_string(id) + "', 'ok')");
      for (const auto& b : blocks) {
        auto st = db.prepare(
            "INSERT INTO blocks (trial_id, idx, steps, seconds, samples, cycle) VALUES (?, ?, ?, "
            "?, ?, ?)");
        st.bind(1, int64_t{id}).bind(2, b.idx).bind(3, b.steps).bind(4, b.seconds);
        st.bind(5, b.samples * id).bind(6, b.cycle);
        st.run();
      }
    }
  }
  {
    // A reader's upgraded copy has the series, without writing the file.
    Store reader(t.path, Connection::Mode::read_only);
    REQUIRE(reader.reads_upgraded_copy());
    const auto series = series_by_trial(reader, 1);
    REQUIRE(series.size() == 2);
    same(series.at(1));
    CHECK(series.at(2).throughput[2] == 2 * expected.throughput[2]);
  }
  Store store(t.path, Connection::Mode::read_write);
  CHECK(count(store.connection(), "SELECT count(*) FROM block_series") == 2);
  // A trial committed now writes its series in its own transaction.
  const int64_t sweep = store.create_sweep(sweep_named("new"), {plan(0, 0), plan(1, 0)});
  const auto trials = store.trials(sweep);
  TrialOutcome o;
  o.status = TrialStatus::ok;
  o.blocks = blocks;
  store.commit_trial(trials[0].id, o);
  o.blocks.clear();  // a trial without blocks has no series
  store.commit_trial(trials[1].id, o);
  const auto series = series_by_trial(store, sweep);
  REQUIRE(series.size() == 1);
  same(series.at(trials[0].id));
  same(store.series(trials[0].id));  // one trial's, as the race and claims read it
  CHECK(store.series(trials[1].id).throughput.empty());
  // Series of trials of another run are not read.
  CHECK(series_by_trial(store, 1).size() == 2);
}

TEST_CASE("last_stats: every trial's last value of each statistic, as last_stat reads it",
          "[db][series]") {
  TempDb t;
  Store store(t.path, Connection::Mode::read_write);
  const int64_t sweep = store.create_sweep(sweep_named("s"), {plan(0, 0), plan(1, 0)});
  const auto trials = store.trials(sweep);
  TrialOutcome o;
  o.status = TrialStatus::ok;
  o.metrics = {
      {"stat", 10, "a", 2}, {"stat", 5, "a", 1}, {"stat", 7, "b", 3}, {"eval", 20, "a", 9}};
  store.commit_trial(trials[0].id, o);
  o.metrics = {{"stat", 1, "c", 4}};
  store.commit_trial(trials[1].id, o);
  const auto stats = store.last_stats(sweep, {"a", "c"});
  REQUIRE(stats.size() == 2);
  const auto& first = stats.at(trials[0].id);
  REQUIRE(first.size() == 2);  // a and c; b was not asked for
  CHECK(first[0] == store.last_stat(trials[0].id, "a"));
  CHECK(first[0] == 2);  // the highest step's, not an eval's
  CHECK_FALSE(first[1]);
  CHECK(stats.at(trials[1].id)[1] == 4);
  CHECK_FALSE(stats.at(trials[1].id)[0]);
}

TEST_CASE("a version 6 database's runs get their kind from what they were known by", "[db]") {
  TempDb t;
  {
    Connection db(t.path, Connection::Mode::read_write);
    for (const auto& m : embedded_migrations()) {
      if (std::atoi(m.file.c_str()) <= 6) db.exec(m.sql);
    }
    db.exec("PRAGMA user_version = 6");
    for (const char* row :
         {"('nightly', '{\"name\": \"nightly\"}')", "('diagnose-dqn', '{}')",
          "('tune-batch-restoration', '{}')", "('tune-batch-restoration-target', '{}')",
          "('mine', '{\"check\": {\"tolerance\": 0.03}}')", "('race', '{\"tune\": {}}')",
          "('plain', '{\"check\": null, \"tune\": null}')"}) {
      db.exec(std::string("INSERT INTO sweeps (name, spec_json, workload, spec_hash) VALUES ") +
              std::string(row).insert(std::string(row).size() - 1, ", 'noop', 'h'"));
    }
  }
  Store store(t.path, Connection::Mode::read_write);
  std::map<std::string, RunKind> kinds;
  for (const auto& s : store.sweeps()) kinds[s.name] = s.kind;
  CHECK(kinds.at("nightly") == RunKind::sweep);
  CHECK(kinds.at("diagnose-dqn") == RunKind::diagnose);
  CHECK(kinds.at("tune-batch-restoration") == RunKind::tune_batch);
  CHECK(kinds.at("tune-batch-restoration-target") == RunKind::tune_batch);
  CHECK(kinds.at("mine") == RunKind::check);
  CHECK(kinds.at("race") == RunKind::tune);
  CHECK(kinds.at("plain") == RunKind::sweep);
  // A run recorded now keeps the kind it was given.
  SweepRecord s;
  s.name = "probes";
  s.workload = "noop";
  s.spec_json = "{}";
  s.spec_hash = "h";
  s.kind = RunKind::diagnose;
  const int64_t id = store.create_sweep(s, {});
  CHECK(store.sweep(id)->kind == RunKind::diagnose);
  CHECK(store.sweep(id)->status == SweepStatus::running);
  store.set_sweep_status(id, SweepStatus::interrupted);
  CHECK(store.sweep(id)->status == SweepStatus::interrupted);
}
