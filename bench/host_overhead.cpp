// What the host itself costs: per trial (spawn a worker, load the plugin,
// run the protocol, commit to SQLite) and per step (the measurement loop and
// the ABI call), measured on the noop plugin in one run.
#include <gpusweep/db/store.hpp>

#include "stats.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
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

std::vector<double> column(const std::string& db, const std::string& sql) {
  gpusweep::db::Connection c(db, gpusweep::db::Connection::Mode::read_only);
  auto st = c.prepare(sql);
  std::vector<double> out;
  while (st.step()) out.push_back(st.get_double(0));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int trials = argc > 1 ? std::atoi(argv[1]) : 60;
  char tmpl[] = "/tmp/gpusweep_bench_XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  const std::string bin = GPUSWEEP_BIN;

  std::string seeds;
  for (int i = 0; i < trials; ++i) seeds += (i ? "," : "") + std::to_string(i);
  std::ofstream(dir / "empty.json") << R"({"name": "empty", "workload": "noop",
    "grid": {"seed": [)" << seeds << R"(]},
    "measure": {"warmup_steps": 0, "steps_per_block": 1, "blocks": 5}})";
  std::ofstream(dir / "steps.json") << R"({"name": "steps", "workload": "noop",
    "measure": {"warmup_steps": 1000, "steps_per_block": 5000000, "blocks": 5}})";

  std::printf("gpusweep host overhead (noop plugin, %d empty trials per run)\n\n", trials);
  // Fixed cost of a run: start, describe the plugin (one worker), validate.
  const double fixed = run(bin + " run " + (dir / "empty.json").string() + " --dry-run");
  for (int jobs : {1, 2}) {
    const std::string db = (dir / ("jobs" + std::to_string(jobs) + ".db")).string();
    const double total = run(bin + " run " + (dir / "empty.json").string() + " --db " + db +
                             " --jobs " + std::to_string(jobs));
    const auto wall = gpusweep::host::describe(column(db, "SELECT wall_s FROM trials"));
    const double per_trial = (total - fixed) / trials;
    std::printf("--jobs %d: %.1f ms per trial (%.0f trials/s); worker lifetime median %.1f ms "
                "(spawn, load, protocol, exit), host share %.1f ms\n",
                jobs, 1e3 * per_trial, 1 / per_trial, 1e3 * wall.median,
                1e3 * (per_trial - wall.median / jobs));
  }
  std::printf("fixed cost per run (start, describe plugin, validate): %.1f ms\n\n", 1e3 * fixed);

  const std::string db = (dir / "steps.db").string();
  run(bin + " run " + (dir / "steps.json").string() + " --db " + db);
  const auto step = gpusweep::host::describe(
      column(db, "SELECT seconds / steps FROM blocks"));
  std::printf("per step (measurement loop + ABI call + virtual step): median %.2f ns, "
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
    o.status = "ok";
    o.summary = gpusweep::db::Summary{};
    o.summary->unit = "steps";
    for (int b = 0; b < blocks; ++b) o.blocks.push_back({b, 100, 0.01, 100, 0});
    o.metrics = {{"eval", 0, "quality", 1}, {"stat", 0, "peak_memory_bytes", 1e6}};
    const auto t0 = Clock::now();
    for (const auto& r : rows) store.commit_trial(r.id, o);
    const double per = std::chrono::duration<double>(Clock::now() - t0).count() / n;
    std::printf("commit one trial with %4d blocks: %.3f ms\n", blocks, 1e3 * per);
  }
  fs::remove_all(dir);
  return 0;
}
