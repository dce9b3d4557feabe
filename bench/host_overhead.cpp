// What the host itself costs, measured side by side in one run:
// - per empty trial (start a worker, load the plugin, run the protocol,
//   commit to SQLite) on the noop plugin, forked from the fork server (the
//   default) and as fresh processes (--fresh-workers), --jobs 1 and 2,
//   against Optuna 3.1 with SQLite storage running as many empty trials
//   (bench/optuna_empty.py; goal: at least 10x Optuna's rate);
// - the same for a LibTorch plugin (dqn, a minimal trial), where a fresh
//   process pays for loading LibTorch every trial, and the steady-state
//   throughput of trials forked against fresh ones (must be 1.0x);
// - per step (the measurement loop and the ABI call; goal < 100 ns);
// - the database: committing a trial with 5 and 1,000 blocks, and merging
//   a 10,000-trial shard.
// Every figure per trial is over the trials a run actually ran (counted in its
// database: configs x measure.repeats). A worker's life (wall_s) includes
// its waits for the other trials' turns when trials take turns; its own
// time is then its turns (stat turn_s), which leave out its start before
// the first turn (spawn, plugin load), done while the others take turns.
// Usage: build/bench/host_overhead [CONFIGS]   (default 60 empty configs x 3
// repeats = 180 trials a run)
#include <gpusweep/db/shards.hpp>
#include <gpusweep/db/store.hpp>

#include "support/descriptive.hpp"

#include <unistd.h>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double run(const std::string& cmd) {
  const auto t0 = Clock::now();
  if (std::system((cmd + " > /dev/null 2>&1").c_str()) != 0) {
    std::fprintf(stderr, "failed: %s\n", cmd.c_str());
    std::exit(1);
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Runs cmd and returns its standard output (empty when it fails).
std::string output_of(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (p == nullptr) return out;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p) != nullptr) out += buf.data();
  return pclose(p) == 0 ? out : std::string();
}

// A number after "key": in a JSON line, or -1.
double json_number(const std::string& line, const std::string& key) {
  const auto at = line.find("\"" + key + "\":");
  if (at == std::string::npos) return -1;
  return std::atof(line.c_str() + at + key.size() + 3);
}

std::string json_string(const std::string& line, const std::string& key) {
  const auto at = line.find("\"" + key + "\": \"");
  if (at == std::string::npos) return "?";
  const auto begin = at + key.size() + 5;
  return line.substr(begin, line.find('"', begin) - begin);
}

std::vector<double> column(const std::string& db, const std::string& sql) {
  gpusweep::db::Connection c(db, gpusweep::db::Connection::Mode::read_only);
  auto st = c.prepare(sql);
  std::vector<double> out;
  while (st.step()) out.push_back(st.get_double(0));
  return out;
}

// The trials a run ran, from its database.
int trials_in(const std::string& db) {
  return static_cast<int>(column(db, "SELECT COUNT(*) FROM trials").at(0));
}

// Each trial's own time: its turns when it took turns with others (stat
// turn_s: not its start before the first turn), else its worker's whole life
// (wall_s).
const char* const kOwnTime =
    "SELECT COALESCE((SELECT m.value FROM metrics m WHERE m.trial_id = t.id AND m.kind = 'stat' "
    "AND m.name = 'turn_s' ORDER BY m.at_step DESC LIMIT 1), t.wall_s) FROM trials t";

}  // namespace

int main(int argc, char** argv) {
  const int configs = argc > 1 ? std::atoi(argv[1]) : 60;
  const int repeats = 3;  // the default, written out: Optuna runs as many trials
  const int trials = configs * repeats;
  char tmpl[] = "/tmp/gpusweep_bench_XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  const std::string bin = GPUSWEEP_BIN;

  std::string seeds;
  for (int i = 0; i < configs; ++i) seeds += (i ? "," : "") + std::to_string(i);
  std::ofstream(dir / "empty.json") << R"({"name": "empty", "workload": "noop",
    "grid": {"seed": [)" << seeds << R"(]},
    "measure": {"warmup_steps": 0, "steps_per_block": 1, "blocks": 5, "min_block_s": 0,
                "repeats": )" << repeats
                                    << "}}";
  std::ofstream(dir / "steps.json") << R"({"name": "steps", "workload": "noop",
    "measure": {"warmup_steps": 1000, "steps_per_block": 5000000, "blocks": 5}})";

  std::printf("gpusweep host overhead (%d empty configs x %d repeats = %d trials per run)\n\n",
              configs, repeats, trials);
  // Fixed cost of a run: start, describe the plugin (one worker), validate.
  const double fixed = run(bin + " run " + (dir / "empty.json").string() + " --dry-run");
  std::printf("fixed cost per run (start, describe plugin, validate): %.1f ms\n\n", 1e3 * fixed);

  // Optuna first, so that its figure is measured beside ours.
  // The project's .venv (pip install optuna there; GPUSWEEP_PYTHON for another).
  const std::string venv = std::string(GPUSWEEP_SOURCE_DIR) + "/.venv/bin/python3";
  const std::string python = std::getenv("GPUSWEEP_PYTHON") != nullptr
                                 ? std::getenv("GPUSWEEP_PYTHON")
                             : fs::exists(venv) ? venv
                                                : "python3";
  const std::string optuna =
      output_of(python + " " + std::string(GPUSWEEP_SOURCE_DIR) + "/bench/optuna_empty.py " +
                std::to_string(trials) + " " + dir.string());
  const double optuna_ms = json_number(optuna, "per_trial_ms");
  if (optuna_ms > 0) {
    std::printf(
        "optuna %s, SQLite storage, in-process trials: %.2f ms per empty trial "
        "(%.0f trials/s)\n",
        json_string(optuna, "optuna").c_str(), optuna_ms, 1e3 / optuna_ms);
  } else {
    std::printf(
        "optuna: not measured (%s -c 'import optuna' fails; %s -m pip install "
        "optuna)\n",
        python.c_str(), python.c_str());
  }
  std::printf("%-28s %6s %9s %9s %12s %12s %16s\n", "noop, empty trials", "trials", "ms/trial",
              "trials/s", "life median", "own median", "vs optuna (10x)");
  for (const char* mode : {"", " --fresh-workers"}) {
    for (int jobs : {1, 2}) {
      const std::string db =
          (dir / ("jobs" + std::to_string(jobs) + (*mode ? "f" : "") + ".db")).string();
      const double total = run(bin + " run " + (dir / "empty.json").string() + " --db " + db +
                               " --jobs " + std::to_string(jobs) + mode);
      const auto own = gpusweep::host::describe(column(db, kOwnTime));
      const auto life = gpusweep::host::describe(column(db, "SELECT wall_s FROM trials"));
      const int ran = trials_in(db);
      const double per_trial = (total - fixed) / ran;
      char label[64];
      std::snprintf(label, sizeof label, "%s, --jobs %d", *mode ? "fresh processes" : "fork server",
                    jobs);
      char ratio[32] = "-";
      if (optuna_ms > 0) {
        std::snprintf(ratio, sizeof ratio, "%.1fx %s", optuna_ms / (1e3 * per_trial),
                      optuna_ms / (1e3 * per_trial) >= 10 ? "pass" : "FAIL");
      }
      std::printf("%-28s %6d %9.2f %9.0f %9.2f ms %9.2f ms %16s\n", label, ran, 1e3 * per_trial,
                  1 / per_trial, 1e3 * life.median, 1e3 * own.median, ratio);
    }
  }
  std::printf("\n");

  // A LibTorch plugin: the load is paid once per run (fork server) or once
  // per trial (fresh processes).
  const std::string plugin_dir = GPUSWEEP_PLUGIN_DIR;
  if (fs::exists(plugin_dir + "/gpusweep_dqn.so")) {
    const int n = 10;
    std::string seeds;
    for (int i = 0; i < n; ++i) seeds += (i ? "," : "") + std::to_string(i);
    std::ofstream(dir / "dqn_min.json") << R"({"name": "dqn_min", "workload": "dqn",
      "base": {"device": "cpu", "threads": 1, "num_envs": 1, "batch_size": 8},
      "grid": {"seed": [)" << seeds << R"(]},
      "measure": {"warmup_steps": 0, "steps_per_block": 1, "blocks": 5, "min_block_s": 0}})";
    const double dqn_fixed = run(bin + " run " + (dir / "dqn_min.json").string() + " --dry-run");
    double per[2] = {0, 0};
    int ran = 0;
    for (int fresh : {0, 1}) {
      const std::string db = (dir / (fresh ? "dqn_fresh.db" : "dqn_fork.db")).string();
      const double total = run(bin + " run " + (dir / "dqn_min.json").string() + " --db " + db +
                               (fresh ? " --fresh-workers" : ""));
      ran = trials_in(db);
      per[fresh] = (total - dqn_fixed) / ran;
    }
    std::printf(
        "dqn (LibTorch), minimal trials (5 steps + setup + evaluation), %d configs, %d trials a "
        "run:\n"
        "  fork server %.0f ms per trial, fresh processes %.0f ms: %.1fx, %.0f ms of "
        "loading saved per trial\n",
        n, ran, 1e3 * per[0], 1e3 * per[1], per[1] / per[0], 1e3 * (per[1] - per[0]));

    // Steady state: the same canonical trial forked and fresh, alternated.
    std::ofstream(dir / "dqn_steady.json") << R"({"name": "dqn_steady", "workload": "dqn",
      "base": {"device": "cpu", "threads": 1},
      "measure": {"warmup_steps": 200, "steps_per_block": 200, "blocks": 5}})";
    std::vector<double> ratios;
    for (int round = 0; round < 4; ++round) {
      double rate[2] = {0, 0};
      for (int k = 0; k < 2; ++k) {
        const int fresh = (round + k) % 2;  // alternate which goes first
        const std::string db =
            (dir / ("steady" + std::to_string(round) + "_" + std::to_string(fresh) + ".db"))
                .string();
        run(bin + " run " + (dir / "dqn_steady.json").string() + " --db " + db +
            (fresh ? " --fresh-workers" : ""));
        // The median over the run's repeats.
        rate[fresh] =
            gpusweep::host::describe(column(db, "SELECT throughput_median FROM trial_summary"))
                .median;
      }
      ratios.push_back(rate[0] / rate[1]);
    }
    const auto r = gpusweep::host::describe(ratios);
    std::printf(
        "  steady-state throughput, forked / fresh (canonical dqn, 4 alternated rounds): "
        "median %.3fx, range %.3f-%.3f (goal 1.0x)\n\n",
        r.median, r.min, r.max);
  }

  const std::string db = (dir / "steps.db").string();
  run(bin + " run " + (dir / "steps.json").string() + " --db " + db);
  const auto step = gpusweep::host::describe(column(db, "SELECT seconds / steps FROM blocks"));
  std::printf(
      "per step (measurement loop + ABI call + virtual step): median %.2f ns, "
      "min %.2f ns over 5 blocks of 5M steps\n\n",
      1e9 * step.median, 1e9 * step.min);

  // Committing one trial: one transaction with summary, blocks and metrics.
  for (int blocks : {5, 1000}) {
    const std::string cdb = (dir / ("commit" + std::to_string(blocks) + ".db")).string();
    gpusweep::db::Store store(cdb, gpusweep::db::Connection::Mode::read_write);
    gpusweep::db::SweepRecord s;
    s.name = "commit";
    s.workload = "noop";
    s.spec_json = "{}";
    s.spec_hash = "h";
    const int64_t sweep = store.create_sweep(s);
    const int n = 200;
    std::vector<gpusweep::db::TrialPlan> plans(n);
    for (int i = 0; i < n; ++i) {
      plans[i].ordinal = i;
      plans[i].workload = "noop";
      plans[i].plugin_version = "1";
      plans[i].config_json = "{}";
      plans[i].config_hash = std::to_string(i);
    }
    store.add_trials(sweep, plans);
    const auto rows = store.trials(sweep);
    gpusweep::db::TrialOutcome o;
    o.status = gpusweep::db::TrialStatus::ok;
    o.summary = gpusweep::db::Summary{};
    o.summary->unit = "steps";
    for (int b = 0; b < blocks; ++b) o.blocks.push_back({b, 100, 0.01, 100, 0});
    o.metrics = {{"eval", 0, "quality", 1}, {"stat", 0, "peak_memory_bytes", 1e6}};
    const auto t0 = Clock::now();
    for (const auto& r : rows) store.commit_trial(r.id, o);
    const double per = std::chrono::duration<double>(Clock::now() - t0).count() / n;
    std::printf("commit one trial with %4d blocks: %.3f ms\n", blocks, 1e3 * per);
  }

  // Merging a 10,000-trial shard (5 blocks and 2 metrics a trial).
  {
    const int n = 10000;
    const std::string shard = (dir / "shard.db").string();
    {
      gpusweep::db::Store store(shard, gpusweep::db::Connection::Mode::read_write);
      gpusweep::db::SweepRecord s;
      s.name = "big";
      s.workload = "noop";
      s.spec_json = "{}";
      s.spec_hash = "h";
      s.run_key = "bench";
      s.shard_index = 1;
      s.shard_count = 1;
      std::vector<gpusweep::db::TrialPlan> plans(n);
      for (int i = 0; i < n; ++i) {
        plans[i].ordinal = i;
        plans[i].config_index = i;
        plans[i].workload = "noop";
        plans[i].plugin_version = "1";
        plans[i].config_json = "{\"seed\": " + std::to_string(i) + "}";
        plans[i].config_hash = std::to_string(i);
      }
      const int64_t sweep = store.create_sweep(s, plans);
      gpusweep::db::TrialOutcome o;
      o.status = gpusweep::db::TrialStatus::ok;
      o.summary = gpusweep::db::Summary{};
      o.summary->unit = "steps";
      for (int b = 0; b < 5; ++b) o.blocks.push_back({b, 100, 0.01, 100, 0});
      o.metrics = {{"eval", 0, "quality", 1}, {"stat", 0, "peak_memory_bytes", 1e6}};
      for (const auto& t : store.trials(sweep)) store.commit_trial(t.id, o);
    }
    gpusweep::db::Store into((dir / "main.db").string(),
                             gpusweep::db::Connection::Mode::read_write);
    const auto t0 = Clock::now();
    const auto results = gpusweep::db::merge_shard(into, shard);
    const double first = std::chrono::duration<double>(Clock::now() - t0).count();
    const auto t1 = Clock::now();
    gpusweep::db::merge_shard(into, shard);
    const double again = std::chrono::duration<double>(Clock::now() - t1).count();
    std::printf(
        "merge a %d-trial shard: %.2f s (%.1f us per trial, %lld imported); "
        "merging it again: %.2f s (nothing to do)\n",
        n, first, 1e6 * first / n,
        static_cast<long long>(results.empty() ? 0 : results[0].imported), again);
  }
  fs::remove_all(dir);
  return 0;
}
