// `gpusweep serve` under load against a writer (issue 31's load test): a
// writer commits trials at a fixed rate with their blocks, in chunks that
// alternate (A B B A A B ...) between the writer alone and the writer with
// the real server beside it, whose clients run in a process of their own:
// 3 pollers ask for /api/runs and the watched run's /api/run once a second,
// and 20 open pages, each of which loads the page first; all ask for the run
// by the cursor of their last answer, as the page does (what changed since).
// The server is killed (-9) at the end of each of its chunks and started
// again for the next. Alternating cancels the drift of a shared machine's
// load between the two conditions, which one long phase each would not.
//
// Prints the writer's busy errors, its commit latency (p50, p99) alone and
// with the server over all chunks and their ratio, the ratio chunk pair by
// chunk pair, the freshness a poller saw (commit to seen, p95), the largest
// WAL file, the requests that failed and the server's CPU time.
//
// Usage: serve_load [SECONDS_PER_CONDITION=600] [TRIALS_PER_S=50] [BLOCKS=20] [CHUNK_S=60]
#include "serve_client.hpp"

#include <gpusweep/db/run_lock.hpp>
#include <gpusweep/db/store.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
namespace db = gpusweep::db;
namespace bench = gpusweep::bench;
using bench::cursor_of;
using bench::get;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

struct Phase {
  std::vector<double> commit_s;
  int errors = 0;
  uintmax_t max_wal = 0;
};

// Commits trials of run `sweep` at `rate` a second for `seconds`; the
// commit times (steady clock) go to committed[i] for trial i.
Phase write_phase(const std::string& path, int64_t sweep, const std::vector<int64_t>& ids,
                  size_t first, double seconds, double rate, int blocks,
                  std::vector<double>* committed, Clock::time_point epoch) {
  Phase out;
  db::Store store(path, db::Connection::Mode::read_write);
  (void)sweep;
  const auto t0 = Clock::now();
  size_t i = first;
  for (int64_t k = 0; seconds_since(t0) < seconds && i < ids.size(); ++k, ++i) {
    const auto due = t0 + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(static_cast<double>(k) / rate));
    std::this_thread::sleep_until(due);
    db::TrialOutcome o;
    o.status = db::TrialStatus::ok;
    o.started_at = o.finished_at = "2026-11-25T00:00:00.000Z";
    o.wall_s = 1;
    db::Summary s;
    s.unit = "samples";
    s.steps_per_block = 10;
    s.blocks = blocks;
    s.throughput_median = 100;
    o.summary = s;
    for (int b = 0; b < blocks; ++b) {
      o.blocks.push_back({b, 10, 0.1 + 0.001 * (k % 7), 1000, 0, std::nullopt, std::nullopt});
    }
    const auto c0 = Clock::now();
    try {
      store.commit_trial(ids[i], o);
      out.commit_s.push_back(seconds_since(c0));
      (*committed)[i] = std::chrono::duration<double>(Clock::now() - epoch).count();
    } catch (const std::exception& e) {
      ++out.errors;
      std::fprintf(stderr, "writer: %s\n", e.what());
    }
    std::error_code ec;
    out.max_wal = std::max<uintmax_t>(out.max_wal, std::filesystem::file_size(path + "-wal", ec));
  }
  return out;
}

// The clients of one served chunk, in this (forked) process until SIGTERM:
// each seen finished count with its time (steady clock, seconds since
// `epoch`) and the requests that failed, written to `out` at the end.
[[noreturn]] void run_clients(uint16_t port, const std::string& out, Clock::time_point epoch) {
  static std::atomic<bool> stop{false};
  signal(SIGTERM, [](int) { stop = true; });
  std::mutex mu;
  std::vector<std::pair<double, int64_t>> seen;
  int failed = 0;
  const std::regex finished_re("\"finished\":(\\d+)");
  auto poll_run = [&](std::string* cursor) {
    const std::string body = get(port, "/api/run?db=0&id=1&since=" + *cursor);
    if (body.empty()) return false;
    *cursor = cursor_of(body);
    return !cursor->empty();
  };
  std::vector<std::thread> clients;
  for (int c = 0; c < 23; ++c) {
    clients.emplace_back([&, c] {
      std::this_thread::sleep_for(std::chrono::milliseconds(43 * c));
      const bool poller = c < 3;
      std::string cursor;
      if (!poller && get(port, "/").empty()) {
        std::lock_guard<std::mutex> lock(mu);
        ++failed;
      }
      while (!stop) {
        const auto t = Clock::now();
        const std::string runs = get(port, "/api/runs");
        const double now = std::chrono::duration<double>(Clock::now() - epoch).count();
        std::smatch m;
        const bool ok_runs = !runs.empty() && std::regex_search(runs, m, finished_re);
        const bool ok_run = poll_run(&cursor);
        std::lock_guard<std::mutex> lock(mu);
        if (!ok_runs || !ok_run) ++failed;
        if (ok_runs && poller) seen.emplace_back(now, std::stoll(m[1]));
        std::this_thread::sleep_until(t + std::chrono::seconds(1));
      }
    });
  }
  for (auto& t : clients) t.join();
  std::ofstream f(out);
  f << failed << "\n";
  for (const auto& [t, n] : seen) f << t << " " << n << "\n";
  f.close();
  _exit(0);
}

// User plus system CPU seconds of a child that has exited (its rusage).
double reap(pid_t pid) {
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) != pid) return 0;
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

}  // namespace

// Long by design: the set-up, the alternating chunks, and the printout.
int main(int argc, char** argv) {
  if (argc > 1 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::printf(
        "usage: serve_load [SECONDS_PER_CONDITION=600] [TRIALS_PER_S=50] [BLOCKS=20] "
        "[CHUNK_S=60]\n");
    return 0;
  }
  const double seconds = argc > 1 ? std::atof(argv[1]) : 600;
  const double rate = argc > 2 ? std::atof(argv[2]) : 50;
  const int blocks = argc > 3 ? std::atoi(argv[3]) : 20;
  const double chunk = std::min(seconds, argc > 4 ? std::atof(argv[4]) : 60);
  const int chunks = std::max(1, static_cast<int>(std::lround(seconds / chunk)));
  char tmpl[] = "/tmp/gpusweep_serve_load_XXXXXX";
  const std::filesystem::path dir = mkdtemp(tmpl);
  const std::string path = (dir / "load.db").string();
  const auto n = static_cast<size_t>(2 * chunks * chunk * rate + 100);
  int64_t sweep = 0;
  std::vector<int64_t> ids;
  {
    db::Store store(path, db::Connection::Mode::read_write);
    db::SweepRecord s;
    s.name = "load";
    s.workload = "noop";
    s.spec_json = R"({"name": "load", "workload": "noop", "grid": {"batch_size": [1, 2]},
      "measure": {"repeats": 1000000}})";
    s.spec_hash = "load";
    std::vector<db::TrialPlan> plan(n);
    for (size_t i = 0; i < n; ++i) {
      plan[i].ordinal = static_cast<int64_t>(i);
      plan[i].config_index = static_cast<int64_t>(i % 2);
      plan[i].repeat = static_cast<int64_t>(i / 2);
      plan[i].workload = "noop";
      plan[i].plugin_version = "1";
      plan[i].config_json = i % 2 == 0 ? R"({"batch_size": 1})" : R"({"batch_size": 2})";
      plan[i].config_hash = i % 2 == 0 ? "a" : "b";
    }
    sweep = store.create_sweep(s, plan);
    for (const auto& t : store.trials(sweep)) ids.push_back(t.id);
  }
  // Held as `gpusweep run` holds it: the server sees a running run, whose
  // details it computes again at most once a second.
  const auto lock = db::RunLock::try_acquire(path, sweep);
  if (!lock) {
    std::fprintf(stderr, "cannot take the run's lock\n");
    return 1;
  }
  const auto epoch = Clock::now();
  std::vector<double> committed(n, -1);
  std::printf(
      "%d chunks of %.0f s each alone and with gpusweep serve (3 pollers, 20 open pages), "
      "alternating A B B A; the writer at %.0f trials/s with %d blocks each\n",
      chunks, chunk, rate, blocks);
  std::fflush(stdout);
  Phase alone, served;
  std::vector<double> pair_ratios;
  std::vector<std::pair<double, int64_t>> seen;
  int failed_requests = 0, no_server = 0;
  double server_cpu = 0, clients_cpu = 0;
  size_t next = 0;
  double last_alone_p99 = 0;  // the ratio chunk by chunk: each served one to the last alone
  for (int k = 0; k < 2 * chunks; ++k) {
    const bool with_server = (k % 4 == 1 || k % 4 == 2);
    pid_t server = 0, clients = 0;
    const std::string seen_file = (dir / ("seen" + std::to_string(k))).string();
    if (with_server) {
      uint16_t port = 0;
      server = bench::start_server(GPUSWEEP_BIN, path,
                                   (dir / ("serve" + std::to_string(k) + ".log")).string(), &port);
      if (port == 0) {
        ++no_server;
      } else {
        clients = fork();
        if (clients == 0) run_clients(port, seen_file, epoch);
      }
    }
    const Phase p = write_phase(path, sweep, ids, next, chunk, rate, blocks, &committed, epoch);
    next += p.commit_s.size() + static_cast<size_t>(p.errors);
    if (clients > 0) {
      ::kill(clients, SIGTERM);
      clients_cpu += reap(clients);
      std::ifstream in(seen_file);
      int failed = 0;
      in >> failed;
      failed_requests += failed;
      for (double t; in >> t;) {
        int64_t f = 0;
        in >> f;
        seen.emplace_back(t, f);
      }
    }
    if (server > 0) {
      ::kill(server, SIGKILL);
      server_cpu += reap(server);
    }
    Phase& into = with_server ? served : alone;
    into.commit_s.insert(into.commit_s.end(), p.commit_s.begin(), p.commit_s.end());
    into.errors += p.errors;
    into.max_wal = std::max(into.max_wal, p.max_wal);
    std::printf("  chunk %d (%s): commit p99 %.2f ms\n", k + 1, with_server ? "served" : "alone",
                1e3 * quantile(p.commit_s, 0.99));
    std::fflush(stdout);
    if (!with_server) last_alone_p99 = quantile(p.commit_s, 0.99);
    if (with_server && last_alone_p99 > 0) {
      pair_ratios.push_back(quantile(p.commit_s, 0.99) / last_alone_p99);
    }
  }
  // Freshness: at each answer, how long ago the newest trial it counts was committed.
  std::vector<double> freshness;
  for (const auto& [t, f] : seen) {
    if (f > 0 && static_cast<size_t>(f) <= n && committed[static_cast<size_t>(f) - 1] >= 0) {
      freshness.push_back(std::max(0.0, t - committed[static_cast<size_t>(f) - 1]));
    }
  }
  const double p50a = quantile(alone.commit_s, 0.5), p99a = quantile(alone.commit_s, 0.99);
  const double p50b = quantile(served.commit_s, 0.5), p99b = quantile(served.commit_s, 0.99);
  std::printf("\nwriter busy/locked errors: %d alone, %d with the server\n", alone.errors,
              served.errors);
  std::printf("commit latency alone:       p50 %.2f ms, p99 %.2f ms (%zu commits)\n", 1e3 * p50a,
              1e3 * p99a, alone.commit_s.size());
  std::printf("commit latency with serve:  p50 %.2f ms, p99 %.2f ms (%zu commits)\n", 1e3 * p50b,
              1e3 * p99b, served.commit_s.size());
  std::printf("p99 with serve / alone:     %.3f (chunk by chunk: median %.3f, range %.3f-%.3f)\n",
              p99a > 0 ? p99b / p99a : 0, quantile(pair_ratios, 0.5),
              pair_ratios.empty() ? 0 : *std::min_element(pair_ratios.begin(), pair_ratios.end()),
              pair_ratios.empty() ? 0 : *std::max_element(pair_ratios.begin(), pair_ratios.end()));
  std::printf("freshness (commit to seen by a poller): p50 %.2f s, p95 %.2f s over %zu answers\n",
              quantile(freshness, 0.5), quantile(freshness, 0.95), freshness.size());
  std::printf("largest WAL file: %.1f MiB alone, %.1f MiB with the server\n",
              static_cast<double>(alone.max_wal) / 1048576,
              static_cast<double>(served.max_wal) / 1048576);
  std::printf("requests that failed: %d; servers that did not start: %d\n", failed_requests,
              no_server);
  std::printf("server CPU: %.1f s over %.0f s served (%.1f%% of a core); its clients' %.1f s\n",
              server_cpu, chunks * chunk, 100 * server_cpu / (chunks * chunk), clients_cpu);
  std::filesystem::remove_all(dir);
  return 0;
}
