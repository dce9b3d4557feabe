// `gpusweep worker`: the process side of one trial (not for users).
#include "cli.hpp"
#include "worker.hpp"

#include <csignal>
#include <optional>
#include <sys/prctl.h>
#include <unistd.h>

namespace gpusweep::host {

std::optional<WorkerArgs> parse_worker_args(const Args& args) {
  po::options_description o;
  o.add_options()("plugin", po::value<std::string>()->required(), "plugin file")(
      "describe", po::bool_switch(), "report manifest and runtime, then exit")(
      "check", po::bool_switch(), "smoke-test every function of the plugin with --config")(
      "check-steps", po::value<int64_t>()->default_value(5), "steps of the --check smoke test")(
      "config", po::value<std::string>()->default_value("{}"), "resolved trial config (JSON)")(
      "measure", po::value<std::string>()->default_value("{}"), "protocol (JSON)")(
      "proto-fd", po::value<int>()->default_value(3), "file descriptor for protocol events")(
      "max-memory", po::value<double>()->default_value(0),
      "cap in bytes on what the trial allocates beyond the loaded plugin (0: none)")(
      "diagnose", po::bool_switch(), "time the step's phases (torchkit) and report them")(
      "probe", po::bool_switch(), "load the plugin, report mapped libraries (and --probe-matmul)")(
      "probe-matmul", po::value<double>()->default_value(0),
      "seconds of the matmul peak measurement (0: none)")(
      "serve", po::value<int>(),
      "fork server: load the plugin once, then fork a trial worker per request read from "
      "this descriptor (fork_server.hpp)");
  auto p = parse_command("worker",
                         "--plugin FILE [--describe | --check --config JSON | --config JSON "
                         "--measure JSON | --serve FD]",
                         "Internal: runs one trial in this process and streams JSON events on\n"
                         "--proto-fd. The host starts it; users do not.",
                         o, {}, args);
  if (p.help) return std::nullopt;
  WorkerArgs w;
  w.plugin_path = p.vm["plugin"].as<std::string>();
  w.describe = p.vm["describe"].as<bool>();
  w.config_json = p.vm["config"].as<std::string>();
  w.measure_json = p.vm["measure"].as<std::string>();
  w.proto_fd = p.vm["proto-fd"].as<int>();
  w.check = p.vm["check"].as<bool>();
  w.check_steps = p.vm["check-steps"].as<int64_t>();
  w.max_memory_bytes = p.vm["max-memory"].as<double>();
  w.diagnose = p.vm["diagnose"].as<bool>();
  w.probe = p.vm["probe"].as<bool>();
  w.probe_matmul_s = p.vm["probe-matmul"].as<double>();
  if (p.vm.count("serve") != 0U) w.serve_fd = p.vm["serve"].as<int>();
  return w;
}

int cmd_worker(const Args& args) {
  const std::optional<WorkerArgs> w = parse_worker_args(args);
  if (!w) return 0;
  // A worker outlives nothing: when the host dies (SIGKILL included) the
  // kernel kills it too, instead of leaving it to finish a trial nobody will
  // record. (Started after the host already died, it is orphaned: stop.)
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return 1;
  if (w->serve_fd >= 0) return run_fork_server(*w);
  return w->check ? run_check_worker(*w) : run_worker(*w);
}

}  // namespace gpusweep::host
