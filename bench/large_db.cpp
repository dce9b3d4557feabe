// Every listing command on a big database: by default 10,000 trials with 100
// blocks each (1,000,000 block samples); `large_db 100000 100 10` is the
// 10M-sample case. Builds the database through the store (the way the host
// writes it), then times each command end to end, and each panel of
// `gpusweep serve` on it: the run list, a run's details opened (computed in
// the server), the same details again by cursor (what a page's refresh
// asks), and the run's report.
#include "serve_client.hpp"

#include <gpusweep/db/store.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
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

// One answer of each serve panel on `db`, timed as a page would see it
// (each after the server's shared answers have expired).
void time_serve(const std::string& bin, const std::string& db, const std::string& log) {
  uint16_t port = 0;
  const pid_t server = gpusweep::bench::start_server(bin, db, log, &port);
  if (port == 0) {
    std::fprintf(stderr, "serve did not start (see %s)\n", log.c_str());
    std::exit(1);
  }
  std::string cursor;
  const std::pair<const char*, std::string> panels[] = {
      {"serve: run list", "/api/runs"},
      {"serve: run opened", "/api/run?db=0&id=1"},
      {"serve: run refreshed", "/api/run?db=0&id=1&since="},
      {"serve: report", "/api/report?db=0&id=1"},
  };
  for (const auto& [name, target] : panels) {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    const auto t0 = Clock::now();
    const std::string body = gpusweep::bench::get(port, target + cursor);
    const double took = std::chrono::duration<double>(Clock::now() - t0).count();
    if (body.empty()) {
      std::fprintf(stderr, "failed: GET %s\n", (target + cursor).c_str());
      std::exit(1);
    }
    // The run's cursor, for the refresh that follows the opening.
    cursor =
        cursor.empty() && target.rfind("/api/run?", 0) == 0 ? gpusweep::bench::cursor_of(body) : "";
    std::printf("%-24s %7.3f s  (%zu bytes)\n", name, took, body.size());
  }
  ::kill(server, SIGKILL);
  waitpid(server, nullptr, 0);
}

// The database: `trials` trials, `repeats` of each of trials / repeats configs
// (a grid of batch_size 1..100 by as many seeds as it takes, so that every
// config is distinct and the baseline matches one), interleaved the way
// `run` does it: each repeat's trials took turns in one group, one block a
// cycle, so compare pairs blocks by cycle and repeats.
void build(const std::string& db, int trials, int blocks, int repeats) {
  gpusweep::db::Store store(db, gpusweep::db::Connection::Mode::read_write);
  const int configs = trials / repeats;
  const int seeds = (configs + 99) / 100;
  std::string a, b;
  for (int i = 0; i < seeds; ++i) a += (i ? "," : "") + std::to_string(i);
  for (int i = 0; i < 100; ++i) b += (i ? "," : "") + std::to_string(i + 1);
  gpusweep::db::SweepRecord s;
  s.name = "large";
  s.workload = "noop";
  s.spec_json =
      R"({"name":"large","workload":"noop","description":"","base":{},"grid":{"seed":[)" + a +
      R"(],"batch_size":[)" + b +
      R"(]},"baseline":{"seed":0,"batch_size":1},"measure":{"warmup_steps":0,"steps_per_block":10,"blocks":)" +
      std::to_string(blocks) + R"(,"repeats":)" + std::to_string(repeats) +
      R"(,"timeout_s":600.0,"eval_every_blocks":0,"order_seed":0}})";
  s.spec_hash = "h";
  const int64_t id = store.create_sweep(s);
  std::vector<gpusweep::db::TrialPlan> plans;
  for (int r = 0; r < repeats; ++r) {
    for (int c = 0; c < configs; ++c) {
      auto& p = plans.emplace_back();
      p.ordinal = static_cast<int64_t>(r) * configs + c;
      p.config_index = c;
      p.repeat = r;
      p.workload = "noop";
      p.plugin_version = "1.0.0";
      p.config_json = R"({"batch_size":)" + std::to_string(c % 100 + 1) + R"(,"seed":)" +
                      std::to_string(c / 100) + R"(,"setup_ms":0,"spin_us":0.0})";
      p.config_hash = std::to_string(c);
    }
  }
  store.add_trials(id, plans);
  gpusweep::db::TrialOutcome o;
  o.status = gpusweep::db::TrialStatus::ok;
  o.interleave_group = "bench";
  gpusweep::db::Summary sum;
  sum.unit = "steps";
  sum.blocks = blocks;
  sum.quality = 1;
  sum.quality_metric = "quality";
  o.metrics.push_back({"stat", 0, "quality_se", 0.001});
  o.metrics.push_back({"stat", 0, "overlap_fraction", 0});
  for (const auto& t : store.trials(id)) {
    const auto c = t.plan.config_index, r = t.plan.repeat;
    const double speed = 1 + 0.0005 * static_cast<double>(c % 50);
    o.blocks.clear();
    for (int k = 0; k < blocks; ++k) {
      const double noise = 0.01 * static_cast<double>((k * 7 + c * 3 + r) % 13);
      o.blocks.push_back(
          {k, 10, 1e-5 * (1 + noise) / speed, 10, 0, r * int64_t{blocks} + k, std::nullopt});
    }
    sum.throughput_median = 1e6 * speed;
    o.summary = sum;
    store.commit_trial(t.id, o);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::printf(
        "usage: large_db [TRIALS [BLOCKS [REPEATS]]]   (default 10000 100 1)\n"
        "Builds a database of TRIALS trials (TRIALS / REPEATS configs, REPEATS repeats each,\n"
        "BLOCKS blocks a trial, interleaved) through the store, then times every listing\n"
        "command on it. GPUSWEEP_KEEP_DB=1 keeps it; GPUSWEEP_LARGE_DB=FILE reuses one.\n");
    return 0;
  }
  const int trials = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int blocks = argc > 2 ? std::atoi(argv[2]) : 100;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 1;
  if (trials < 1 || blocks < 1 || repeats < 1 || trials % repeats != 0) {
    std::fprintf(stderr,
                 "large_db: TRIALS, BLOCKS and REPEATS must be positive, and REPEATS "
                 "must divide TRIALS (see --help)\n");
    return 2;
  }
  char tmpl[] = "/tmp/gpusweep_large_XXXXXX";
  const std::filesystem::path dir = mkdtemp(tmpl);
  const char* reuse = std::getenv("GPUSWEEP_LARGE_DB");
  const std::string db = reuse != nullptr ? reuse : (dir / "large.db").string();
  const std::string bin = GPUSWEEP_BIN;

  const auto t0 = Clock::now();
  if (reuse == nullptr) build(db, trials, blocks, repeats);
  const double build_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (reuse == nullptr) {
    std::printf(
        "database: %d trials (%d configs x %d repeats) x %d blocks = %lld block samples, built "
        "in %.1f s (%.2f ms per trial committed)\n\n",
        trials, trials / repeats, repeats, blocks, static_cast<long long>(trials) * blocks, build_s,
        1e3 * build_s / trials);
  }
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
  time_serve(bin, db, (dir / "serve.log").string());
  if (std::getenv("GPUSWEEP_KEEP_DB") != nullptr && reuse == nullptr) {
    std::printf("kept %s\n", db.c_str());
  } else if (reuse == nullptr) {
    std::filesystem::remove_all(dir);
  }
  return 0;
}
