// The worker process's entry and plumbing: the protocol descriptor, the
// plugin loaded and announced, the heartbeat, and a trial in this process
// set up and run (its protocol: trial.hpp). The fork server is in
// fork_server.cpp, the memory cap in memory_cap.cpp.
#include "worker/worker.hpp"
#include "protocol/event_payloads.hpp"
#include "protocol/events.hpp"

#include "protocol/event_writer.hpp"
#include "spec/sweep.hpp"
#include "support/procfs.hpp"
#include "worker/gate.hpp"
#include "worker/loader.hpp"
#include "worker/ranks.hpp"
#include "worker/trial.hpp"

#include <gpusweep/plugin.h>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>

namespace gpusweep::host {

namespace {

using Json = nlohmann::json;

}  // namespace

namespace detail {

Json probe_matmul(const gpusweep_plugin* t, double seconds) {
  const auto* probe = find_extension<gpusweep_ext_matmul_probe>(t, GPUSWEEP_EXT_MATMUL_PROBE);
  if (probe == nullptr) return nullptr;
  const char* result = nullptr;
  if (probe->measure(seconds, &result) != GPUSWEEP_STATUS_OK) {
    return Json{{"error", result != nullptr ? result : "the matmul probe failed"}};
  }
  return parse_or_raw(result);
}

}  // namespace detail

void finish(int code) {
  end_ranks();  // a data-parallel trial's leader: its other ranks go first
  std::fflush(nullptr);
  _exit(code);
}

nlohmann::json parse_or_raw(const char* text) {
  try {
    return nlohmann::json::parse(text != nullptr ? text : "null");
  } catch (const nlohmann::json::parse_error&) {
    return nlohmann::json{{"unparsed", text != nullptr ? text : ""}};
  }
}

int protect_protocol_fd(int fd) {
  // The plugin runs in this process and may write to any descriptor; the
  // protocol moves out of its way (a high number, closed on exec) and fd
  // `fd` becomes /dev/null, so that stray writes to it reach nothing.
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 100);
  if (moved < 0) return fd;
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, fd);
    if (null != fd) ::close(null);
  }
  return moved;
}

namespace {

// The plugin, and the manifest of the workload config_json selects (the
// plugin's own for all but a bridge such as the python plugin's).
void announce(LoadedPlugin& plugin, const std::string& config_json, EventWriter& out) {
  const gpusweep_plugin* t = plugin.table;
  plugin.manifest = workload_manifest(plugin, config_json);
  event::Loaded loaded;
  loaded.abi = plugin.abi;
  loaded.struct_size = t->struct_size;
  loaded.manifest = parse_or_raw(plugin.manifest.c_str());
  loaded.runtime = parse_or_raw(t->runtime());
  out.emit(loaded.to_json());
}

}  // namespace

namespace {

// Reports a plugin that did not load (or whose workload did not) as the
// trial's failed result, and ends the process.
[[noreturn]] void fail_load(const std::exception& e, EventWriter& out) {
  event::Result result;
  result.phase = Phase::load;
  result.message = e.what();
  if (const auto* pe = dynamic_cast<const PluginError*>(&e)) result.reason = pe->reason();
  out.emit(result.to_json());
  finish(0);
}

void announce_or_fail(LoadedPlugin& plugin, const std::string& config_json, EventWriter& out) {
  try {
    announce(plugin, config_json, out);
  } catch (const std::exception& e) {
    fail_load(e, out);
  }
}

}  // namespace

LoadedPlugin load_and_announce(const std::string& plugin_path, const std::string& config_json,
                               EventWriter& out) {
  LoadedPlugin plugin;
  try {
    plugin = load_plugin(plugin_path);
  } catch (const std::exception& e) {
    fail_load(e, out);
  }
  announce_or_fail(plugin, config_json, out);
  return plugin;
}

const char* status_name(int status) {
  switch (status) {
    case GPUSWEEP_STATUS_OK:
      return "ok";
    case GPUSWEEP_STATUS_OUT_OF_MEMORY:
      return "oom";
    case GPUSWEEP_STATUS_SKIPPED:
      return "skipped";
    default:
      return "failed";
  }
}

namespace {

// Twice a second, from its own thread, whatever the plugin is doing: the
// host ends a worker that falls silent (stopped, frozen) long before
// timeout_s, and tells that apart from a slow trial. The future is ready once
// the first beat is written.
std::future<void> start_heartbeat(EventWriter& out) {
  auto first_beat = std::make_shared<std::promise<void>>();
  std::future<void> beat = first_beat->get_future();
  std::thread([&out, first_beat] {
    const nlohmann::json beat = event::Heartbeat{}.to_json();
    out.emit(beat);
    first_beat->set_value();
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      out.emit(beat);
    }
  }).detach();
  return beat;
}

}  // namespace

namespace detail {

int run_trial(const WorkerArgs& args, const LoadedPlugin* preloaded) {
  // The trial's GPU, before anything in this process starts CUDA (a fork
  // server loads plugins without starting it).
  if (args.visible_devices) ::setenv("CUDA_VISIBLE_DEVICES", args.visible_devices->c_str(), 1);
  std::signal(SIGPIPE, SIG_IGN);
  // Outlives every return path (all end in _exit): the heartbeat thread
  // writes to it until the process ends.
  EventWriter& out = *new EventWriter(protect_protocol_fd(args.proto_fd));
  std::future<void> first_beat = start_heartbeat(out);
  out.emit(event::Hello{::getpid()}.to_json());
  Gate gate(args.mode == WorkerMode::trial ? args.gate_fd : -1, out);
  // The first turn: loading, setup and warmup.
  gate.await_turn(args.parallel_starts);

  // The trial's protocol, for a workload that runs someone else's loop (the
  // script workload) to say how many steps it needs when that loop ends
  // early: before the plugin is announced, which may start its interpreter.
  if (!args.measure_json.empty()) ::setenv("GPUSWEEP_MEASURE", args.measure_json.c_str(), 1);
  LoadedPlugin plugin;
  if (preloaded != nullptr) {
    plugin = *preloaded;
    announce_or_fail(plugin, args.config_json, out);
  } else {
    plugin = load_and_announce(args.plugin_path, args.config_json, out);
  }
  if (args.mode == WorkerMode::describe) finish(0);
  if (args.mode == WorkerMode::probe) {
    // `gpusweep doctor`: what the plugin's LibTorch mapped into this process
    // (BLAS, OpenMP), and the matmul peak.
    event::Probe probe;
    probe.libraries = mapped_libraries(read_text("/proc/self/maps"));
    if (args.probe_matmul_s > 0) probe.matmul = probe_matmul(plugin.table, args.probe_matmul_s);
    out.emit(probe.to_json());
    finish(0);
  }
  if (args.diagnose) {
    // Before create(): the timers apply to instances created after. Without
    // the extension the trial runs untimed and diagnose says so.
    const auto* timers =
        find_extension<gpusweep_ext_phase_timers>(plugin.table, GPUSWEEP_EXT_PHASE_TIMERS);
    if (timers != nullptr) timers->enable();
  }
  // A data-parallel trial's other ranks, before create() (its rendezvous
  // needs them all) and before anything here may start CUDA (the memory
  // cap): rank 0 narrows CUDA_VISIBLE_DEVICES to its own GPU.
  Ranks* ranks = nullptr;
  if (const int64_t world = requested_world_size(args.config_json);
      world > 1 && args.mode == WorkerMode::trial) {
    try {
      ranks = new Ranks(args, world);  // lives until the process ends
    } catch (const std::exception& e) {
      out.emit(event::Result::failed(Phase::setup, e.what()));
      finish(0);
    }
  }
  if (args.max_memory_bytes > 0) cap_trial_memory(plugin.table, args, first_beat, out);
  MeasureSpec m;
  try {
    m = MeasureSpec::from_json(Json::parse(args.measure_json), "--measure");
  } catch (const std::exception& e) {
    out.emit(event::Result::failed(Phase::args, std::string("bad --measure: ") + e.what()));
    finish(2);
  }
  Trial(plugin, args, m, out, gate, ranks).run();
}

}  // namespace detail

int run_worker(const WorkerArgs& args) { return detail::run_trial(args, nullptr); }

}  // namespace gpusweep::host
