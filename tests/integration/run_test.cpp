// The real gpusweep binary on real plugins (noop and the faults fixture),
// checked afterwards with SQL.
#include "harness.hpp"
#include "support/spawn.hpp"

#include <gpusweep/db/migrate.hpp>
#include <nlohmann/json.hpp>

#include <iterator>

#include <signal.h>

#include <chrono>
#include <map>
#include <sstream>
#include <thread>

using namespace gpusweep;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using test::count_in;
using test::Sandbox;

TEST_CASE("a noop sweep records every trial with its blocks", "[integration]") {
  Sandbox box;
  box.write("s.json", R"({"name": "noop_grid", "workload": "noop",
    "grid": {"batch_size": [1, 2, 4]},
    "measure": {"min_block_s": 0, "warmup_steps": 2, "steps_per_block": 50, "blocks": 5, "repeats": 2},
    "baseline": {"batch_size": 1}})");
  const auto r = box.gpusweep("run s.json --db results.db --jobs 2");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Contains("vs base") && Contains("baseline: batch_size=1"));
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 6);
  CHECK(box.count("SELECT count(*) FROM trials") == 6);
  CHECK(box.count("SELECT count(*) FROM blocks") == 30);
  CHECK(box.count("SELECT count(DISTINCT config_hash) FROM trials") == 3);
  CHECK(box.count(
            "SELECT count(*) FROM trial_summary WHERE throughput_median > 0 AND blocks = 5") == 6);
  CHECK(box.count("SELECT count(*) FROM trials WHERE environment_id IS NULL") == 0);
  CHECK(box.text("SELECT status FROM sweeps") == "finished");
  // Throughput is per sample: batch 4 reports four times the samples per step.
  CHECK(box.count("SELECT count(*) FROM trial_summary WHERE samples_per_step = 4") == 2);

  const auto res = box.gpusweep("results --db results.db");
  CHECK(res.code == 0);
  CHECK_THAT(res.output, Contains("noop_grid") && Contains("batch_size") && Contains("steps/s"));
  // Every listing speaks csv, json and md too; no colour codes when piped.
  const auto json =
      nlohmann::json::parse(box.gpusweep("results --db results.db --format json").output);
  REQUIRE(json.size() == 6);
  CHECK(json[0]["status"] == "ok");
  CHECK(json[0].contains("throughput_cv"));
  CHECK_THAT(box.gpusweep("results --db results.db --format csv").output,
             Contains("config,batch_size,repeat,status,throughput_median"));
  CHECK_THAT(box.gpusweep("results --list --db results.db --format md").output,
             Contains("| noop_grid |"));
  CHECK_THAT(box.gpusweep("plugins --format csv").output, Contains("name,version,unit"));
  CHECK(box.gpusweep("compare --db results.db").output.find('\033') == std::string::npos);
}

TEST_CASE(
    "measure.max_memory caps each trial: growing until allocation fails is oom, a leak "
    "shows in the host-measured peak memory",
    "[integration][faults]") {
  Sandbox box;
  box.write("m.json", R"({"name": "memory", "workload": "faults",
    "grid": {"mode": ["ok", "grow", "leak"]},
    "measure": {"min_block_s": 0, "repeats": 1, "warmup_steps": 1, "steps_per_block": 6, "blocks": 5, "timeout_s": 30,
                "max_memory": "256MiB"}})");
  const auto r = box.gpusweep("run m.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  auto of = [&](const std::string& what, const std::string& mode) {
    return box.text("SELECT " + what +
                    " FROM trials WHERE json_extract(config_json, '$.mode') = '" + mode + "'");
  };
  // 16 MiB a step against a 256 MiB cap: out of memory well before step 31.
  CHECK(of("status", "grow") == "oom");
  CHECK(of("status", "ok") == "ok");
  CHECK(of("status", "leak") == "ok");
  // The leak's 31 MiB (1 MiB a step) is in its peak resident memory as the
  // host measured it (wait4's ru_maxrss), the ok trial's is not.
  auto peak = [&](const std::string& mode) {
    return box.count(
        "SELECT CAST(m.value AS INTEGER) FROM metrics m JOIN trials t ON "
        "t.id = m.trial_id WHERE m.name = 'monitor_rss_peak_bytes' AND "
        "json_extract(t.config_json, '$.mode') = '" +
        mode + "'");
  };
  CHECK(peak("ok") > 0);
  CHECK(peak("leak") - peak("ok") > int64_t{24} << 20);
  // A cap that is not a size is a usage error naming the key.
  box.write("bad.json", R"({"name": "b", "workload": "faults",
    "measure": {"repeats": 1, "max_memory": "lots"}})");
  const auto bad = box.gpusweep("run bad.json --db results.db");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.output, Contains("measure.max_memory") && Contains("2GiB"));
}

TEST_CASE("crashes, hangs, throws, OOM and skips are recorded and the sweep goes on",
          "[integration][faults]") {
  Sandbox box;
  box.write("f.json", R"({"name": "faults", "workload": "faults",
    "grid": {"mode": ["ok", "segfault", "hang_step", "throw_step", "skip", "oom", "abort",
                      "exit0_step", "throw_evaluate", "stdout_flood", "stderr_flood",
                      "garbage_proto", "nan", "inf", "leak", "terminate", "throw_setup",
                      "hang_setup", "hang_evaluate"]},
    "measure": {"min_block_s": 0, "repeats": 1, "warmup_steps": 1, "steps_per_block": 2, "blocks": 5, "timeout_s": 3}})");
  const auto r = box.gpusweep("run f.json --db results.db --jobs 2");
  INFO(r.output);
  REQUIRE(r.code == 0);
  auto status_of = [&](const std::string& mode) {
    return box.text("SELECT status FROM trials WHERE json_extract(config_json, '$.mode') = '" +
                    mode + "'");
  };
  auto error_of = [&](const std::string& mode) {
    return box.text(
        "SELECT coalesce(error, '') FROM trials WHERE "
        "json_extract(config_json, '$.mode') = '" +
        mode + "'");
  };
  CHECK(status_of("ok") == "ok");
  CHECK(status_of("segfault") == "crashed");
  CHECK_THAT(error_of("segfault"), Contains("SIGSEGV") && Contains("measure"));
  CHECK(status_of("hang_step") == "timeout");
  CHECK_THAT(error_of("hang_step"), Contains("timeout_s=3"));
  CHECK(status_of("throw_step") == "failed");
  CHECK_THAT(error_of("throw_step"), Contains("fixture: thrown in step"));
  CHECK(status_of("skip") == "skipped");
  CHECK(error_of("skip") == "fixture: not applicable here");
  CHECK(status_of("oom") == "oom");
  CHECK(status_of("abort") == "crashed");
  CHECK_THAT(error_of("abort"), Contains("SIGABRT"));
  CHECK(status_of("exit0_step") == "crashed");
  CHECK_THAT(error_of("exit0_step"), Contains("before reporting a result"));
  CHECK(status_of("throw_evaluate") == "failed");
  CHECK_THAT(error_of("throw_evaluate"), Contains("evaluate"));
  // Whatever a plugin prints never corrupts the protocol.
  CHECK(status_of("stdout_flood") == "ok");
  CHECK(status_of("stderr_flood") == "ok");
  // Nor does a plugin writing garbage on the descriptor the protocol came on.
  CHECK(status_of("garbage_proto") == "ok");
  CHECK(box.count("SELECT count(*) FROM blocks b JOIN trials t ON t.id = b.trial_id WHERE "
                  "json_extract(t.config_json, '$.mode') = 'garbage_proto'") == 5);
  // Non-finite quality is no quality, never a number in the database.
  for (const char* mode : {"nan", "inf"}) {
    INFO(mode);
    CHECK(status_of(mode) == "ok");
    CHECK(box.count("SELECT count(*) FROM trial_summary m JOIN trials t ON t.id = m.trial_id "
                    "WHERE json_extract(t.config_json, '$.mode') = '" +
                    std::string(mode) + "' AND m.quality IS NULL") == 1);
  }
  // A steady leak (1 MiB a step) does not stop the trial.
  CHECK(status_of("leak") == "ok");
  // Every entry point's failure is named with where it happened.
  CHECK(status_of("terminate") == "crashed");
  CHECK_THAT(error_of("terminate"), Contains("SIGABRT"));
  CHECK(status_of("throw_setup") == "failed");
  CHECK_THAT(error_of("throw_setup"), Contains("fixture: thrown in setup"));
  CHECK(status_of("hang_setup") == "timeout");
  CHECK_THAT(error_of("hang_setup"), Contains("setup"));
  CHECK(status_of("hang_evaluate") == "timeout");
  CHECK_THAT(error_of("hang_evaluate"), Contains("phase evaluate, 5 blocks done"));
  // stderr is kept as a bounded tail, with the full size recorded.
  CHECK(box.count("SELECT stderr_bytes FROM trials WHERE json_extract(config_json, '$.mode') = "
                  "'stderr_flood'") > 2000000);
  CHECK(box.count("SELECT length(stderr_tail) FROM trials WHERE "
                  "json_extract(config_json, '$.mode') = 'stderr_flood'") <= 16384);
  CHECK_THAT(box.text("SELECT stderr_tail FROM trials WHERE json_extract(config_json, '$.mode') = "
                      "'stderr_flood'"),
             Contains("fixture: last stderr line"));
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'pending'") == 0);
}

TEST_CASE("invalid sweeps fail with exit code 2 and write nothing", "[integration]") {
  Sandbox box;
  box.write("bad.json", R"({"name": "x", "workload": "noop", "base": {"spin_uss": 3}})");
  auto r = box.gpusweep("run bad.json --db results.db");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("bad.json") && Contains("base.spin_uss") &&
                           Contains("did you mean 'spin_us'"));
  CHECK_FALSE(std::filesystem::exists(box.db()));

  box.write("unknown.json", R"({"name": "x", "workload": "nopp"})");
  r = box.gpusweep("run unknown.json --db results.db");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("unknown workload 'nopp'") && Contains("did you mean 'noop'"));
  CHECK_FALSE(std::filesystem::exists(box.db()));

  r = box.gpusweep("run missing.json");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("missing.json") && Contains("cannot open"));

  r = box.gpusweep("run --bogus");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("gpusweep run --help"));

  box.write("ok.json", R"({"name": "x", "workload": "noop", "grid": {"spin_us": [0, 1]}})");
  r = box.gpusweep("run ok.json --db results.db --dry-run");
  CHECK(r.code == 0);
  CHECK_THAT(r.output, Contains("2 configs") && Contains("spin_us=1"));
  CHECK_FALSE(std::filesystem::exists(box.db()));
}

TEST_CASE("every command has help, from the same table as its parser", "[integration]") {
  Sandbox box;
  const auto top = box.gpusweep("--help");
  CHECK(top.code == 0);
  // The commands the overview lists: "  NAME   summary" lines after "commands:".
  std::vector<std::string> commands;
  std::istringstream lines(top.output.substr(top.output.find("commands:")));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  ", 0) == 0) commands.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  CHECK(commands.size() >= 21);
  for (const auto& cmd : commands) {
    INFO(cmd);
    const auto r = box.gpusweep(cmd + " --help");
    CHECK(r.code == 0);
    CHECK_THAT(r.output,
               Contains("usage: gpusweep " + cmd) && Contains("--help") && Contains("More: docs/"));
    CHECK(box.gpusweep("help " + cmd).output == r.output);
  }
  // The default shown is the parser's, written from its constant.
  CHECK_THAT(box.gpusweep("check --help").output, Contains("--tolerance PCT (=3%)"));
  const auto md = box.gpusweep("help --format md");
  CHECK(md.code == 0);
  CHECK_THAT(md.output, Contains("### gpusweep check") && Contains("| `--tolerance PCT` | `3%` |"));
  CHECK(box.gpusweep("help frobnicate").code == 2);
  CHECK(box.gpusweep("frobnicate").code == 2);
}

TEST_CASE("plugins lists the plugin path and describes a manifest", "[integration]") {
  Sandbox box;
  auto r = box.gpusweep("plugins noop");
  CHECK(r.code == 0);
  CHECK_THAT(r.output, Contains("spin_us") && Contains("busy-wait") && Contains("steps/s"));
  r = box.gpusweep("plugins faults");
  CHECK_THAT(r.output, Contains("segfault"));
  // The fixture folder holds plugins that must not load; the listing says so.
  r = box.gpusweep("plugins");
  CHECK_THAT(r.output, Contains("noop") && Contains("faults") && Contains("does not load") &&
                           Contains("ABI 2.0"));
  // A plugin whose manifest is not JSON is listed as not loading, with the
  // JSON error, and a sweep naming it gets one clear error, nothing written.
  CHECK_THAT(r.output, Contains("bad_manifest") && Contains("manifest"));
  box.write("m.json", R"({"name": "m", "workload": "bad_manifest"})");
  r = box.gpusweep("run m.json --db m.db");
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("bad_manifest"));
  CHECK_FALSE(std::filesystem::exists(box.path("m.db")));
  r = box.gpusweep("plugins --check " + std::string(GPUSWEEP_TEST_PLUGIN_DIR) +
                   "/gpusweep_bad_manifest.so");
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("manifest") && Contains("JSON"));
}

TEST_CASE("Ctrl-C leaves a resumable database and resume runs only the unfinished trials",
          "[integration][resume]") {
  Sandbox box;
  // Six trials of about 0.4 s each.
  box.write("r.json", R"({"name": "resumable", "workload": "noop", "base": {"spin_us": 2000},
    "grid": {"batch_size": [1, 2, 3, 4, 5, 6]},
    "measure": {"repeats": 1, "warmup_steps": 0, "steps_per_block": 40, "blocks": 5}})");
  const std::string exe = GPUSWEEP_BIN;
  host::SpawnedProcess p = host::spawn_process(exe, {"run", box.path("r.json"), "--db", box.db()});
  // Interrupt once two trials have finished.
  for (int i = 0; i < 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (box.has_tables() && box.count("SELECT count(*) FROM trials WHERE status = 'ok'") >= 2) {
      break;
    }
  }
  ::kill(p.pid, SIGINT);
  int status = 0;
  ::waitpid(p.pid, &status, 0);
  for (int fd : {p.proto_fd, p.stdout_fd, p.stderr_fd}) ::close(fd);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  const int64_t ok_before = box.count("SELECT count(*) FROM trials WHERE status = 'ok'");
  CHECK(ok_before >= 2);
  CHECK(ok_before < 6);
  CHECK(box.text("SELECT status FROM sweeps") == "interrupted");
  // The trials alive at the interrupt (interleaved: several take turns) are
  // marked interrupted, the rest stay pending: none is lost.
  CHECK(box.count("SELECT count(*) FROM trials WHERE status IN ('interrupted', 'pending')") ==
        6 - ok_before);
  // Each trial finished before the interrupt, with when it finished.
  std::map<std::string, std::string> finished_before;
  for (int64_t id = 1; id <= 6; ++id) {
    const std::string where = " FROM trials WHERE status = 'ok' AND id = " + std::to_string(id);
    if (box.count("SELECT count(*)" + where) == 1) {
      finished_before[std::to_string(id)] = box.text("SELECT finished_at" + where);
    }
  }
  REQUIRE(static_cast<int64_t>(finished_before.size()) == ok_before);
  // compare of the stopped run says how much of it is missing.
  const auto partial = box.gpusweep("compare --db results.db");
  INFO(partial.output);
  CHECK_THAT(partial.output,
             Contains("note: run 1 stopped before it finished: " + std::to_string(6 - ok_before) +
                      " of its 6 trials never ran (`gpusweep resume resumable "
                      "--db results.db` runs them)"));

  const auto r = box.gpusweep("run r.json --db results.db --resume");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK_THAT(r.output, Contains(std::to_string(6 - ok_before) + " trials to run") &&
                           Contains(std::to_string(ok_before) + " already finished"));
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 6);
  CHECK(box.count("SELECT count(*) FROM trials") == 6);
  CHECK(box.count("SELECT count(*) FROM sweeps") == 1);
  CHECK(box.text("SELECT status FROM sweeps") == "finished");
  CHECK_THAT(box.gpusweep("compare --db results.db").output, !Contains("note: run 1"));
  // Trials finished before the interrupt were not run again.
  for (const auto& [id, at] : finished_before) {
    CHECK(box.text("SELECT finished_at FROM trials WHERE id = " + id) == at);
  }

  // A changed sweep is not resumed silently.
  box.write("r.json", R"({"name": "resumable", "workload": "noop", "base": {"spin_us": 1000},
    "grid": {"batch_size": [1, 2]}, "measure": {"repeats": 1, "blocks": 5}})");
  const auto changed = box.gpusweep("run r.json --db results.db --resume");
  CHECK(changed.code == 2);
  CHECK_THAT(changed.output, Contains("changed since it started"));
}

TEST_CASE("resume refuses a rebuilt plugin unless told, and each trial records its build",
          "[integration]") {
  Sandbox box;
  std::filesystem::create_directory(box.path("plugins"));
  const std::string so = box.path("plugins/gpusweep_noop.so");
  std::filesystem::copy_file(std::string(GPUSWEEP_PLUGIN_DIR) + "/gpusweep_noop.so", so);
  box.write("s.json", R"({"name": "rebuilt", "workload": "noop", "grid": {"batch_size": [1, 2]},
    "measure": {"min_block_s": 0, "repeats": 1, "warmup_steps": 0, "steps_per_block": 10, "blocks": 5}})");
  REQUIRE(box.gpusweep("run s.json --db results.db --plugin-path plugins").code == 0);
  const std::string built = box.text("SELECT plugin_hash FROM trials LIMIT 1");
  CHECK(box.count("SELECT count(*) FROM trials WHERE run_plugin_hash = plugin_hash") == 2);
  {
    db::Connection c(box.db(), db::Connection::Mode::read_write);
    c.exec("UPDATE trials SET status = 'interrupted' WHERE config_index = 1");
  }
  std::ofstream(so, std::ios::app) << "rebuilt";  // another file, still a loadable plugin

  auto r = box.gpusweep("resume --db results.db --plugin-path plugins");
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("cannot continue run 1 of sweep 'rebuilt'") &&
                           Contains("plugin build " + built.substr(0, 12)) &&
                           Contains("--allow-plugin-change"));
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'interrupted'") == 1);
  CHECK(box.gpusweep("run s.json --resume --db results.db --plugin-path plugins").code == 2);

  r = box.gpusweep("resume --db results.db --plugin-path plugins --allow-plugin-change");
  CHECK(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
  CHECK(box.count("SELECT count(*) FROM trials WHERE run_plugin_hash = plugin_hash") == 1);
  CHECK(box.count("SELECT count(*) FROM trials WHERE config_index = 1 AND "
                  "run_plugin_hash <> plugin_hash") == 1);
}

// Serial: the 3x slower step is told apart on measured times (a pipeline
// check with a margin no load beside it has come near).
TEST_CASE("compare tells a 3x slower step from the baseline", "[integration][compare][timing]") {
  Sandbox box;
  box.write("c.json", R"({"name": "spin", "workload": "noop",
    "grid": {"spin_us": [100, 300, 100.0001]},
    "measure": {"warmup_steps": 5, "steps_per_block": 100, "blocks": 10},
    "baseline": {"spin_us": 100}})");
  REQUIRE(box.gpusweep("run c.json --db results.db").code == 0);
  auto r = box.gpusweep("compare --db results.db --format json");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const auto rows = nlohmann::json::parse(r.output);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0]["verdict"] == "baseline");
  CHECK(rows[1]["verdict"] == "slower");
  CHECK(rows[1]["ratio"].get<double>() < 0.5);
  CHECK(rows[1]["ci_high"].get<double>() < 1);
  CHECK(rows[1]["blocks"] == 30);  // 3 repeats of 10 (the default protocol)
  CHECK(rows[1]["design"] == "repeats");
  // The A/A-like config (spin_us 100.0001, the same work) is compared as
  // any config is, with its interval around its ratio. Whether that
  // interval holds 1 is a wall-time comparison of 10 ms blocks, which a
  // machine building beside the suite moved by 14% (0.86): its false
  // verdict rate is ratio_model_test's, on simulated runs, and
  // bench/cases/stat_honesty.json's, on real ones.
  CHECK(rows[2]["ratio"].get<double>() > 0);
  CHECK(rows[2]["p_value"].is_number());
  CHECK(rows[2]["ci_low"].get<double>() < rows[2]["ratio"].get<double>());
  CHECK(rows[2]["ci_high"].get<double>() > rows[2]["ratio"].get<double>());

  // The knob table alone, as JSON: spin_us 300 against 100 is the 3x.
  r = box.gpusweep("compare --db results.db --knobs --format json");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const auto knobs = nlohmann::json::parse(r.output);
  REQUIRE(knobs.size() == 2);
  CHECK(knobs[0]["knob"] == "spin_us");
  CHECK(knobs[0]["to"] == 300);
  CHECK(knobs[0]["repeats"] == 3);
  CHECK(knobs[0]["ratio"].get<double>() == Approx(rows[1]["ratio"].get<double>()));
  CHECK(knobs[0]["ci_high"].get<double>() < 1);

  r = box.gpusweep("compare --db results.db --format csv");
  CHECK(r.code == 0);
  CHECK_THAT(r.output,
             Contains("config,spin_us,throughput_median,ratio,ci_low,ci_high,p_value,verdict"));
  r = box.gpusweep("compare --db results.db");
  CHECK_THAT(r.output, Contains("95% CI") && Contains("slower"));
  r = box.gpusweep("compare --db results.db --baseline spin_us=7");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("matches none"));
  CHECK(box.gpusweep("compare --db results.db --format xml").code == 2);
}

TEST_CASE("sql is read-only and export writes trials and blocks", "[integration][sql]") {
  Sandbox box;
  box.write("s.json", R"({"name": "data", "workload": "noop", "grid": {"batch_size": [1, 2]},
    "measure": {"min_block_s": 0, "repeats": 1, "warmup_steps": 0, "steps_per_block": 10, "blocks": 5}})");
  REQUIRE(box.gpusweep("run s.json --db results.db").code == 0);

  auto r = box.gpusweep(
      "sql \"SELECT count(*) AS n FROM trials WHERE status = 'ok'\" --db results.db --format json");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(nlohmann::json::parse(r.output)[0]["n"] == 2);
  r = box.gpusweep("sql \"DELETE FROM trials\" --db results.db");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("read-only"));
  r = box.gpusweep("sql \"UPDATE trials SET status = 'failed'\" --db results.db");
  CHECK(r.code == 2);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
  r = box.gpusweep("sql \"SELECT nope FROM trials\" --db results.db");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("no such column: nope"));

  r = box.gpusweep("export --db results.db --format csv -o trials.csv");
  CHECK(r.code == 0);
  std::ifstream csv(box.path("trials.csv"));
  std::string header;
  std::getline(csv, header);
  CHECK_THAT(header,
             Contains("trial_id") && Contains("batch_size") && Contains("throughput_median"));
  int lines = 0;
  for (std::string l; std::getline(csv, l);) ++lines;
  CHECK(lines == 2);
  r = box.gpusweep("export --db results.db --format json --blocks");
  CHECK(r.code == 0);
  const auto blocks = nlohmann::json::parse(r.output);
  REQUIRE(blocks.size() == 10);
  for (int i = 0; i < 5; ++i) CHECK(blocks[i]["block"] == i);  // each trial's blocks in order
  CHECK(blocks[0]["steps"] == 10);
  CHECK(blocks[0]["sweep"] == "data");
  CHECK(blocks[0]["throughput"].get<double>() ==
        Approx(blocks[0]["samples"].get<double>() / blocks[0]["seconds"].get<double>()));
  r = box.gpusweep("export --db results.db --format csv --blocks -o blocks.csv");
  CHECK(r.code == 0);
  std::ifstream block_csv(box.path("blocks.csv"));
  std::getline(block_csv, header);
  // export's numbering from 0, kept last for a release (docs/commands.md).
  CHECK_THAT(header, EndsWith("block,steps,seconds,samples,throughput,config_index,repeat_index"));
  lines = 0;
  for (std::string l; std::getline(block_csv, l);) ++lines;
  CHECK(lines == 10);
  CHECK(box.gpusweep("export --db results.db --format md").code == 2);
}

TEST_CASE("read commands never write a database an older gpusweep wrote", "[integration][sql]") {
  Sandbox box;
  box.write("s.json", R"({"name": "old", "workload": "noop", "grid": {"spin_us": [5, 10]},
    "measure": {"repeats": 2, "warmup_steps": 0, "steps_per_block": 10, "blocks": 5, "min_block_s": 0}})");
  REQUIRE(box.gpusweep("run s.json --db results.db").code == 0);
  {
    // Back to schema version 3: the file as gpusweep before migration 004 left it.
    db::Connection c(box.db(), db::Connection::Mode::read_write);
    c.exec(
        "DROP TABLE block_series; DROP INDEX trials_by_ordinal; "
        "ALTER TABLE trials DROP COLUMN run_plugin_hash; "
        "ALTER TABLE trials DROP COLUMN interleave_group; ALTER TABLE blocks DROP COLUMN cycle; "
        "ALTER TABLE blocks DROP COLUMN device_seconds; ALTER TABLE sweeps DROP COLUMN kind; "
        "PRAGMA user_version = 3; "
        "PRAGMA wal_checkpoint(TRUNCATE)");
  }
  const std::string before = box.read("results.db");
  const auto mtime = std::filesystem::last_write_time(box.db());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (const char* read : {"sql \"SELECT count(*) FROM blocks\"", "results", "compare", "best",
                           "report --html r.html", "export --format csv -o t.csv"}) {
    const auto r = box.gpusweep(std::string(read) + " --db results.db");
    INFO(read << ": " << r.output);
    CHECK(r.code == 0);
    CHECK(box.read("results.db") == before);  // a reader once migrated it in place
    CHECK(std::filesystem::last_write_time(box.db()) == mtime);
  }
  CHECK(box.text("PRAGMA user_version") == "3");
  // What the readers saw was the old run, read through an upgraded copy.
  CHECK_THAT(box.read("t.csv"), Contains("spin_us"));
  const auto n =
      box.gpusweep("sql \"SELECT count(*) AS n FROM blocks\" --db results.db --format json");
  CHECK(nlohmann::json::parse(n.output)[0]["n"] == 20);
  // A writer upgrades it.
  REQUIRE(box.gpusweep("resume --db results.db").code == 0);
  CHECK(box.text("PRAGMA user_version") == std::to_string(db::schema_version()));
}

TEST_CASE("best picks the fastest config under constraints", "[integration][best][timing]") {
  Sandbox box;
  box.write("b.json", R"({"name": "best", "workload": "noop",
    "grid": {"spin_us": [200, 20], "batch_size": [1, 2]},
    "measure": {"repeats": 3, "warmup_steps": 0, "steps_per_block": 100, "blocks": 5, "min_block_s": 0}})");
  REQUIRE(box.gpusweep("run b.json --db results.db").code == 0);
  // Three repeats: batch 2's twice the samples a step are told from batch 1's
  // (one process each could not tell them apart, and best would call a tie).
  // It runs alone ([timing]): beside the suite's other processes on two
  // cores, its 2-ms blocks once failed to tell the two batch sizes apart.
  auto r = box.gpusweep("best --db results.db");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK_THAT(r.output, Contains("\"spin_us\": 20.0") && Contains("\"batch_size\": 2"));
  r = box.gpusweep("best --db results.db --constraint batch_size==1");
  CHECK_THAT(r.output, Contains("\"spin_us\": 20.0") && Contains("\"batch_size\": 1"));
  r = box.gpusweep("best --db results.db --constraint 'throughput>1G'");
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("no config"));
  CHECK(box.gpusweep("best --db results.db --constraint 'speed>3'").code != 0);
}

namespace {
// Number of data marks in the chart <svg data-chart="name"> of an HTML report.
int marks_in(const std::string& html, const std::string& chart) {
  const auto start = html.find("data-chart=\"" + chart + "\"");
  if (start == std::string::npos) return -1;
  const auto end = html.find("</svg>", start);
  int n = 0;
  for (auto pos = html.find("class=\"mark", start); pos != std::string::npos && pos < end;
       pos = html.find("class=\"mark", pos + 1)) {
    ++n;
  }
  return n;
}
// Occurrences of `needle` in `text`.
int count_in_text(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1))
    ++n;
  return n;
}
}  // namespace

TEST_CASE("the HTML report is self-contained and draws every data point", "[integration][report]") {
  Sandbox box;
  box.write("r.json", R"({"name": "report <&>", "workload": "faults",
    "grid": {"mode": ["ok", "skip", "slow_step"]},
    "measure": {"min_block_s": 0, "warmup_steps": 1, "steps_per_block": 2, "blocks": 5, "repeats": 2},
    "baseline": {"mode": "ok"}})");
  REQUIRE(box.gpusweep("run r.json --db results.db --jobs 2").code == 0);
  const auto r = box.gpusweep("report --db results.db --html out.html");
  INFO(r.output);
  REQUIRE(r.code == 0);
  std::ifstream in(box.path("out.html"));
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Self-contained: no scripts, nothing fetched.
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("report &lt;&amp;&gt;") != std::string::npos);  // escaped
  // Two configs finished ok (mode=ok, mode=slow_step), two repeats of five blocks each.
  CHECK(marks_in(html, "throughput") == 2);
  CHECK(marks_in(html, "speedup") == 2);
  CHECK(marks_in(html, "blocks") == 20);
  CHECK(marks_in(html, "memory") == 0);  // the fixture reports no memory
  CHECK(marks_in(html, "quality") == 2);
  CHECK(html.find("class=\"mark bar base\"") != std::string::npos);  // the baseline is marked
  // The skipped trials are listed with their reason.
  CHECK(html.find("fixture: not applicable here") != std::string::npos);
  // The verdict cell of slow_step, and no other (the stylesheet also names
  // .slower, so a bare find("slower") would pass with no verdict at all).
  CHECK(count_in_text(html, "<td class=\"slower\">slower</td>") == 1);
}

TEST_CASE(
    "the worker opens a measured window before each run of blocks and closes it before "
    "each evaluation",
    "[integration]") {
  Sandbox box;
  box.write("w.json", R"({"name": "w", "workload": "fake_cuda", "base": {"device": "cpu"},
    "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 2, "blocks": 6, "eval_every_blocks": 3}})");
  const auto r = box.gpusweep("run w.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  // Blocks 1-3, an evaluation, blocks 4-6, the final evaluation.
  CHECK(box.count("SELECT count(*) FROM metrics WHERE name = 'windows_begun' AND value = 2") == 1);
  CHECK(box.count("SELECT count(*) FROM metrics WHERE name = 'windows_ended' AND value = 2") == 1);
}

TEST_CASE("with two jobs, run says that trials share the machine, and each records its overlap",
          "[integration]") {
  Sandbox box;
  box.write("o.json", R"({"name": "o", "workload": "noop",
    "base": {"spin_us": 20000}, "grid": {"batch_size": [1, 2]},
    "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 5, "blocks": 5}})");
  const auto both = box.gpusweep("run o.json --jobs 2 --db two.db");
  INFO(both.output);
  REQUIRE(both.code == 0);
  CHECK_THAT(both.output, Contains("share this machine's cores"));
  // Two trials of about half a second each, started together.
  CHECK(count_in(box.path("two.db"), "SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
  CHECK(count_in(box.path("two.db"),
                 "SELECT count(*) FROM metrics WHERE name = 'overlap_fraction' AND value > 0.3") ==
        2);
  CHECK(count_in(box.path("two.db"),
                 "SELECT count(*) FROM metrics WHERE name = 'overlap_trials' AND value = 1") == 2);
  // compare says which configs' timings include the other trial.
  CHECK_THAT(box.gpusweep("compare --db two.db").output, Contains("ran alongside other trials"));
  const auto solo = box.gpusweep("run o.json --jobs 1 --db one.db");
  REQUIRE(solo.code == 0);
  CHECK_THAT(box.gpusweep("compare --db one.db").output, !Contains("ran alongside"));
  CHECK_THAT(solo.output, !Contains("share this machine's cores"));
  CHECK(count_in(box.path("one.db"),
                 "SELECT count(*) FROM metrics WHERE name = 'overlap_fraction' AND value = 0") ==
        2);
}

TEST_CASE("measure.block_s chooses the steps that last a block, bounded by a step's length",
          "[integration]") {
  Sandbox box;
  // A step sleeps 20 ms, so it lasts at least that however loaded the
  // machine: blocks of 0.1 s get at most 5 steps (the default is 20), and
  // blocks shorter than one step get exactly one.
  box.write("s.json", R"({"name": "sized", "workload": "faults", "base": {"mode": "slow_step"},
    "measure": {"repeats": 1, "warmup_steps": 1, "block_s": 0.1, "blocks": 5}})");
  const auto chosen = [&](const std::string& block_s) {
    const std::string db = "b" + block_s + ".db";
    const auto r = box.gpusweep("run s.json --db " + db + " --set measure.block_s=" + block_s);
    INFO(r.output);
    REQUIRE(r.code == 0);
    return gpusweep::test::count_in(
        box.path(db), "SELECT CAST(value AS INTEGER) FROM metrics WHERE name = 'block_steps'");
  };
  const int64_t tenth = chosen("0.1");
  CHECK(tenth >= 1);
  CHECK(tenth <= 5);
  CHECK(chosen("0.005") == 1);
}

// A block of a few empty steps is mostly the clock and the sync.
TEST_CASE(
    "blocks shorter than measure.min_block_s fail the trial with a steps_per_block that works",
    "[integration]") {
  Sandbox box;
  const std::string sweep = R"({"name": "short", "workload": "noop",
    "measure": {"repeats": 1, "warmup_steps": 0, "steps_per_block": %s, "blocks": 5%s}})";
  auto with = [&](const std::string& steps, const std::string& extra) {
    std::string text = sweep;
    text.replace(text.find("%s"), 2, steps);
    text.replace(text.find("%s"), 2, extra);
    return text;
  };
  box.write("short.json", with("5", ""));
  const auto r = box.gpusweep("run short.json --db short.db");
  INFO(r.output);
  // Its only trial failed: run says so in its exit status.
  REQUIRE(r.code == 3);
  const std::string error =
      test::text_in(box.path("short.db"), "SELECT status || ': ' || error FROM trials");
  INFO(error);
  CHECK_THAT(error, Contains("failed: blocks too short to measure") &&
                        Contains("min_block_s = 100 us (auto)"));
  // The advice, taken, measures.
  const std::string marker = "steps_per_block to ";
  const auto at = error.find(marker);
  REQUIRE(at != std::string::npos);
  const std::string steps = std::to_string(std::stoll(error.substr(at + marker.size())));
  box.write("long.json", with(steps, ""));
  REQUIRE(box.gpusweep("run long.json --db long.db").code == 0);
  CHECK(test::text_in(box.path("long.db"), "SELECT status FROM trials") == "ok");
  CHECK(count_in(box.path("long.db"), "SELECT count(*) FROM blocks WHERE seconds >= 0.0001") >= 3);
  // min_block_s: 0 accepts the short blocks.
  box.write("any.json", with("5", R"(, "min_block_s": 0)"));
  REQUIRE(box.gpusweep("run any.json --db any.db").code == 0);
  CHECK(test::text_in(box.path("any.db"), "SELECT status FROM trials") == "ok");
}
