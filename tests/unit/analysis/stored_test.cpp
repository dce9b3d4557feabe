// A run's trials read back as one typed record each (analysis/stored.hpp).
#include "analysis/stored.hpp"

#include "analysis/compare.hpp"

#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <atomic>

using namespace gpusweep;
using namespace gpusweep::host;

namespace {

// A run of `n` trials, one config each: every third timed out after an
// evaluation at 7.5 s of training, the others ok with a time to target
// (every fourth censored), the host's overlap and monitor stats, torchkit's
// thread count and a plugin's own stat.
int64_t write_run(db::Store& store, int n) {
  db::SweepRecord s;
  s.name = "stored";
  s.workload = "noop";
  s.spec_json = R"({"name": "stored", "workload": "noop"})";
  s.spec_hash = "h";
  std::vector<db::TrialPlan> plans;
  for (int i = 0; i < n; ++i) {
    db::TrialPlan p;
    p.ordinal = i;
    p.config_index = i;
    p.workload = "noop";
    p.plugin_version = "1";
    p.config_json = "{\"batch_size\": " + std::to_string(i + 1) + "}";
    p.config_hash = std::to_string(i);
    plans.push_back(p);
  }
  const int64_t id = store.create_sweep(s, plans);
  db::EnvironmentInfo env;
  env.fingerprint = "f";
  env.hostname = "box";
  env.cpu_model = "cpu";
  for (const auto& t : store.trials(id)) {
    const int i = static_cast<int>(t.plan.ordinal);
    db::TrialOutcome o;
    o.environment = env;
    if (i % 3 == 2) {
      o.status = db::TrialStatus::timeout;
      o.metrics = {{"eval", 10, "gpusweep.train_s", 5.0}, {"eval", 20, "gpusweep.train_s", 7.5}};
    } else {
      o.status = db::TrialStatus::ok;
      db::Summary m;
      m.unit = "samples";
      m.throughput_median = 100 + i;
      o.summary = m;
      for (int64_t b = 0; b < 5; ++b) o.blocks.push_back({b, 10, 0.1, 100.0 + i + b, 0, b, {}});
      o.metrics = {{"stat", 0, "target_time_s", 2.0 + i},
                   {"stat", 0, "target_censored", i % 4 == 0 ? 1.0 : 0.0},
                   {"stat", 0, "overlap_fraction", 0.25},
                   {"stat", 0, "monitor_cpu_util_mean", 1.5},
                   {"stat", 0, "intra_op_threads", 2},
                   {"stat", 0, "plugin_own_stat", 9}};
    }
    store.commit_trial(t.id, o);
  }
  return id;
}

// The statements run on the store's connection while f runs.
template <typename F>
int statements_during(db::Store& store, F&& f) {
  int count = 0;
  sqlite3_trace_v2(
      store.connection().handle(), SQLITE_TRACE_STMT,
      [](unsigned, void* ctx, void*, void*) {
        ++*static_cast<int*>(ctx);
        return 0;
      },
      &count);
  f();
  sqlite3_trace_v2(store.connection().handle(), 0, nullptr, nullptr);
  return count;
}

// Statements run on every connection opened while f runs (compare reads
// the block series on a connection of its own): each new connection gets a
// trace through SQLite's auto-extension hook.
std::atomic<int> g_statements{0};
int count_statement(unsigned, void*, void*, void*) {
  ++g_statements;
  return 0;
}
int trace_connection(sqlite3* db, const char**, const sqlite3_api_routines*) {
  sqlite3_trace_v2(db, SQLITE_TRACE_STMT, count_statement, nullptr);
  return SQLITE_OK;
}

template <typename F>
int statements_on_any_connection(db::Store& store, F&& f) {
  g_statements = 0;
  sqlite3_trace_v2(store.connection().handle(), SQLITE_TRACE_STMT, count_statement, nullptr);
  sqlite3_auto_extension(reinterpret_cast<void (*)()>(trace_connection));
  f();
  sqlite3_cancel_auto_extension(reinterpret_cast<void (*)()>(trace_connection));
  sqlite3_trace_v2(store.connection().handle(), 0, nullptr, nullptr);
  return g_statements;
}

}  // namespace

TEST_CASE("compare reads a run of 3000 trials in as many statements as one of 30", "[stored]") {
  test::TempDir dir("compare_reads");
  std::vector<int> reads;
  for (const int n : {30, 3000}) {
    db::Store store(dir.file(std::to_string(n) + ".db"), db::Connection::Mode::read_write);
    const int64_t id = write_run(store, n);
    std::vector<ComparisonRow> rows;
    std::vector<ConfigSamples> configs;
    reads.push_back(statements_on_any_connection(store, [&] {
      configs = gather_configs(store, id);
      rows = compare_configs(configs, {});
    }));
    REQUIRE(rows.size() == static_cast<size_t>(n));
    CHECK(configs[1].throughput.size() == 5);  // the blocks were read
  }
  INFO("statements: " << reads[0] << " and " << reads[1]);
  CHECK(reads[0] == reads[1]);
}

TEST_CASE("a run's stored trials come in the same number of reads for 30 trials as for 3000",
          "[stored]") {
  test::TempDir dir("stored_reads");
  std::vector<int> reads;
  for (const int n : {30, 3000}) {
    db::Store store(dir.file(std::to_string(n) + ".db"), db::Connection::Mode::read_write);
    const int64_t id = write_run(store, n);
    std::vector<StoredTrial> trials;
    reads.push_back(statements_during(store, [&] { trials = stored_trials(store, id); }));
    REQUIRE(trials.size() == static_cast<size_t>(n));
  }
  CHECK(reads[0] == reads[1]);
  CHECK(reads[0] <= 5);
}

TEST_CASE("a stored trial carries its host stats, torchkit's, its machine and its time to target",
          "[stored]") {
  test::TempDir dir("stored_fields");
  db::Store store(dir.file("r.db"), db::Connection::Mode::read_write);
  const auto trials = stored_trials(store, write_run(store, 6));
  REQUIRE(trials.size() == 6);

  const StoredTrial& censored = trials[0];  // ok, target_censored = 1
  CHECK(censored.stats.overlap_fraction == 0.25);
  CHECK(censored.stats.monitor_cpu_util_mean == 1.5);
  CHECK_FALSE(censored.stats.quality_se);
  CHECK(censored.intra_op_threads == 2);
  CHECK(censored.machine == "box|cpu|[]");
  REQUIRE(censored.target());
  CHECK(censored.target()->time_s == 2.0);
  CHECK(censored.target()->censored);
  CHECK(censored.target()->machine == "box|cpu|[]");

  const StoredTrial& reached = trials[1];
  REQUIRE(reached.target());
  CHECK(reached.target()->time_s == 3.0);
  CHECK_FALSE(reached.target()->censored);

  // Killed by timeout_s after two evaluations: censored at the last one's
  // training clock, not dropped.
  const StoredTrial& killed = trials[2];
  CHECK(killed.row.status == db::TrialStatus::timeout);
  CHECK(killed.last_eval_train_s == 7.5);
  REQUIRE(killed.target());
  CHECK(killed.target()->time_s == 7.5);
  CHECK(killed.target()->censored);
}

TEST_CASE("the host's stats are fields by the table's names, a plugin's stat is none of them",
          "[stored]") {
  HostStatValues s;
  CHECK(s.set("turn_s", 4));
  CHECK(s.turn_s == 4);
  CHECK_FALSE(s.set("plugin_own_stat", 1));
  CHECK_FALSE(s.set("monitor_timeline_cpu_util", 1));  // a series: many values, no field
  REQUIRE(s.find("turn_s") != nullptr);
  CHECK(*s.find("turn_s") == 4);
  const auto present = s.present();
  REQUIRE(present.size() == 1);
  CHECK(std::string(present[0].first) == "turn_s");
}
