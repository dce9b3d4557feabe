// The worker's command line; see worker_args.hpp.
#include "protocol/worker_args.hpp"

#include "support/capture.hpp"
#include "support/error.hpp"
#include "support/spawn.hpp"
#include "support/version.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <system_error>

namespace gpusweep::host {

namespace {

struct Mode {
  WorkerMode mode;
  const char* flag;
};
constexpr Mode kModes[] = {{WorkerMode::describe, "--describe"},
                           {WorkerMode::plugin_check, "--check"},
                           {WorkerMode::probe, "--probe"}};

std::string number(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

double to_double(const std::string& option, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') {
    throw UsageError("worker: " + option + " takes a number, not '" + text + "'");
  }
  return v;
}

int64_t to_int(const std::string& option, const std::string& text) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') {
    throw UsageError("worker: " + option + " takes an integer, not '" + text + "'");
  }
  return v;
}

}  // namespace

bool WorkerArgs::servable() const {
  return mode == WorkerMode::trial && !diagnose && probe_matmul_s <= 0;
}

std::vector<std::string> WorkerArgs::to_argv() const {
  std::vector<std::string> a = {"--plugin", plugin_path};
  for (const Mode& m : kModes) {
    if (m.mode == mode) a.emplace_back(m.flag);
  }
  if (mode == WorkerMode::serve) a.insert(a.end(), {"--serve", std::to_string(serve_fd)});
  if (proto_fd != 3) a.insert(a.end(), {"--proto-fd", std::to_string(proto_fd)});
  if (gate_fd >= 0) a.insert(a.end(), {"--gate-fd", std::to_string(gate_fd)});
  if (parallel_starts) a.emplace_back("--parallel-starts");
  if (visible_devices) a.insert(a.end(), {"--visible-devices", *visible_devices});
  if (mode == WorkerMode::plugin_check)
    a.insert(a.end(), {"--check-steps", std::to_string(check_steps)});
  if (config_json != "{}") a.insert(a.end(), {"--config", config_json});
  if (measure_json != "{}") a.insert(a.end(), {"--measure", measure_json});
  if (max_memory_bytes > 0) a.insert(a.end(), {"--max-memory", number(max_memory_bytes)});
  if (diagnose) a.emplace_back("--diagnose");
  if (probe_matmul_s > 0) a.insert(a.end(), {"--probe-matmul", number(probe_matmul_s)});
  if (target_cap_s > 0) a.insert(a.end(), {"--target-cap", number(target_cap_s)});
  if (peer_fd >= 0) {
    a.insert(a.end(), {"--peer-fd", std::to_string(peer_fd), "--rank", std::to_string(rank)});
  }
  return a;
}

WorkerArgs parse_worker_args(const std::vector<std::string>& args) {
  WorkerArgs w;
  bool have_plugin = false;
  std::string mode_flag;
  auto set_mode = [&](WorkerMode m, const std::string& flag) {
    if (!mode_flag.empty() && mode_flag != flag) {
      throw UsageError("worker: " + mode_flag + " and " + flag + " cannot be combined");
    }
    w.mode = m;
    mode_flag = flag;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    std::string key = args[i];
    std::string value;
    bool inline_value = false;
    if (const auto eq = key.find('='); key.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
      inline_value = true;
    }
    auto take = [&]() -> const std::string& {
      if (inline_value) return value;
      if (i + 1 >= args.size()) throw UsageError("worker: " + key + " needs a value");
      return args[++i];
    };
    bool is_mode = false;
    for (const Mode& m : kModes) {
      if (key == m.flag) {
        set_mode(m.mode, key);
        is_mode = true;
      }
    }
    if (is_mode) continue;
    if (key == "--plugin") {
      w.plugin_path = take();
      have_plugin = true;
    } else if (key == "--serve") {
      w.serve_fd = static_cast<int>(to_int(key, take()));
      set_mode(WorkerMode::serve, key);
    } else if (key == "--proto-fd") {
      w.proto_fd = static_cast<int>(to_int(key, take()));
    } else if (key == "--gate-fd") {
      w.gate_fd = static_cast<int>(to_int(key, take()));
    } else if (key == "--parallel-starts") {
      w.parallel_starts = true;
    } else if (key == "--visible-devices") {
      w.visible_devices = take();
    } else if (key == "--check-steps") {
      w.check_steps = to_int(key, take());
    } else if (key == "--config") {
      w.config_json = take();
    } else if (key == "--measure") {
      w.measure_json = take();
    } else if (key == "--max-memory") {
      w.max_memory_bytes = to_double(key, take());
    } else if (key == "--diagnose") {
      w.diagnose = true;
    } else if (key == "--probe-matmul") {
      w.probe_matmul_s = to_double(key, take());
    } else if (key == "--target-cap") {
      w.target_cap_s = to_double(key, take());
    } else if (key == "--peer-fd") {
      w.peer_fd = static_cast<int>(to_int(key, take()));
    } else if (key == "--rank") {
      w.rank = to_int(key, take());
    } else {
      throw UsageError("worker: unknown option '" + args[i] + "' (see `gpusweep-worker --help`)");
    }
  }
  if (!have_plugin) throw UsageError("worker: --plugin FILE is required");
  return w;
}

std::string worker_options_help() {
  return "  --plugin FILE        the plugin to load (required)\n"
         "  --describe           report manifest and runtime, then exit (with --config:\n"
         "                       the manifest of the workload it selects, python's module)\n"
         "  --check              smoke-test every function of the plugin with --config\n"
         "  --check-steps N      steps of the --check smoke test (5)\n"
         "  --probe              load the plugin, report mapped libraries (and --probe-matmul)\n"
         "  --serve FD           fork server: load the plugin once, then fork a trial worker\n"
         "                       per request read from this descriptor (run/fork_server.hpp)\n"
         "  --config JSON        resolved trial config ({})\n"
         "  --measure JSON       the measurement protocol ({})\n"
         "  --proto-fd FD        file descriptor for protocol events (3)\n"
         "  --gate-fd FD         interleaved execution: before each turn (setup and\n"
         "                       warmup, then each block) write an `await` event and\n"
         "                       wait for a byte on this descriptor (none: no waits)\n"
         "  --parallel-starts    with --gate-fd: the waits before setup and before the\n"
         "                       final evaluation are marked unmeasured, and what is\n"
         "                       timed after warmup (block sizing, warmup by time or\n"
         "                       stability, the busy-share probe) waits for a turn\n"
         "                       of its own\n"
         "  --visible-devices L  set CUDA_VISIBLE_DEVICES to L before anything starts\n"
         "                       CUDA: the trial's GPU (run --gpus)\n"
         "  --max-memory BYTES   cap on what the trial allocates: the device allocator's\n"
         "                       on CUDA, else the address space beyond the loaded\n"
         "                       plugin (0: none)\n"
         "  --diagnose           time the step's phases (torchkit) and report them\n"
         "  --probe-matmul S     seconds of the matmul peak measurement (0: none)\n"
         "  --target-cap S       measure.target: stop, censored, once the trial has\n"
         "                       trained S seconds (adaptive capping; 0: none)\n"
         "  --peer-fd FD         a data-parallel trial's rank > 0: take commands from\n"
         "                       rank 0 on this socket (world_size > 1; worker/ranks.hpp)\n"
         "  --rank R             that rank's number\n";
}

}  // namespace gpusweep::host

namespace gpusweep::host {

std::string worker_executable() {
  const std::string self = self_executable();
  const std::string dir = self.substr(0, self.rfind('/'));
  // The build tree puts the two programs side by side; an install puts the
  // worker, which users do not run, in libexec.
  const std::vector<std::string> places = {
      dir + "/gpusweep-worker",
      dir + "/../" + build::install_libexec_dir() + "/gpusweep/gpusweep-worker"};
  for (const std::string& p : places) {
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  throw Error("cannot find the worker program gpusweep-worker (looked for " + places[0] + " and " +
              places[1] +
              "); it is built and installed with gpusweep: rebuild or reinstall gpusweep");
}

Captured run_worker_captured(const WorkerArgs& worker, double timeout_s) {
  CaptureLimits limits;
  limits.timeout_s = timeout_s;
  limits.out = 0;
  limits.err = 65536;
  return capture(worker_executable(), worker.to_argv(), limits);
}

namespace {
// TMPDIR, else /tmp, as the database's temporary copies use it.
std::string temp_folder() {
  std::error_code ec;
  const auto dir = std::filesystem::temp_directory_path(ec);
  return ec ? std::string("/tmp") : dir.string();
}
std::string rendezvous_prefix(int leader_pid) {
  return "gpusweep-ranks-" + std::to_string(leader_pid) + "-";
}
}  // namespace

std::string rendezvous_template(int leader_pid) {
  return temp_folder() + "/" + rendezvous_prefix(leader_pid) + "XXXXXX";
}

int remove_rendezvous_folders(int leader_pid) {
  const std::string prefix = rendezvous_prefix(leader_pid);
  std::error_code ec;
  std::vector<std::filesystem::path> found;
  for (std::filesystem::directory_iterator it(temp_folder(), ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->path().filename().string().rfind(prefix, 0) == 0) found.push_back(it->path());
  }
  int removed = 0;
  for (const auto& f : found) {
    if (std::filesystem::remove_all(f, ec) > 0 && !ec) ++removed;
  }
  return removed;
}

}  // namespace gpusweep::host
