// serve's run answers by cursor: an answer to the last cursor carries only
// the trials that changed since, and folding it into the earlier answer gives
// what a whole answer gives now; a cursor that has not moved says so; one
// from another server or garbage gets the whole answer.
#include "serve/api.hpp"
#include "report/export.hpp"
#include "report/results.hpp"
#include "serve/api_internal.hpp"

#include "history_runs.hpp"
#include "temp_dir.hpp"

#include <gpusweep/db/live.hpp>
#include <gpusweep/db/migrate.hpp>
#include <gpusweep/db/run_lock.hpp>
#include <gpusweep/db/store.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <unistd.h>

using namespace gpusweep;
using Json = nlohmann::json;

namespace {

std::string this_host() {
  char name[256] = {};
  REQUIRE(::gethostname(name, sizeof name - 1) == 0);
  return name;
}

// A run of 2 configs x 3 repeats of noop, none run yet.
int64_t make_run(db::Store& store) {
  db::SweepRecord s;
  s.name = "watched";
  s.workload = "noop";
  s.spec_json = R"({"name": "watched", "workload": "noop", "grid": {"batch_size": [1, 2]},
    "baseline": {"batch_size": 1}, "measure": {"repeats": 3}})";
  s.spec_hash = "h";
  std::vector<db::TrialPlan> plan(6);
  for (size_t i = 0; i < plan.size(); ++i) {
    plan[i].ordinal = static_cast<int64_t>(i);
    plan[i].config_index = static_cast<int64_t>(i % 2);
    plan[i].repeat = static_cast<int64_t>(i / 2);
    plan[i].workload = "noop";
    plan[i].plugin_version = "1";
    plan[i].config_json = i % 2 == 0 ? R"({"batch_size": 1})" : R"({"batch_size": 2})";
    plan[i].config_hash = i % 2 == 0 ? "a" : "b";
  }
  return store.create_sweep(s, plan);
}

// That run in a database of its own.
struct WatchedRun {
  explicit WatchedRun(const std::string& name)
      : dir(name),
        path(dir.path + "/r.db"),
        store(path, db::Connection::Mode::read_write),
        run(make_run(store)) {}
  test::TempDir dir;
  std::string path;
  db::Store store;
  int64_t run;
};

void finish(db::Store& store, int64_t trial, db::TrialStatus status, double throughput) {
  db::TrialOutcome o;
  o.status = status;
  o.started_at = o.finished_at = "2026-11-26T00:00:00.000Z";
  o.wall_s = 1;
  if (status == db::TrialStatus::ok) {
    db::Summary s;
    s.unit = "samples";
    s.steps_per_block = 10;
    s.blocks = 3;
    s.throughput_median = throughput;
    o.summary = s;
    for (int b = 0; b < 3; ++b) o.blocks.push_back({b, 10, 10 / throughput, 10, 0, b, {}});
  } else {
    o.error = "<b>boom</b>";
  }
  store.commit_trial(trial, o);
}

Json answer(const host::ServeApi& api, int64_t run, const std::string& since) {
  const auto body = api.cached_run(0, run, since);
  REQUIRE(body);
  return Json::parse(*body);
}

// The trials of a listing (a JSON array of records, or serve's answer) by
// their id.
std::map<int64_t, Json> trials_by_id(const Json& records) {
  std::map<int64_t, Json> out;
  for (const auto& t : records) out[t.at("trial_id").get<int64_t>()] = t;
  return out;
}

// The trials of an answer by id.
std::map<int64_t, Json> by_id(const Json& j) {
  std::map<int64_t, Json> out;
  for (const auto& t : j["trials"]) out[t["trial_id"].get<int64_t>()] = t;
  return out;
}

}  // namespace

TEST_CASE("a run's answer to a cursor carries only what changed, and adds up to the whole",
          "[serve]") {
  WatchedRun watched("serve_api");
  db::Store& store = watched.store;
  const int64_t run = watched.run;
  const auto trials = store.trials(run);
  finish(store, trials[0].id, db::TrialStatus::ok, 100);
  finish(store, trials[1].id, db::TrialStatus::ok, 200);

  const host::ServeApi api({watched.path}, /*share_s=*/0);
  const Json first = answer(api, run, "");
  CHECK(first["delta"] == false);
  REQUIRE(first["trials"].size() == 6);
  const std::string cursor = first["cursor"];
  // Nothing moved: the same cursor back, and nothing else.
  const Json same = answer(api, run, cursor);
  CHECK(same["unchanged"] == true);
  CHECK(same["cursor"] == cursor);
  CHECK_FALSE(same.contains("trials"));

  // Three trials finish (one failed) and a fourth starts.
  finish(store, trials[2].id, db::TrialStatus::ok, 110);
  finish(store, trials[3].id, db::TrialStatus::ok, 210);
  finish(store, trials[4].id, db::TrialStatus::failed, 0);
  store.mark_started(trials[5].id, "2026-11-26T00:00:01.000Z");
  const Json delta = answer(api, run, cursor);
  CHECK(delta["delta"] == true);
  CHECK(delta["cursor"] != cursor);
  std::vector<int64_t> changed;
  for (const auto& t : delta["trials"]) changed.push_back(t["trial_id"]);
  CHECK(changed == std::vector<int64_t>{trials[2].id, trials[3].id, trials[4].id, trials[5].id});
  // The failure carries its reason, as text for the page to show as text.
  CHECK(delta["trials"][2]["error"] == "<b>boom</b>");
  CHECK(delta["trials"][3]["started"] == true);
  // The head came along: the comparison now has the new repeat.
  REQUIRE(delta["compare"].is_array());
  CHECK(delta["compare"][1]["repeats_paired"] == 2);
  CHECK(first["compare"][1]["repeats_paired"] == 1);

  // The earlier answer with the delta folded in is the whole answer now.
  auto folded = by_id(first);
  for (const auto& [id, t] : by_id(delta)) folded[id] = t;
  const Json whole = answer(api, run, "");
  CHECK(folded == by_id(whole));
  CHECK(answer(api, run, delta["cursor"])["unchanged"] == true);
  // Each config's settings come once, by config number, not in every row.
  CHECK(whole["labels"] == Json{{"1", "batch_size=1"}, {"2", "batch_size=2"}});
  CHECK_FALSE(whole["trials"][0].contains("settings"));

  // A cursor of another server, or garbage, gets the whole answer.
  const host::ServeApi other({watched.path}, /*share_s=*/0);
  const std::string foreign = answer(other, run, "")["cursor"];
  CHECK(foreign != delta["cursor"]);
  for (const std::string& bad :
       {foreign, std::string("x"), std::string("."), cursor + "999999999999999999999"}) {
    const Json j = answer(api, run, bad);
    CHECK(j["delta"] == false);
    CHECK(j["trials"].size() == 6);
  }

  // Trials gone from the run (the first and the last, the rest kept): the
  // delta names them as removed and carries none of the others.
  store.connection().exec("DELETE FROM trials WHERE id IN (" + std::to_string(trials[0].id) + ", " +
                          std::to_string(trials[5].id) + ")");
  const Json gone = answer(api, run, delta["cursor"]);
  CHECK(gone["delta"] == true);
  CHECK(gone["removed"] == Json::array({trials[0].id, trials[5].id}));
  CHECK(gone["trials"].empty());
  CHECK(answer(api, run, "")["trials"].size() == 4);
  // A page that missed the removal's answer still hears of it; one past it does not.
  CHECK(answer(api, run, cursor)["removed"] == Json::array({trials[0].id, trials[5].id}));
  CHECK(answer(api, run, gone["cursor"])["unchanged"] == true);
}

TEST_CASE("a live run's answer carries its running trials' blocks from its host's file",
          "[serve]") {
  WatchedRun watched("serve_live");
  db::Store& store = watched.store;
  const int64_t run = watched.run;
  const std::string live = db::live_blocks_path(watched.path, run);
  std::filesystem::create_directories(std::filesystem::path(live).parent_path());
  // What the file says is checked: entries that are not trials are dropped.
  std::ofstream(live) << R"({"trials": [{"id": 5, "phase": "measure", "throughput": [1.5, 2, "x"]},
                                        {"id": "bad"}, 7]})";
  const host::ServeApi api({watched.path}, /*share_s=*/0);
  // No host holds the run: the file is stale, nothing shown.
  CHECK(answer(api, run, "")["live"].empty());
  // A host on another node, whose lock this node may not see (node-local
  // locks on a cluster filesystem): its fresh heartbeat says it is alive, an
  // old one does not; this node's own name never stands in for the lock.
  const std::string beat = db::live_beat_path(watched.path, run);
  const auto runs_status = [&] { return api.runs("")["runs"][0]["status"]; };
  for (const std::string& host : {std::string("node-elsewhere-17"), this_host()}) {
    std::ofstream(beat) << host << " 4242\n";
    const bool elsewhere = host != this_host();
    INFO("heartbeat from " << host);
    CHECK(answer(api, run, "")["live"].size() == (elsewhere ? 1u : 0u));
    CHECK(runs_status() == (elsewhere ? "running" : "stopped"));
    std::filesystem::last_write_time(
        beat, std::filesystem::file_time_type::clock::now() - std::chrono::minutes(5));
    CHECK(answer(api, run, "")["live"].empty());
    CHECK(runs_status() == "stopped");
  }
  std::filesystem::remove(beat);
  const auto lock = db::RunLock::try_acquire(watched.path, run);
  REQUIRE(lock);
  const Json j = answer(api, run, "");
  REQUIRE(j["live"].size() == 1);
  CHECK(j["live"][0]["id"] == 5);
  CHECK(j["live"][0]["phase"] == "measure");
  CHECK(j["live"][0]["throughput"] == Json::array({1.5, 2}));
  CHECK(j["blocks_planned"] == 10);
  // A new block in the file is a new version: the next answer has it (a
  // live run is computed again at most once a second).
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  std::ofstream(live)
      << R"({"trials": [{"id": 5, "phase": "measure", "throughput": [1.5, 2, 3]}]})";
  const Json next = answer(api, run, j["cursor"]);
  REQUIRE(next.contains("live"));
  CHECK(next["live"][0]["throughput"] == Json::array({1.5, 2, 3}));
}

TEST_CASE("requests within share_s of a look at the database share its answer", "[serve]") {
  WatchedRun watched("serve_share");
  db::Store& store = watched.store;
  const int64_t run = watched.run;
  const auto trials = store.trials(run);
  finish(store, trials[0].id, db::TrialStatus::ok, 100);
  const host::ServeApi api({watched.path}, /*share_s=*/0.4);
  const auto finished = [&] { return api.runs("")["runs"][0]["finished"].get<int64_t>(); };
  const auto done = [&] {
    int64_t n = 0;
    const Json j = answer(api, run, "");
    for (const auto& t : j["trials"]) n += t["status"] == "ok" ? 1 : 0;
    return n;
  };
  CHECK(finished() == 1);
  CHECK(done() == 1);
  finish(store, trials[1].id, db::TrialStatus::ok, 200);
  // Within the window: the answers of the first look.
  CHECK(finished() == 1);
  CHECK(done() == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  CHECK(finished() == 2);
  CHECK(done() == 2);
}

TEST_CASE("a database read through local copies answers as the database does", "[serve]") {
  WatchedRun watched("serve_snapshot");
  db::Store& store = watched.store;
  const auto trials = store.trials(watched.run);
  finish(store, trials[0].id, db::TrialStatus::ok, 100);
  finish(store, trials[1].id, db::TrialStatus::ok, 200);
  const host::ServeApi direct({watched.path}, 0, host::ServeApi::Snapshot::never);
  const host::ServeApi copied({watched.path}, 0, host::ServeApi::Snapshot::always);
  CHECK(direct.reading(0).empty());
  CHECK_THAT(copied.reading(0), Catch::Matchers::Contains("local copies"));
  Json a = answer(direct, watched.run, ""), b = answer(copied, watched.run, "");
  for (auto* j : {&a, &b}) j->erase("cursor");
  CHECK(a == b);
  CHECK(direct.run(0, watched.run)["compare"] == copied.run(0, watched.run)["compare"]);
  const Json list = copied.runs("");
  REQUIRE(list["runs"].size() == 1);
  CHECK(list["runs"][0]["ok"] == 2);
}

TEST_CASE("a database that cannot be read is listed with why, and the others are served",
          "[serve]") {
  WatchedRun watched("serve_unreadable");
  finish(watched.store, watched.store.trials(watched.run)[0].id, db::TrialStatus::ok, 100);
  // A shard a task is still creating: a file, no schema yet.
  const std::string empty = watched.dir.path + "/creating.db";
  std::ofstream(empty) << "";
  const host::ServeApi api({empty, watched.path}, 0, host::ServeApi::Snapshot::never);
  const Json list = api.runs("");
  REQUIRE(list["runs"].size() == 1);
  CHECK(list["runs"][0]["db"] == 1);
  CHECK(list["runs"][0]["ok"] == 1);
  REQUIRE(list["unreadable"].size() == 1);
  CHECK(list["unreadable"][0]["db"] == 0);
  CHECK_FALSE(list["unreadable"][0]["error"].get<std::string>().empty());
  // The good database's run answers whole.
  CHECK(api.run(1, watched.run).is_object());
}

TEST_CASE("a cursor of another run gets that run's whole answer", "[serve]") {
  WatchedRun watched("serve_cursor_run");
  db::Store& store = watched.store;
  const int64_t other = make_run(store);
  const auto trials = store.trials(watched.run);
  finish(store, trials[0].id, db::TrialStatus::ok, 100);
  finish(store, store.trials(other)[0].id, db::TrialStatus::ok, 100);
  const host::ServeApi api({watched.path}, /*share_s=*/0);
  // Both runs at the same revision: a cursor that named only the revision
  // would read as "unchanged" for the other run.
  const std::string first = answer(api, watched.run, "")["cursor"];
  const std::string second = answer(api, other, "")["cursor"];
  CHECK(first != second);
  const Json crossed = answer(api, other, first);
  CHECK_FALSE(crossed.contains("unchanged"));
  CHECK(crossed["delta"] == false);
  CHECK(crossed["id"] == other);
  CHECK(crossed["trials"].size() == 6);
  CHECK(answer(api, other, second)["unchanged"] == true);
}

TEST_CASE("a shard that appears in a watched folder after start is served", "[serve]") {
  WatchedRun watched("serve_rescan");
  finish(watched.store, watched.store.trials(watched.run)[0].id, db::TrialStatus::ok, 100);
  const std::string folder = watched.dir.path + "/shards";
  std::filesystem::create_directories(folder);
  // Started before any task: an empty folder, and the database named alone.
  const host::ServeApi api({watched.path}, 0, host::ServeApi::Snapshot::never, {folder});
  CHECK(api.runs("")["runs"].size() == 1);
  CHECK(api.databases() == 1);
  {
    db::Store shard(folder + "/shard-0.db", db::Connection::Mode::read_write);
    make_run(shard);
  }
  const Json list = api.runs("");
  REQUIRE(list["runs"].size() == 2);
  CHECK(list["runs"][1]["db"] == 1);
  CHECK(api.path(1) == folder + "/shard-0.db");
  CHECK(api.run(1, 1).is_object());
  // The indices given stay: the first database is still 0.
  CHECK(list["runs"][0]["db"] == 0);
  CHECK(api.databases() == 2);
}

TEST_CASE("a database named before it exists is waited for, then served", "[serve]") {
  test::TempDir dir("serve_waiting");
  const std::string path = dir.file("later.db");
  // serve --db later.db before the first run: accepted, and said to be waited for.
  std::vector<std::string> watched;
  const auto now = host::ServeApi::databases_given({path}, &watched);
  CHECK(now.empty());
  const host::ServeApi api(now, 0, host::ServeApi::Snapshot::never, watched);
  Json list = api.runs("");
  CHECK(list["runs"].empty());
  CHECK(list["waiting"] == Json::array({path}));
  host::HttpRequest get;
  get.method = "GET";
  get.path = "/";
  CHECK_THAT(api.handle(get).body, Catch::Contains("waiting for DB " + path + " to appear"));
  {
    db::Store store(path, db::Connection::Mode::read_write);
    make_run(store);
  }
  list = api.runs("");
  REQUIRE(list["runs"].size() == 1);
  CHECK(list["runs"][0]["name"] == "watched");
  CHECK(list["waiting"].empty());
  CHECK(api.run(0, 1).is_object());
}

TEST_CASE("the page's first answer carries the run list, drawn in as text", "[serve]") {
  WatchedRun watched("serve_first_paint");
  {
    db::SweepRecord s;
    s.name = "<img src=x onerror=alert(1)>";
    s.workload = "noop";
    s.spec_json = R"({"name": "h", "workload": "noop"})";
    s.spec_hash = "h2";
    db::TrialPlan p;
    p.workload = "noop";
    p.plugin_version = "1";
    p.config_json = "{}";
    p.config_hash = "c";
    watched.store.create_sweep(s, {p});
  }
  finish(watched.store, watched.store.trials(watched.run)[0].id, db::TrialStatus::ok, 100);
  const host::ServeApi api({watched.path}, 0, host::ServeApi::Snapshot::never);
  host::HttpRequest get;
  get.method = "GET";
  get.path = "/";
  const std::string body = api.handle(get).body;
  // Each run's row, as the page's script draws it: its name, and its trials
  // done, running and failed of those planned.
  CHECK_THAT(body, Catch::Contains("<td>run 1</td><td>watched</td>"));
  CHECK_THAT(body, Catch::Contains("1 / 0 / 0 of 6"));
  CHECK_THAT(body, Catch::Contains("<td>&lt;img src=x onerror=alert(1)&gt;</td>"));
  CHECK(body.find("<img") == std::string::npos);
}

TEST_CASE("a run's answer numbers repeats from 1 and carries compare's table with its notes",
          "[serve]") {
  WatchedRun watched("serve_tables");
  const auto trials = watched.store.trials(watched.run);
  for (size_t i = 0; i < 2; ++i) {
    finish(watched.store, trials[i].id, db::TrialStatus::ok, i == 0 ? 100 : 150);
  }
  const host::ServeApi api({watched.path}, 0, host::ServeApi::Snapshot::never);
  const Json run = api.run(0, watched.run);
  for (const auto& t : run["trials"]) {
    CHECK(t["repeat"].get<int64_t>() >= 1);
  }
  const Json& table = run["compare_table"];
  const auto headers = table["headers"].get<std::vector<std::string>>();
  REQUIRE(std::find(headers.begin(), headers.end(), "note") != headers.end());
  CHECK(headers[0] == "config");
  // One repeat each so far: the interval covers one process, and compare's
  // note says so (in the row, or under the table when every row shares it).
  CHECK_THAT(run.dump(), Catch::Contains("one process"));
  CHECK(run["knobs"]["rows"].size() == 1);
  CHECK_THAT(run["best"].get<std::string>(), Catch::Contains("config 2"));
}

TEST_CASE("an older gpusweep's database is upgraded once in a copy, not once a request",
          "[serve]") {
  WatchedRun watched("serve_old_schema");
  db::Store& store = watched.store;
  const auto trials = store.trials(watched.run);
  finish(store, trials[0].id, db::TrialStatus::ok, 100);
  finish(store, trials[1].id, db::TrialStatus::ok, 200);
  // Back to schema 5, as the gpusweep before migration 006 left it.
  store.connection().exec(
      "DROP TABLE block_series; DROP INDEX trials_by_ordinal; ALTER TABLE sweeps DROP COLUMN "
      "kind; PRAGMA user_version = 5");
  const int64_t made_before = db::Store::upgraded_copies_made();
  const host::ServeApi api({watched.path}, /*share_s=*/0, host::ServeApi::Snapshot::never);
  CHECK_THAT(api.reading(0), Catch::Matchers::Contains("older gpusweep, schema 5"));
  for (int i = 0; i < 5; ++i) {
    CHECK(api.runs("")["runs"].size() == 1);
    CHECK(answer(api, watched.run, "")["compare"][1]["repeats_paired"] == 1);
    CHECK(api.handle({"GET", "/api/report", {{"db", "0"}, {"id", "1"}}}).status == 200);
  }
  // One copy, upgraded, served every request; no request made its own.
  CHECK(api.copies(0) == 1);
  CHECK(db::Store::upgraded_copies_made() == made_before);
  // The file itself is left at its version.
  CHECK(db::current_version(store.connection()) == 5);
}

TEST_CASE("a live run's ETA is its trials left at their mean time, whenever the run was created",
          "[serve]") {
  // The rate since the run was created made a run
  // resumed a day later look a day from done.
  db::RunCounts c;
  c.total = 12;
  c.finished = 2;    // 10 left, 60 s a trial
  c.started_s = 60;  // two running, 30 s in each
  const auto eta = host::detail::eta_s(c, 60, 2);
  REQUIRE(eta);
  CHECK(*eta == Approx((10 * 60 - 60) / 2.0));
  CHECK(*host::detail::eta_s(c, 60, 0) == Approx(10 * 60 - 0.0));  // between trials: one at a time
  c.finished = 0;
  CHECK_FALSE(host::detail::eta_s(c, 60, 2));  // no trial finished: no rate yet
  c.finished = 12;
  c.started_s = 0;
  CHECK(*host::detail::eta_s(c, 60, 0) == 0);
}

TEST_CASE("history answers a workload's series as the report's page under its policy",
          "[serve][history]") {
  test::TempDir dir("serve_history");
  const std::string path = dir.file("h.db");
  {
    db::Store store(path, db::Connection::Mode::read_write);
    for (int i = 0; i < 8; ++i) {
      test::RunSpec r;
      if (i >= 4) r.level = 900;
      test::write_run(store, i, r);
    }
  }
  const host::ServeApi api({path}, 0, host::ServeApi::Snapshot::never);
  auto get = [&](const std::map<std::string, std::string>& query) {
    return api.handle({"GET", "/api/history", query});
  };
  const auto page = get({{"db", "0"}, {"workload", "noop"}});
  CHECK(page.status == 200);
  CHECK(page.content_type == "text/html; charset=utf-8");
  CHECK_THAT(page.body, Catch::Contains("<svg data-chart=\"history-1\""));
  CHECK_THAT(page.body, Catch::Contains("<svg data-chart=\"history-2\""));
  CHECK_THAT(page.body, Catch::Contains("class=\"cp\" data-run=\"5\""));
  CHECK(page.body.find("<script") == std::string::npos);
  // The report's policy: its one stylesheet by hash, nothing to run.
  bool policy = false;
  for (const auto& [name, value] : page.headers) {
    if (name == "Content-Security-Policy") {
      policy = true;
      CHECK_THAT(value, Catch::StartsWith("default-src 'none'; style-src 'sha256-"));
      CHECK(value.find("script-src") == std::string::npos);
    }
  }
  CHECK(policy);
  // A workload with no run gets a page that says so; a request without a
  // workload, or for a database not served, gets none.
  CHECK_THAT(get({{"db", "0"}, {"workload", "<b>x</b>"}}).body,
             Catch::Contains("History of &lt;b&gt;x&lt;/b&gt;"));
  CHECK(get({{"db", "0"}}).status == 404);
  CHECK(get({{"db", "1"}, {"workload", "noop"}}).status == 404);
  CHECK(get({{"db", "x"}, {"workload", "noop"}}).status == 404);
  // The page's first paint links each run's workload to its history.
  host::HttpRequest first;
  first.method = "GET";
  first.path = "/";
  CHECK_THAT(api.handle(first).body,
             Catch::Contains("<a href=\"/api/history?db=0&amp;workload=noop\">noop</a>"));
}

TEST_CASE("results, export and serve give a trial's fields under the same names and values",
          "[serve]") {
  WatchedRun watched("serve_fields");
  db::Store& store = watched.store;
  const auto trials = store.trials(watched.run);
  finish(store, trials[0].id, db::TrialStatus::ok, 100);
  finish(store, trials[1].id, db::TrialStatus::ok, 200);
  finish(store, trials[3].id, db::TrialStatus::failed, 0);
  const db::SweepRecord sweep = *store.sweep(watched.run);

  const host::ServeApi api({watched.path}, /*share_s=*/0);
  const auto served = trials_by_id(answer(api, watched.run, "")["trials"]);
  const auto results = trials_by_id(Json::parse(
      host::results_table(sweep, host::read_results(store, sweep), host::OutputFormat::json)));
  std::ostringstream text;
  host::write_export(store, sweep, false, host::OutputFormat::json, text);
  const auto exported = trials_by_id(Json::parse(text.str()));
  REQUIRE(served.size() == 6);
  REQUIRE(results.size() == 6);
  REQUIRE(exported.size() == 6);

  // Every name two of the listings share holds the same value in both, and
  // the trial's place and figures are among them: numbered from 1.
  for (const auto& [id, s] : served) {
    const Json& r = results.at(id);
    const Json& e = exported.at(id);
    for (const auto& [a, b] : {std::pair{&s, &r}, std::pair{&s, &e}, std::pair{&r, &e}}) {
      for (const auto& [key, value] : a->items()) {
        if (b->contains(key)) CHECK(b->at(key) == value);
      }
    }
    for (const char* key : {"trial_id", "config", "repeat", "status", "throughput_median"}) {
      CHECK(s.contains(key));
      CHECK(r.contains(key));
      CHECK(e.contains(key));
    }
  }
  const Json& second = served.at(trials[1].id);
  CHECK(second["config"] == 2);
  CHECK(second["repeat"] == 1);
  CHECK(second["throughput_median"] == 200.0);
  CHECK(exported.at(trials[1].id)["config_index"] == 1);  // export's old numbering, kept
  CHECK(exported.at(trials[3].id)["error"] == "<b>boom</b>");
  CHECK(results.at(trials[3].id)["error"] == "<b>boom</b>");
}
