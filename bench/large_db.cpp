// Every listing command on a big database: 10,000 trials with 100 blocks each
// (1,000,000 block samples). Builds the database through the store (the way
// the host writes it), then times each command end to end.
#include <gpusweep/db/store.hpp>

#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {
using Clock = std::chrono::steady_clock;

double timed(const std::string& cmd) {
  const auto t0 = Clock::now();
  if (std::system((cmd + " > /dev/null 2>&1").c_str()) != 0) {
    std::fprintf(stderr, "failed: %s\n", cmd.c_str());
    std::exit(1);
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
  const int trials = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int blocks = argc > 2 ? std::atoi(argv[2]) : 100;
  char tmpl[] = "/tmp/gpusweep_large_XXXXXX";
  const std::filesystem::path dir = mkdtemp(tmpl);
  const std::string db = (dir / "large.db").string();
  const std::string bin = GPUSWEEP_BIN;

  const auto t0 = Clock::now();
  {
    gpusweep::db::Store store(db, gpusweep::db::Connection::Mode::read_write);
    // 100 x 100 grid of two knobs: compare's ablation has real work to do.
    std::string a, b;
    for (int i = 0; i < 100; ++i) {
      a += (i ? "," : "") + std::to_string(i);
      b += (i ? "," : "") + std::to_string(i + 1);
    }
    gpusweep::db::SweepRecord s;
    s.name = "large";
    s.workload = "noop";
    s.spec_json =
        R"({"name":"large","workload":"noop","description":"","base":{},"grid":{"seed":[)" + a +
        R"(],"batch_size":[)" + b +
        R"(]},"baseline":{"seed":0,"batch_size":1},"measure":{"warmup_steps":0,"steps_per_block":10,"blocks":)" +
        std::to_string(blocks) +
        R"(,"repeats":1,"timeout_s":600.0,"eval_every_blocks":0,"order_seed":0}})";
    s.spec_hash = "h";
    const int64_t id = store.create_sweep(s);
    std::vector<gpusweep::db::TrialPlan> plans(static_cast<size_t>(trials));
    for (int i = 0; i < trials; ++i) {
      auto& p = plans[static_cast<size_t>(i)];
      p.ordinal = p.config_index = i;
      p.workload = "noop";
      p.plugin_version = "1.0.0";
      p.config_json = R"({"batch_size":)" + std::to_string(i % 100 + 1) + R"(,"seed":)" +
                      std::to_string(i / 100 % 100) + R"(,"setup_ms":0,"spin_us":0.0})";
      p.config_hash = std::to_string(i);
    }
    store.add_trials(id, plans);
    const auto rows = store.trials(id);
    gpusweep::db::TrialOutcome o;
    o.status = gpusweep::db::TrialStatus::ok;
    gpusweep::db::Summary sum;
    sum.unit = "steps";
    sum.blocks = blocks;
    sum.throughput_median = 1e6;
    sum.quality = 1;
    sum.quality_metric = "quality";
    o.summary = sum;
    for (int k = 0; k < blocks; ++k)
      o.blocks.push_back({k, 10, 1e-5 * (1 + 0.01 * (k % 7)), 10, 0});
    for (const auto& r : rows) {
      o.summary->throughput_median = 1e6 * (1 + 0.001 * static_cast<double>(r.id % 97));
      store.commit_trial(r.id, o);
    }
  }
  const double build_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf(
      "database: %d trials x %d blocks = %d block samples, built in %.1f s (%.2f ms per trial "
      "committed)\n\n",
      trials, blocks, trials * blocks, build_s, 1e3 * build_s / trials);
  const std::string d = " --db " + db;
  const std::pair<const char*, std::string> commands[] = {
      {"results", bin + " results" + d},
      {"results --list", bin + " results --list" + d},
      {"compare", bin + " compare" + d},
      {"compare --format json", bin + " compare --format json" + d},
      {"best", bin + " best --constraint 'batch_size<=50'" + d},
      {"export (trials, csv)", bin + " export" + d},
      {"export --blocks (csv)", bin + " export --blocks" + d},
      {"sql count", bin + " sql 'SELECT count(*) FROM blocks'" + d},
      {"report --html", bin + " report --html " + (dir / "r.html").string() + d},
  };
  for (const auto& [name, cmd] : commands) {
    timed(cmd);  // warm the page cache
    std::printf("%-24s %7.3f s\n", name, timed(cmd));
  }
  if (std::getenv("GPUSWEEP_KEEP_DB") != nullptr) {
    std::printf("kept %s\n", db.c_str());
  } else {
    std::filesystem::remove_all(dir);
  }
  return 0;
}
