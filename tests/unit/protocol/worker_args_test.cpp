// The worker's command line: what the host writes is what the worker reads.
#include "protocol/worker_args.hpp"
#include "support/error.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace gpusweep::host;

namespace {

WorkerArgs round_trip(const WorkerArgs& w) { return parse_worker_args(w.to_argv()); }

}  // namespace

TEST_CASE("worker args survive to_argv and parse in every mode", "[protocol]") {
  WorkerArgs w;
  w.plugin_path = "/p/gpusweep_dqn.so";
  w.config_json = R"({"batch_size":64,"note":"a b --c"})";
  w.measure_json = R"({"blocks":3})";
  w.max_memory_bytes = 3.0 * (1 << 30);
  w.diagnose = true;
  w.probe_matmul_s = 0.25;
  w.proto_fd = 7;
  for (WorkerMode mode : {WorkerMode::trial, WorkerMode::describe, WorkerMode::plugin_check,
                          WorkerMode::probe, WorkerMode::serve}) {
    w.mode = mode;
    w.serve_fd = mode == WorkerMode::serve ? 5 : -1;
    w.check_steps = mode == WorkerMode::plugin_check ? 9 : 5;
    const WorkerArgs r = round_trip(w);
    CHECK(r.mode == mode);
    CHECK(r.plugin_path == w.plugin_path);
    CHECK(r.config_json == w.config_json);
    CHECK(r.measure_json == w.measure_json);
    CHECK(r.max_memory_bytes == w.max_memory_bytes);
    CHECK(r.diagnose);
    CHECK(r.probe_matmul_s == 0.25);
    CHECK(r.proto_fd == 7);
    CHECK(r.serve_fd == w.serve_fd);
    CHECK(r.check_steps == w.check_steps);
  }
}

TEST_CASE("only plain trials go to a fork server", "[protocol]") {
  WorkerArgs w;
  w.plugin_path = "p.so";
  CHECK(w.servable());
  w.diagnose = true;
  CHECK_FALSE(w.servable());
  w.diagnose = false;
  w.probe_matmul_s = 1;
  CHECK_FALSE(w.servable());
  w.probe_matmul_s = 0;
  w.mode = WorkerMode::plugin_check;
  CHECK_FALSE(w.servable());
}

TEST_CASE("a malformed worker command line is refused naming the option", "[protocol]") {
  auto message = [](const std::vector<std::string>& args) {
    try {
      parse_worker_args(args);
    } catch (const gpusweep::UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(message({"--config", "{}"}).find("--plugin") != std::string::npos);
  CHECK(message({"--plugin", "p.so", "--bogus"}).find("--bogus") != std::string::npos);
  CHECK(message({"--plugin", "p.so", "--max-memory", "lots"}).find("--max-memory") !=
        std::string::npos);
  CHECK(message({"--plugin", "p.so", "--describe", "--check"}).find("cannot be combined") !=
        std::string::npos);
  CHECK(message({"--plugin"}).find("needs a value") != std::string::npos);
  CHECK(parse_worker_args({"--plugin=p.so", "--check-steps=3", "--check"}).check_steps == 3);
}
