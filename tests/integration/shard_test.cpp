// Sharded runs with the real binary: `run --shard i/n` on several "machines",
// `merge` gathering them, a shard host killed mid-trial, and the errors of
// `launch` and `merge` (the Slurm cluster itself: tests/slurm/launch_test.sh).
#include "harness.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <set>
#include <thread>

using namespace gpusweep;
using Catch::Matchers::Contains;
using test::count_in;
using test::Sandbox;
using test::text_in;

namespace {

// (config_hash, repeat) of every trial of a database.
std::set<std::string> trial_ids(const std::string& path) {
  db::Connection c(path, db::Connection::Mode::read_only);
  auto st = c.prepare("SELECT config_hash || '#' || repeat FROM trials");
  std::set<std::string> out;
  while (st.step()) out.insert(st.get_text(0));
  return out;
}

}  // namespace

TEST_CASE("run --shard splits a sweep across hosts and merge gathers one run",
          "[integration][shard]") {
  Sandbox box;
  box.write("s.json", R"({"name": "split", "workload": "noop", "grid": {"batch_size": [1, 2, 3]},
    "measure": {"min_block_s": 0, "warmup_steps": 1, "steps_per_block": 5, "blocks": 5, "repeats": 2}})");
  REQUIRE(box.gpusweep("run s.json --db full.db").code == 0);

  // Four "machines", each with its own database (default name).
  for (int i = 1; i <= 4; ++i) {
    const auto r = box.gpusweep("run s.json --shard " + std::to_string(i) + "/4");
    INFO(r.output);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.output, Contains("shard " + std::to_string(i) + "/4 of sweep 'split'"));
  }
  const auto shard = [&](int i) {
    return box.path("gpusweep-shard-" + std::to_string(i) + "-of-4.db");
  };
  CHECK(count_in(shard(1), "SELECT count(*) FROM trials") == 2);
  CHECK(count_in(shard(2), "SELECT count(*) FROM trials") == 2);
  CHECK(count_in(shard(3), "SELECT count(*) FROM trials") == 1);
  CHECK(count_in(shard(4), "SELECT count(*) FROM trials") == 1);
  CHECK(count_in(shard(3), "SELECT shard_index * 10 + shard_count FROM sweeps") == 34);
  std::set<std::string> from_shards;
  for (int i = 1; i <= 4; ++i) {
    for (const auto& id : trial_ids(shard(i))) CHECK(from_shards.insert(id).second);  // disjoint
  }
  CHECK(from_shards == trial_ids(box.path("full.db")));  // and together the whole sweep

  // A finished shard run again runs nothing.
  auto r = box.gpusweep("run s.json --shard 3/4");
  CHECK(r.code == 0);
  CHECK_THAT(r.output, Contains("0 trials to run, 1 already finished"));

  r = box.gpusweep(
      "merge gpusweep-shard-1-of-4.db gpusweep-shard-2-of-4.db "
      "gpusweep-shard-3-of-4.db gpusweep-shard-4-of-4.db --db main.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Contains("6 trials imported, 0 already there"));
  const std::string main = box.path("main.db");
  CHECK(trial_ids(main) == trial_ids(box.path("full.db")));
  CHECK(count_in(main, "SELECT count(*) FROM sweeps") == 1);
  CHECK(text_in(main, "SELECT status FROM sweeps") == "finished");
  CHECK(count_in(main, "SELECT count(*) FROM trials WHERE status = 'ok'") == 6);
  CHECK(count_in(main, "SELECT count(*) FROM blocks") == 30);
  // The merged run reads like any other.
  r = box.gpusweep("results --db main.db --format json");
  CHECK(r.code == 0);
  CHECK(nlohmann::json::parse(r.output).size() == 6);

  r = box.gpusweep("merge gpusweep-shard-4-of-4.db gpusweep-shard-2-of-4.db --db main.db");
  CHECK(r.code == 0);
  CHECK_THAT(r.output, Contains("0 trials imported, 3 already there"));
  CHECK(count_in(main, "SELECT count(*) FROM trials") == 6);
  CHECK(count_in(main, "SELECT count(*) FROM blocks") == 30);
}

TEST_CASE("bad --shard, --run-key and merge arguments are usage errors naming the flag",
          "[integration][shard]") {
  Sandbox box;
  box.write("s.json", R"({"name": "x", "workload": "noop", "grid": {"batch_size": [1, 2]}})");
  for (const char* bad : {"0/4", "5/4", "two/4", "1"}) {
    const auto r = box.gpusweep(std::string("run s.json --shard ") + bad);
    INFO(r.output);
    CHECK(r.code == 2);
    CHECK_THAT(r.output, Contains(std::string("--shard '") + bad + "'"));
  }
  auto r = box.gpusweep("run s.json --run-key k");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("--run-key") && Contains("--shard"));
  CHECK_FALSE(std::filesystem::exists(box.path("gpusweep.db")));

  r = box.gpusweep("merge --db main.db");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("name the run folders or shard databases"));
  r = box.gpusweep("merge nowhere.db --db main.db");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("'nowhere.db' does not exist"));
  std::filesystem::create_directory(box.path("folder"));
  r = box.gpusweep("merge folder --db main.db");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("'folder'") && Contains("not a launch run folder"));
  box.write("junk.db", "this is not an SQLite database, only text that says so");
  r = box.gpusweep("merge junk.db --db main.db");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("junk.db"));
}

TEST_CASE(
    "a shard host killed mid-trial leaves a consistent, resumable shard, and merge takes only "
    "its finished trials",
    "[integration][shard][kill]") {
  Sandbox box;
  // Six trials of about 0.4 s, one after another (taking turns, they would
  // all finish together); shard 1/2 runs three of them.
  box.write("k.json", R"({"name": "killed", "workload": "noop", "base": {"spin_us": 2000},
    "grid": {"batch_size": [1, 2, 3, 4, 5, 6]},
    "measure": {"repeats": 1, "warmup_steps": 0, "steps_per_block": 40, "blocks": 5,
                "interleave": 1}})");
  const std::string shard = box.path("shard1.db");
  const pid_t pid = box.start("run k.json --shard 1/2 --db shard1.db", "log.txt");
  int64_t ok = 0;
  for (int i = 0; i < 400 && ok < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    if (std::filesystem::exists(shard) &&
        count_in(shard, "SELECT count(*) FROM sqlite_master WHERE name = 'trials'") == 1) {
      ok = count_in(shard, "SELECT count(*) FROM trials WHERE status = 'ok'");
    }
  }
  REQUIRE(ok >= 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // into the next trial
  REQUIRE(::kill(pid, SIGKILL) == 0);
  CHECK(Sandbox::wait(pid) == -SIGKILL);
  INFO(box.read("log.txt"));

  CHECK(text_in(shard, "PRAGMA integrity_check") == "ok");
  const int64_t ok_before = count_in(shard, "SELECT count(*) FROM trials WHERE status = 'ok'");
  CHECK(ok_before >= 1);
  CHECK(ok_before < 3);
  CHECK(count_in(shard, "SELECT count(*) FROM trials") == 3);
  CHECK(count_in(shard, "SELECT count(*) FROM trials WHERE status = 'pending'") == 3 - ok_before);
  CHECK(count_in(shard, "SELECT count(*) FROM blocks") == 5 * ok_before);  // none half-written
  const std::string first_finish =
      text_in(shard, "SELECT finished_at FROM trials WHERE status = 'ok' ORDER BY id LIMIT 1");

  // Merged as it is: the finished trials only.
  auto r = box.gpusweep("merge shard1.db --db main.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Contains(std::to_string(ok_before) + " trials imported") &&
                           Contains(std::to_string(3 - ok_before) + " unfinished"));
  const std::string main = box.path("main.db");
  CHECK(count_in(main, "SELECT count(*) FROM trials WHERE status = 'ok'") == ok_before);
  CHECK(count_in(main, "SELECT count(*) FROM trials WHERE status = 'pending'") == 3 - ok_before);
  CHECK(count_in(main, "SELECT count(*) FROM blocks") == 5 * ok_before);
  CHECK(count_in(main, "SELECT count(*) FROM trial_summary") == ok_before);
  CHECK(text_in(main, "SELECT status FROM sweeps") == "running");

  // The same shard again (a requeued task) resumes it: only what was left.
  r = box.gpusweep("run k.json --shard 1/2 --db shard1.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Contains(std::to_string(3 - ok_before) + " trials to run, " +
                                std::to_string(ok_before) + " already finished"));
  CHECK(count_in(shard, "SELECT count(*) FROM trials WHERE status = 'ok'") == 3);
  CHECK(count_in(shard, "SELECT count(*) FROM sweeps") == 1);
  CHECK(text_in(shard, "SELECT finished_at FROM trials WHERE status = 'ok' ORDER BY id LIMIT 1") ==
        first_finish);

  REQUIRE(box.gpusweep("run k.json --shard 2/2 --db shard2.db").code == 0);
  r = box.gpusweep("merge shard1.db shard2.db --db main.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Contains(std::to_string(6 - ok_before) + " trials imported, " +
                                std::to_string(ok_before) + " already there"));
  CHECK(count_in(main, "SELECT count(*) FROM trials WHERE status = 'ok'") == 6);
  CHECK(count_in(main, "SELECT count(*) FROM blocks") == 30);
  CHECK(text_in(main, "SELECT status FROM sweeps") == "finished");
}

TEST_CASE("launch explains what it needs, and a failed submission records nothing",
          "[integration][launch]") {
  Sandbox box;
  box.write("s.json", R"({"name": "l", "workload": "noop", "grid": {"batch_size": [1, 2]},
    "measure": {"repeats": 1}})");
  auto r = box.gpusweep("launch s.json --db main.db");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("pass --slurm"));
  r = box.gpusweep("launch s.json --slurm --array-parallelism 0 --db main.db");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("--array-parallelism 0"));
  r = box.gpusweep("launch s.json --slurm --sbatch-arg qos --db main.db");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("--sbatch-arg 'qos'") && Contains("--sbatch-arg=--qos=high"));
  CHECK_FALSE(std::filesystem::exists(box.path("main.db")));

  // No Slurm client on PATH: a clear error, and the run is not left behind.
  const std::string path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  ::setenv("PATH", box.path("no-such-bin").c_str(), 1);
  r = box.gpusweep("launch s.json --slurm --db main.db --run-dir run");
  ::setenv("PATH", path.c_str(), 1);
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("'sbatch' is not on PATH"));
  CHECK(count_in(box.path("main.db"), "SELECT count(*) FROM sweeps") == 0);
  CHECK(count_in(box.path("main.db"), "SELECT count(*) FROM trials") == 0);
  // The run folder was written, with a script that runs shard i/n.
  const std::string script = box.read("run/run.sbatch");
  CHECK_THAT(script, Contains("#SBATCH --array=1-2\n") && Contains("--shard \"$i/2\""));
  CHECK_THAT(box.read("run/sweep.json"), Contains("\"name\": \"l\""));
  r = box.gpusweep("launch s.json --slurm --db main.db --run-dir run");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("--run-dir") && Contains("not empty"));

  for (const char* cmd : {"launch", "merge"}) {
    r = box.gpusweep(std::string(cmd) + " --help");
    INFO(cmd);
    CHECK(r.code == 0);
    CHECK_THAT(r.output, Contains(std::string("usage: gpusweep ") + cmd) && Contains("--db"));
  }
  CHECK_THAT(box.gpusweep("launch --help").output,
             Contains("--array-parallelism") && Contains("--sbatch-arg") && Contains("--wait"));
  CHECK_THAT(box.gpusweep("run --help").output, Contains("--shard") && Contains("--run-key"));
  CHECK_THAT(box.gpusweep("--help").output, Contains("launch") && Contains("merge"));
}
