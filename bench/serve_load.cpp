// `gpusweep serve` under load against a writer (issue 31's load test): a
// writer commits trials at a fixed rate with their blocks, first alone, then
// with the real server running beside it while 3 clients poll /api/runs and
// /api/run at 1 Hz and 20 more open the page (/, /api/runs, /api/run) once a
// second between them. Prints the writer's busy errors, its commit latency
// (p50, p99) in both phases and their ratio, the freshness a poller saw
// (commit to seen, p95), and the largest WAL file.
//
// Usage: serve_load [SECONDS_PER_PHASE=600] [TRIALS_PER_S=50] [BLOCKS=20]
#include <gpusweep/db/store.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
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

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

// GET target from 127.0.0.1:port; the body, or "" when nothing answered 200.
std::string get(uint16_t port, const std::string& target) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string text;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string req = "GET " + target + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[65536];
      for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
        text.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  if (text.rfind("HTTP/1.1 200", 0) != 0 && text.rfind("HTTP/1.0 200", 0) != 0) return "";
  const auto body = text.find("\r\n\r\n");
  return body == std::string::npos ? "" : text.substr(body + 4);
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

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 600;
  const double rate = argc > 2 ? std::atof(argv[2]) : 50;
  const int blocks = argc > 3 ? std::atoi(argv[3]) : 20;
  char tmpl[] = "/tmp/gpusweep_serve_load_XXXXXX";
  const std::filesystem::path dir = mkdtemp(tmpl);
  const std::string path = (dir / "load.db").string();
  const auto n = static_cast<size_t>(2 * seconds * rate + 100);
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
  const auto epoch = Clock::now();
  std::vector<double> committed(n, -1);
  std::printf("phase 1: the writer alone, %.0f s at %.0f trials/s with %d blocks each\n", seconds,
              rate, blocks);
  std::fflush(stdout);
  const Phase alone = write_phase(path, sweep, ids, 0, seconds, rate, blocks, &committed, epoch);
  const size_t first = alone.commit_s.size() + static_cast<size_t>(alone.errors);

  // Phase 2: the server beside it, and its clients.
  const std::string log = (dir / "serve.log").string();
  const pid_t server = fork();
  if (server == 0) {
    const std::string cmd = std::string("exec '") + GPUSWEEP_BIN + "' serve --db '" + path +
                            "' --port 0 > '" + log + "' 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  uint16_t port = 0;
  for (int i = 0; i < 400 && port == 0; ++i) {
    std::ifstream in(log);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::smatch m;
    if (std::regex_search(text, m, std::regex(":(\\d+)/")))
      port = static_cast<uint16_t>(std::stoi(m[1]));
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  if (port == 0) {
    std::fprintf(stderr, "serve did not start\n");
    return 1;
  }
  std::atomic<bool> done{false};
  std::mutex mu;
  std::vector<double> freshness;
  int failed_requests = 0;
  std::vector<std::thread> clients;
  const std::regex finished_re("\"finished\":(\\d+)");
  for (int c = 0; c < 3; ++c) {
    clients.emplace_back([&, c] {
      std::this_thread::sleep_for(std::chrono::milliseconds(333 * c));
      while (!done) {
        const auto t = Clock::now();
        const std::string runs = get(port, "/api/runs");
        const double now = std::chrono::duration<double>(Clock::now() - epoch).count();
        std::smatch m;
        std::lock_guard<std::mutex> lock(mu);
        if (runs.empty() || !std::regex_search(runs, m, finished_re)) {
          ++failed_requests;
        } else {
          // The newest trial this answer counts: how long ago it was committed.
          const auto seen = static_cast<size_t>(std::stoll(m[1]));
          if (seen > first && seen <= n && committed[seen - 1] >= 0) {
            freshness.push_back(now - committed[seen - 1]);
          }
        }
        if (get(port, "/api/run?db=0&id=1").empty()) ++failed_requests;
        std::this_thread::sleep_until(t + std::chrono::seconds(1));
      }
    });
  }
  for (int c = 0; c < 20; ++c) {
    clients.emplace_back([&, c] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50 * c));
      while (!done) {
        const auto t = Clock::now();
        const bool ok = !get(port, "/").empty() && !get(port, "/api/runs").empty() &&
                        !get(port, "/api/run?db=0&id=1").empty();
        if (!ok) {
          std::lock_guard<std::mutex> lock(mu);
          ++failed_requests;
        }
        std::this_thread::sleep_until(t + std::chrono::seconds(1));
      }
    });
  }
  std::printf(
      "phase 2: the same with gpusweep serve on port %u, 3 pollers at 1 Hz and 20 page "
      "openers\n",
      port);
  std::fflush(stdout);
  const Phase served =
      write_phase(path, sweep, ids, first, seconds, rate, blocks, &committed, epoch);
  done = true;
  for (auto& t : clients) t.join();
  ::kill(server, SIGKILL);
  waitpid(server, nullptr, 0);

  const double p50a = quantile(alone.commit_s, 0.5), p99a = quantile(alone.commit_s, 0.99);
  const double p50b = quantile(served.commit_s, 0.5), p99b = quantile(served.commit_s, 0.99);
  std::printf("\nwriter busy/locked errors: %d alone, %d with the server\n", alone.errors,
              served.errors);
  std::printf("commit latency alone:       p50 %.2f ms, p99 %.2f ms (%zu commits)\n", 1e3 * p50a,
              1e3 * p99a, alone.commit_s.size());
  std::printf("commit latency with serve:  p50 %.2f ms, p99 %.2f ms (%zu commits)\n", 1e3 * p50b,
              1e3 * p99b, served.commit_s.size());
  std::printf("p99 with serve / alone:     %.3f\n", p99a > 0 ? p99b / p99a : 0);
  std::printf("freshness (commit to seen by a poller): p50 %.2f s, p95 %.2f s over %zu answers\n",
              quantile(freshness, 0.5), quantile(freshness, 0.95), freshness.size());
  std::printf("largest WAL file: %.1f MiB alone, %.1f MiB with the server\n",
              static_cast<double>(alone.max_wal) / 1048576,
              static_cast<double>(served.max_wal) / 1048576);
  std::printf("requests that failed: %d\n", failed_requests);
  std::filesystem::remove_all(dir);
  return 0;
}
