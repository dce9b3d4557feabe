// The database is the product: hosts killed at random moments, two hosts on
// one database, readers beside a writer. Real gpusweep processes throughout.
#include "harness.hpp"

#include <gpusweep/random.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <map>
#include <thread>

using namespace gpusweep;
using Catch::Matchers::Contains;
using test::Sandbox;

namespace {

// A sweep of `trials` noop trials of 62 steps of `spin_us` each.
std::string noop_sweep(const std::string& name, int trials, int spin_us = 1000) {
  std::string sizes;
  for (int i = 1; i <= trials; ++i) sizes += (i > 1 ? ", " : "") + std::to_string(i);
  return R"({"name": ")" + name + R"(", "workload": "noop", "base": {"spin_us": )" +
         std::to_string(spin_us) + R"(},
    "grid": {"batch_size": [)" +
         sizes + R"(]},
    "measure": {"repeats": 1, "warmup_steps": 2, "steps_per_block": 12, "blocks": 5}})";
}

// What a finished trial stored: status, finish time and block count.
std::map<int64_t, std::string> finished_trials(const std::string& path) {
  std::map<int64_t, std::string> out;
  db::Connection c(path, db::Connection::Mode::read_only);
  auto st = c.prepare(
      "SELECT t.id, t.status || ' ' || ifnull(t.finished_at, '') || ' ' || "
      "(SELECT count(*) FROM blocks b WHERE b.trial_id = t.id) || ' ' || "
      "ifnull((SELECT throughput_median FROM trial_summary m WHERE m.trial_id = t.id), '') "
      "FROM trials t WHERE t.status NOT IN ('pending', 'interrupted')");
  while (st.step()) out[st.get_int(0)] = st.get_text(1);
  return out;
}

// Processes whose working directory is `dir` (workers run in the host's).
int processes_in(const std::string& dir) {
  int n = 0;
  const auto want = std::filesystem::weakly_canonical(dir);
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::error_code ec;
    const auto cwd = std::filesystem::read_symlink(e.path() / "cwd", ec);
    if (!ec && cwd == want) ++n;
  }
  return n;
}

// One database that hosts are killed on: what it had committed must stay.
struct Killed {
  std::string path;
  int64_t planned = 0;  // trials of its run once created
  std::map<int64_t, std::string> committed;

  bool has_tables() const {
    return std::filesystem::exists(path) &&
           test::count_in(path, "SELECT count(*) FROM sqlite_master WHERE name = 'trials'") == 1;
  }

  // Everything committed before is still there, unchanged; a run is created
  // whole; finished trials are whole.
  void check() {
    if (!has_tables()) return;  // killed before creating the database or its tables
    CHECK(test::text_in(path, "PRAGMA integrity_check") == "ok");
    CHECK(test::count_in(path, "SELECT count(*) FROM sweeps") <= 1);
    const int64_t trials = test::count_in(path, "SELECT count(*) FROM trials");
    CHECK((trials == 0 || trials == planned));
    const auto now = finished_trials(path);
    for (const auto& [id, stored] : committed) {
      INFO("trial " << id);
      REQUIRE(now.count(id) == 1);
      CHECK(now.at(id) == stored);
    }
    CHECK(test::count_in(path,
                         "SELECT count(*) FROM trials t WHERE status = 'ok' AND "
                         "((SELECT count(*) FROM blocks b WHERE b.trial_id = t.id) != 5 OR "
                         "NOT EXISTS (SELECT 1 FROM trial_summary m WHERE "
                         "m.trial_id = t.id))") == 0);
    committed = now;
  }
};

}  // namespace

// The hidden-loss test at scale, where a rare loss would show: 50 SIGKILLs of
// hosts that mix the fork server and fresh workers, one and two jobs,
// interleaved turns, two shards of the run in databases of their own, and a
// plugin whose trials fail and crash.
TEST_CASE("hosts killed at random moments lose nothing and record nothing twice",
          "[integration][faults][kill]") {
  Sandbox box;
  constexpr int kSizes = 16;
  std::string sizes;
  for (int i = 1; i <= kSizes; ++i) sizes += (i > 1 ? ", " : "") + std::to_string(i);
  // 16 trials that run 21 steps of 20 ms, 16 that throw and 16 that crash.
  box.write("k.json", R"({"name": "killed", "workload": "faults",
    "grid": {"batch_size": [)" +
                          sizes + R"(], "mode": ["slow_step", "throw_step", "segfault"]},
    "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 4, "blocks": 5}})");
  const int64_t kTrials = 3 * kSizes;
  Killed main{box.db(), kTrials, {}};
  Killed shard1{box.path("shard1.db"), kTrials / 2, {}};
  Killed shard2{box.path("shard2.db"), kTrials / 2, {}};
  const std::vector<std::string> hosts = {
      "run k.json --db results.db --resume", "run k.json --db results.db --resume --jobs 2",
      "run k.json --db results.db --resume --jobs 2 --fresh-workers",
      "run k.json --db shard1.db --shard 1/2 --run-key k",
      "run k.json --db shard2.db --shard 2/2 --run-key k --jobs 2"};
  random::SplitMix64 delays(20261124);  // the same delays with every standard library
  int kills = 0;
  for (int round = 0; round < 50; ++round) {
    const size_t host = static_cast<size_t>(round) % hosts.size();
    Killed& db = host < 3 ? main : host == 3 ? shard1 : shard2;
    const pid_t pid = box.start(hosts[host], "log.txt");
    std::this_thread::sleep_for(std::chrono::milliseconds(random::uniform_int(delays, 30, 600)));
    if (::kill(pid, SIGKILL) == 0) ++kills;
    Sandbox::wait(pid);
    INFO("round " << round << " (" << hosts[host] << "): " << box.read("log.txt"));
    db.check();
  }
  CHECK(kills >= 40);  // most rounds were cut short, not finished before the kill
  // ...and the kills came mid-run: trials were still left for the survivors.
  CHECK(test::count_in(main.path,
                       "SELECT count(*) FROM trials WHERE status NOT IN "
                       "('pending', 'interrupted')") < kTrials);

  // The survivors finish: exactly the planned trials, each once, each with
  // the status its mode gives.
  const auto finish = [&](const std::string& args, Killed& db) {
    const auto r = box.gpusweep(args);
    INFO(args << ": " << r.output);
    CHECK(r.code == 0);  // failed and crashed trials are results, not errors
    db.check();
    CHECK(test::text_in(db.path, "SELECT status FROM sweeps") == "finished");
    CHECK(test::count_in(db.path, "SELECT count(DISTINCT config_hash) FROM trials") == db.planned);
  };
  finish(hosts[1], main);
  finish(hosts[3], shard1);
  finish(hosts[4], shard2);
  const auto merged = box.gpusweep("merge shard1.db shard2.db --db merged.db");
  INFO(merged.output);
  CHECK(merged.code == 0);
  for (const std::string& path : {main.path, box.path("merged.db")}) {
    INFO(path);
    CHECK(test::count_in(path, "SELECT count(*) FROM trials") == kTrials);
    CHECK(test::count_in(path, "SELECT count(DISTINCT config_hash) FROM trials") == kTrials);
    CHECK(test::count_in(path, "SELECT count(*) FROM trials WHERE status = 'ok'") == kSizes);
    CHECK(test::count_in(path, "SELECT count(*) FROM trials WHERE status = 'failed'") == kSizes);
    CHECK(test::count_in(path, "SELECT count(*) FROM trials WHERE status = 'crashed'") == kSizes);
    CHECK(test::count_in(path, "SELECT count(*) FROM blocks") == 5 * kSizes);
    CHECK(test::text_in(path, "PRAGMA integrity_check") == "ok");
  }
  for (const auto& [id, stored] : main.committed)
    CHECK(finished_trials(main.path).at(id) == stored);
  // Workers died with their hosts (PR_SET_PDEATHSIG), fork servers too.
  CHECK(processes_in(box.path("")) == 0);
}

TEST_CASE(
    "two hosts on one database: distinct runs proceed, a run in progress is not taken "
    "twice, readers read meanwhile",
    "[integration][faults][concurrency]") {
  Sandbox box;
  box.write("a.json", noop_sweep("alpha", 8));
  box.write("b.json", noop_sweep("beta", 8));
  const pid_t a = box.start("run a.json --db results.db", "a.txt");
  const pid_t b = box.start("run b.json --db results.db", "b.txt");
  // Wait until alpha is under way, then try to run it a second time.
  for (int i = 0; i < 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    if (box.has_tables() &&
        box.count("SELECT count(*) FROM trials t JOIN sweeps s ON s.id = t.sweep_id "
                  "WHERE s.name = 'alpha' AND t.status = 'ok'") >= 1) {
      break;
    }
  }
  CHECK(processes_in(box.path("")) >= 2);  // both hosts (and a worker) still at work
  const auto twice = box.gpusweep("resume alpha --db results.db");
  INFO(twice.output);
  CHECK(twice.code == 2);
  CHECK_THAT(twice.output, Contains("being run by another gpusweep process"));
  // Readers while both write.
  const auto results = box.gpusweep("results --sweep alpha --db results.db");
  CHECK(results.code == 0);
  CHECK_THAT(results.output, Contains("alpha"));
  const auto sql =
      box.gpusweep("sql \"SELECT count(*) AS n FROM sweeps\" --db results.db --format json");
  CHECK(sql.code == 0);
  CHECK(nlohmann::json::parse(sql.output)[0]["n"] == 2);
  CHECK(box.gpusweep("report --sweep beta --html r.html --db results.db").code == 0);

  INFO(box.read("a.txt") + box.read("b.txt"));
  CHECK(Sandbox::wait(a) == 0);
  CHECK(Sandbox::wait(b) == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 16);
  CHECK(box.count("SELECT count(*) FROM trials") == 16);
  CHECK(box.count("SELECT count(*) FROM sweeps WHERE status = 'finished'") == 2);
  CHECK(box.text("PRAGMA integrity_check") == "ok");
}

TEST_CASE("hostile sweep files and databases get one clear error, exit code 2, nothing written",
          "[integration][faults][hostile]") {
  Sandbox box;
  struct Case {
    std::string name;
    std::string text;
    std::string says;
  };
  const std::string nested(100000, '[');
  std::string grid;  // 10 axes of 10 values: 10^10 configs
  for (int k = 0; k < 10; ++k) {
    grid += std::string(k ? ", " : "") + "\"k" + std::to_string(k) + "\": [0,1,2,3,4,5,6,7,8,9]";
  }
  const std::vector<Case> cases = {
      {"empty.json", "", "empty"},
      {"not json.json", "name: x\nworkload: noop\n", "line 1"},
      {"nested.json", nested, "nested.json"},
      {"nan.json", R"({"name": "x", "workload": "noop", "base": {"spin_us": NaN}})", "nan.json"},
      {"types.json", R"({"name": "x", "workload": "noop", "base": {"spin_us": "fast"}})",
       "base.spin_us"},
      {"dupes.json", R"({"name": "x", "name": "y", "workload": "noop"})", "appears twice"},
      {"huge grid.json", R"({"name": "x", "workload": "noop", "grid": {)" + grid + "}}",
       "10000000000"},
      {"ünïcode dir/s.json", R"({"name": "x", "workload": "nothere"})", "unknown workload"},
  };
  std::filesystem::create_directory(box.path("ünïcode dir"));
  for (const auto& c : cases) {
    box.write(c.name, c.text);
    const auto r = box.gpusweep("run '" + c.name + "' --db 'my results.db'");
    INFO(c.name << ": " << r.output);
    CHECK(r.code == 2);
    CHECK_THAT(r.output, Contains(c.says));
    CHECK(r.output.find("error") != std::string::npos);
    CHECK(r.output.size() < 2000);  // one clear message, not a dump
    CHECK_FALSE(std::filesystem::exists(box.path("my results.db")));
  }
  // 100 MB of JSON: refused by size before it is parsed.
  {
    std::ofstream big(box.path("big.json"));
    big << R"({"name": "x", "workload": "noop", "description": ")";
    const std::string chunk(1 << 20, 'a');
    for (int i = 0; i < 100; ++i) big << chunk;
    big << "\"}";
  }
  auto r = box.gpusweep("run big.json --db results.db");
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("big.json") && Contains("MiB"));
  CHECK_FALSE(std::filesystem::exists(box.db()));

  // Databases: someone else's, a newer gpusweep's, a read-only one.
  box.write("ok.json", noop_sweep("fine", 1));
  {
    db::Connection other(box.path("other.db"), db::Connection::Mode::read_write);
    other.exec("CREATE TABLE customers (id INTEGER)");
  }
  r = box.gpusweep("run ok.json --db other.db");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("not a gpusweep one"));
  {
    db::Connection newer(box.path("newer.db"), db::Connection::Mode::read_write);
    newer.exec("PRAGMA user_version = 999");
  }
  r = box.gpusweep("run ok.json --db newer.db");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("newer than this gpusweep"));
  REQUIRE(box.gpusweep("run ok.json --db ro.db").code == 0);
  std::filesystem::permissions(
      box.path("ro.db"), std::filesystem::perms::owner_read | std::filesystem::perms::group_read);
  if (::geteuid() != 0) {  // root writes through file permissions
    r = box.gpusweep("run ok.json --db ro.db");
    CHECK(r.code == 2);
    CHECK_THAT(r.output, Contains("ro.db"));
  }
  CHECK(box.gpusweep("results --db ro.db").code == 0);  // reading needs no write access
}

TEST_CASE("a worker that falls silent is ended after silence_s, a slow live one is not",
          "[integration][faults][heartbeat]") {
  Sandbox box;
  box.write("h.json", R"({"name": "beats", "workload": "faults",
    "grid": {"mode": ["freeze_step", "long_step"]},
    "measure": {"repeats": 1, "warmup_steps": 0, "steps_per_block": 2, "blocks": 5,
                "timeout_s": 120, "silence_s": 1.5, "min_block_s": 0}})");
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = box.gpusweep("run h.json --db results.db");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(r.output);
  // The baseline (freeze_step) timed out: run's exit status says it failed.
  CHECK(r.code == 3);
  // The stopped worker: timeout for silence, seconds after it stopped, not 120 s.
  CHECK(box.text("SELECT status FROM trials WHERE config_json LIKE '%freeze_step%'") == "timeout");
  CHECK_THAT(box.text("SELECT error FROM trials WHERE config_json LIKE '%freeze_step%'"),
             Contains("silent for") && Contains("no heartbeat"));
  CHECK(took < 30);
  // A 2.5 s step is longer than silence_s, but the worker kept beating.
  CHECK(box.text("SELECT status FROM trials WHERE config_json LIKE '%long_step%'") == "ok");
}

TEST_CASE("a plugin folder anyone can write to is not searched, with the fix",
          "[integration][faults][plugins]") {
  Sandbox box;
  std::filesystem::create_directory(box.path("open"));
  std::filesystem::copy_file(std::string(GPUSWEEP_PLUGIN_DIR) + "/gpusweep_noop.so",
                             box.path("open/gpusweep_planted.so"));
  std::filesystem::permissions(box.path("open"), std::filesystem::perms::all);  // 0777
  auto r = box.gpusweep("plugins --plugin-path open");  // exit 1: broken fixtures listed
  INFO(r.output);
  CHECK_THAT(r.output,
             Contains("is not searched: it is writable by every user") && Contains("chmod go-w"));
  CHECK_THAT(r.output, !Contains("planted"));
  std::filesystem::permissions(
      box.path("open"), std::filesystem::perms::group_write | std::filesystem::perms::others_write,
      std::filesystem::perm_options::remove);
  r = box.gpusweep("plugins --plugin-path open");
  CHECK_THAT(r.output, !Contains("not searched") && Contains("planted"));
}
