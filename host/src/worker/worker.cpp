// The worker side of the measurement protocol (docs/architecture.md): warmup,
// blocks of steps with a device sync at block edges only, evaluation, stats.
#include "worker/worker.hpp"
#include "protocol/events.hpp"

#include "model/sweep.hpp"
#include "protocol/event_writer.hpp"
#include "protocol/fork_messages.hpp"
#include "support/procfs.hpp"
#include "support/spawn.hpp"
#include "support/stats.hpp"
#include "worker/loader.hpp"
#include "worker/ranks.hpp"

#include <gpusweep/plugin.h>

#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace gpusweep::host {

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The process's address-space size now (VmSize), in bytes; 0 if unknown.
double address_space_bytes() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  double kib = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "VmSize: %lf kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib * 1024.0;
}

// The matmul peak through the plugin's matmul-probe extension; null when the
// plugin offers none (or the probe failed: its message instead).
Json probe_matmul(const gpusweep_plugin* t, double seconds) {
  const auto* probe = find_extension<gpusweep_ext_matmul_probe>(t, GPUSWEEP_EXT_MATMUL_PROBE);
  if (probe == nullptr) return nullptr;
  const char* result = nullptr;
  if (probe->measure(seconds, &result) != GPUSWEEP_STATUS_OK) {
    return Json{{"error", result != nullptr ? result : "the matmul probe failed"}};
  }
  return parse_or_raw(result);
}

}  // namespace

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
  out.emit({{"event", event::loaded},
            {"abi", plugin.abi},
            {"struct_size", t->struct_size},
            {"manifest", parse_or_raw(plugin.manifest.c_str())},
            {"runtime", parse_or_raw(t->runtime())}});
}

}  // namespace

namespace {

// Reports a plugin that did not load (or whose workload did not) as the
// trial's failed result, and ends the process.
[[noreturn]] void fail_load(const std::exception& e, EventWriter& out) {
  Json result = {
      {"event", event::result}, {"status", "failed"}, {"phase", "load"}, {"message", e.what()}};
  if (const auto* pe = dynamic_cast<const PluginError*>(&e)) result["reason"] = pe->reason();
  out.emit(result);
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
    out.emit({{"event", event::heartbeat}});
    first_beat->set_value();
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      out.emit({{"event", event::heartbeat}});
    }
  }).detach();
  return beat;
}

// RLIMIT_AS = the address space now + the cap. The first heartbeat is awaited
// first, so that the heap arena its message creates counts before the cap
// rather than against the trial's budget.
void cap_memory(double cap_bytes, std::future<void>& first_beat, EventWriter& out) {
  first_beat.wait();
  const double baseline = address_space_bytes();
  rlimit cap{};
  cap.rlim_cur = cap.rlim_max = static_cast<rlim_t>(baseline + cap_bytes);
  if (baseline <= 0 || ::setrlimit(RLIMIT_AS, &cap) != 0) {
    out.emit({{"event", event::result},
              {"status", "failed"},
              {"phase", "args"},
              {"message", "cannot cap the worker's memory (RLIMIT_AS)"}});
    finish(0);
  }
  out.emit({{"event", event::memory_cap},
            {"kind", "address_space"},
            {"cap_bytes", cap_bytes},
            {"baseline_bytes", baseline},
            {"limit_bytes", baseline + cap_bytes}});
}

}  // namespace

// measure.max_memory: the device's allocator where the trial runs on one
// (CUDA: RLIMIT_AS would starve the driver, whose context and unified
// memory reserve far more address space than they use), else the address
// space. The plugin says which; a plugin without the extension is capped by
// address space.
void cap_trial_memory(const gpusweep_plugin* table, const WorkerArgs& args,
                      std::future<void>& first_beat, EventWriter& out) {
  const auto* device =
      find_extension<gpusweep_ext_device_memory_cap>(table, GPUSWEEP_EXT_DEVICE_MEMORY_CAP);
  const char* result = nullptr;
  const gpusweep_status st =
      device != nullptr ? device->cap(args.config_json.c_str(), args.max_memory_bytes, &result)
                        : GPUSWEEP_STATUS_SKIPPED;
  if (st == GPUSWEEP_STATUS_SKIPPED) {
    cap_memory(args.max_memory_bytes, first_beat, out);
    return;
  }
  const std::string text = result != nullptr ? result : "";
  if (st != GPUSWEEP_STATUS_OK) {
    out.emit({{"event", event::result},
              {"status", "failed"},
              {"phase", "args"},
              {"message", "cannot cap the device's memory: " + text}});
    finish(0);
  }
  Json e = parse_or_raw(text.c_str());
  if (!e.is_object()) e = Json::object();
  e["event"] = event::memory_cap;
  e["kind"] = "device";
  e["cap_bytes"] = args.max_memory_bytes;
  out.emit(e);
}

namespace {

// Interleaved execution (--gate-fd): the trial waits for its turn before
// setup and before each measured block, having said so with an `await`
// event; the host lets one trial (or --jobs of them) run at a time by
// writing a byte: 'g', or 'c' and 8 bytes, a measure.target cap (the
// training seconds after which the trial stops, censored: adaptive capping)
// that holds from this turn on. Without a gate every wait returns at once.
class Gate {
 public:
  Gate(int fd, EventWriter& out) : fd_(fd), out_(out) {
    if (fd_ >= 0) {
      // Out of the plugin's way, as the protocol is.
      const int moved = ::fcntl(fd_, F_DUPFD_CLOEXEC, 100);
      if (moved >= 0) {
        ::close(fd_);
        fd_ = moved;
      }
    }
  }
  bool gated() const { return fd_ >= 0; }

  void await_turn() {
    if (fd_ < 0) return;
    out_.emit({{"event", event::await}, {"turn", turn_++}});
    char go = 0;
    ssize_t n;
    while ((n = ::read(fd_, &go, 1)) < 0 && errno == EINTR) {
    }
    // The host closed the gate: it is ending this trial (Ctrl-C, a
    // failure), and kills it next; nothing more may run.
    if (n != 1) finish(0);
    if (go == 'c') {
      char bytes[sizeof(double)];
      size_t got = 0;
      while (got < sizeof bytes) {
        const ssize_t r = ::read(fd_, bytes + got, sizeof bytes - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) finish(0);
        got += static_cast<size_t>(r);
      }
      std::memcpy(&cap_s_, bytes, sizeof cap_s_);
    }
  }
  // The latest cap the host sent with a turn; 0: none yet.
  double cap_s() const { return cap_s_; }

 private:
  int fd_;
  EventWriter& out_;
  int64_t turn_ = 0;
  double cap_s_ = 0;
};

// The measurement protocol of one trial: setup, warmup, measured blocks with
// evaluations between them, the final statistics. Any failing call ends the
// process with a result event naming the phase (see fail()).
class Trial {
 public:
  Trial(const LoadedPlugin& plugin, const WorkerArgs& args, const MeasureSpec& m, EventWriter& out,
        Gate& gate, Ranks* ranks)
      : t_(plugin.table),
        manifest_(plugin.manifest),
        args_(args),
        m_(m),
        out_(out),
        gate_(gate),
        ranks_(ranks) {}

  [[noreturn]] void run() {
    setup();
    warmup();
    measure();
    const char* stats = nullptr;
    check(t_->stats(inst_, &stats), "stats", steps_done_);
    Json all = parse_or_raw(stats);
    if (ranks_ != nullptr) add_rank_stats(all);
    out_.emit({{"event", event::stats}, {"stats", all}});
    await_claim();
    out_.emit({{"event", event::result}, {"status", "ok"}, {"steps", steps_done_}});
    // No destroy and no dlclose: see loader.hpp. Exiting is the unload.
    finish(0);
  }

 private:
  // Ends the trial with its result: a failed plugin call's status and
  // message, or the harness's own verdict.
  [[noreturn]] void end_trial(const std::string& status, const char* phase, int64_t at_step,
                              const std::string& message) {
    await_claim();
    out_.emit({{"event", event::result},
               {"status", status},
               {"phase", phase},
               {"at_step", at_step},
               {"message", message}});
    finish(0);
  }

  // The trial's one result is this thread's to emit, unless a data-parallel
  // trial's watch is already reporting a rank's failure and ending the
  // process: then this thread waits for that.
  void await_claim() {
    if (claim_trial_end()) return;
    for (;;) ::pause();
  }

  void check(gpusweep_status st, const char* phase, int64_t at_step) {
    if (st == GPUSWEEP_STATUS_OK) return;
    if (ranks_ == nullptr) end_trial(status_name(st), phase, at_step, t_->error_message(inst_));
    // A rank that died makes the collectives fail on the others: it is the
    // cause to report, when there is one, and the watch reports it.
    ranks_->await_failure(1.0);
    const std::string unwell = ranks_->unwell();
    end_trial(status_name(st), phase, at_step,
              "rank 0 of " + std::to_string(ranks_->world_size()) + ": " +
                  t_->error_message(inst_) + (unwell.empty() ? "" : " (" + unwell + ")"));
  }
  // n steps here (`phase` names a failure), after the other ranks of a
  // data-parallel trial were told to run as many; samples summed.
  void run_steps(int64_t n, const char* phase, double* samples, double* secondary) {
    if (ranks_ != nullptr) {
      ranks_->set_phase(phase, steps_done_);
      ranks_->send_steps(n, steps_done_);
    }
    gpusweep_step_result r{};
    for (int64_t s = 0; s < n; ++s) {
      r.struct_size = sizeof r;
      r.samples = 0;
      r.secondary_samples = 0;
      check(t_->step(inst_, &r), phase, steps_done_ + s);
      *samples += r.samples;
      *secondary += r.secondary_samples;
    }
  }
  // After this rank synchronised at the end of run_steps: the seconds of
  // the slowest rank (own: this rank's), the others' samples added.
  double lockstep(double own, double* samples, double* secondary) {
    if (ranks_ == nullptr) return own;
    std::vector<double> seconds = {own};
    ranks_->collect(seconds, samples, secondary);
    rank_seconds_ = seconds;
    return *std::max_element(seconds.begin(), seconds.end());
  }
  // Per rank: in how many measured blocks it was the slowest, and the
  // others' memory and input wait (each rank's own figures; the trial's are
  // rank 0's). The ranks wait for each other in every all-reduce: a rank's
  // exposed all-reduce in a step is communication plus its wait for slower
  // ranks, so the least of the ranks' figures step by step is the
  // communication (dp_comm_exposed_measured_s) and the rest the imbalance
  // (dp_imbalance_s: each step's mean over the ranks less that least;
  // per_step_comm). A plugin that reports no per-step series gets the least
  // of the ranks' totals since warmup, which keeps the waits of a straggler
  // that changes from step to step (dp_comm_from_totals 1).
  void add_rank_stats(Json& stats) {
    ranks_->set_phase("stats", steps_done_);
    std::vector<Json> others = ranks_->stats();
    if (!stats.is_object()) stats = Json::object();
    for (size_t r = 0; r < slowest_.size(); ++r) {
      stats["dp_rank" + std::to_string(r) + "_slowest_blocks"] = slowest_[r];
    }
    std::vector<double> measured = {exposed_of(stats)};
    for (const Json& other : others) measured.push_back(exposed_of(other));
    for (size_t r = 0; r < measured.size(); ++r) {
      measured[r] -= r < comm_before_.size() ? comm_before_[r] : 0.0;
      stats["dp_rank" + std::to_string(r) + "_comm_exposed_s"] = measured[r];
    }
    std::vector<std::vector<double>> series = {take_series(stats)};
    for (Json& other : others) series.push_back(take_series(other));
    if (const auto per_step = per_step_comm(series)) {
      stats["dp_comm_exposed_measured_s"] = per_step->comm_s;
      stats["dp_imbalance_s"] = per_step->imbalance_s;
      stats["dp_comm_steps"] = per_step->steps;
    } else {
      const auto [low, high] = std::minmax_element(measured.begin(), measured.end());
      stats["dp_comm_exposed_measured_s"] = *low;
      stats["dp_imbalance_s"] = *high - *low;
      stats["dp_comm_from_totals"] = 1;
    }
    for (size_t i = 0; i < others.size(); ++i) {
      const std::string prefix = "dp_rank" + std::to_string(i + 1) + "_";
      for (const std::string key : {"peak_memory_bytes", "input_wait_s"}) {
        if (others[i].contains(key)) stats[prefix + key] = others[i][key];
      }
    }
  }

  // Fails the trial when its median block is shorter than the protocol's
  // minimum (MeasureSpec::min_block_s), naming the steps_per_block that
  // would reach it.
  void check_block_length(const std::vector<double>& seconds, bool device_timed) {
    const double automatic = device_timed    ? kMinBlockDeviceS
                             : gate_.gated() ? kMinBlockInterleavedCpuS
                                             : kMinBlockCpuS;
    const double minimum = m_.min_block_s >= 0 ? m_.min_block_s : automatic;
    if (minimum <= 0 || seconds.empty()) return;
    const double median = quantile(seconds, 0.5);
    if (median >= minimum) return;
    // A short block is mostly fixed cost, so its time over its steps
    // overstates a step: time runs of doubling length until one reaches the
    // minimum (the trial fails anyway, so these steps cost it nothing), and
    // advise twice that, so that a noisy block stays above it.
    double per_step = std::max(median, 1e-9) / static_cast<double>(m_.steps_per_block);
    const auto run_of = [&](int64_t n) {
      double samples = 0, secondary = 0;
      const auto t0 = Clock::now();
      run_steps(n, "measure", &samples, &secondary);
      check(t_->synchronize(inst_), "measure", steps_done_);
      steps_done_ += n;
      return lockstep(seconds_since(t0), &samples, &secondary);
    };
    for (int64_t n = 2 * m_.steps_per_block; n <= (int64_t{1} << 26); n *= 2) {
      const double took = run_of(n);
      per_step = took / static_cast<double>(n);
      if (took < minimum) continue;
      // A run the scheduler interrupted overstates a step, and advice from it
      // fell short (a busy machine's test saw it): the fastest of three.
      for (int k = 0; k < 2; ++k) per_step = std::min(per_step, run_of(n) / static_cast<double>(n));
      break;
    }
    const auto steps = static_cast<int64_t>(std::ceil(2 * minimum / per_step));
    char fix[160];
    if (m_.block_s > 0) {
      std::snprintf(fix, sizeof fix, "Set measure.block_s to %.3g or more", 2 * minimum);
    } else {
      std::snprintf(fix, sizeof fix, "Set measure.steps_per_block to %lld or more",
                    static_cast<long long>(steps));
    }
    char text[512];
    std::snprintf(text, sizeof text,
                  "blocks too short to measure: the median block took %.3g us, under "
                  "measure.min_block_s = %.3g us%s; the clock reads and the block's sync would "
                  "be a visible part of every sample. %s (or min_block_s to 0 to accept such "
                  "blocks)",
                  median * 1e6, minimum * 1e6,
                  m_.min_block_s >= 0 ? ""
                  : device_timed      ? " (auto, on a GPU)"
                  : gate_.gated()     ? " (auto, for blocks taking turns: each starts cold)"
                                      : " (auto)",
                  fix);
    end_trial("failed", "measure", steps_done_, text);
  }

  void setup() {
    out_.emit({{"event", event::phase}, {"phase", "setup"}});
    const auto t0 = Clock::now();
    // The other ranks create theirs meanwhile: the rendezvous is in create().
    if (ranks_ != nullptr) ranks_->start_watch(out_);
    gpusweep_status st = t_->create(args_.config_json.c_str(), &inst_);
    const double setup_s = seconds_since(t0);
    if (st == GPUSWEEP_STATUS_OK && inst_ == nullptr) st = GPUSWEEP_STATUS_ERROR;
    check(st, "setup", 0);
    if (ranks_ != nullptr) ranks_->await_ready();
    // Settings such as threads apply in create(): report the runtime as used,
    // with the GPUs this process was given.
    Json runtime = parse_or_raw(t_->runtime());
    if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
        visible != nullptr && runtime.is_object()) {
      runtime["cuda_visible_devices"] = visible;
    }
    out_.emit({{"event", event::runtime}, {"runtime", runtime}, {"setup_s", setup_s}});
    if (args_.probe_matmul_s > 0) {
      // With the trial's threads (applied by create): the peak this trial could reach.
      out_.emit({{"event", event::probe}, {"matmul", probe_matmul(t_, args_.probe_matmul_s)}});
    }
  }

  // steps of warmup, synchronised; their seconds.
  double warm(int64_t steps) {
    double samples = 0, secondary = 0;
    const auto t0 = Clock::now();
    run_steps(steps, "warmup", &samples, &secondary);
    steps_done_ += steps;
    check(t_->synchronize(inst_), "warmup", steps_done_);
    return lockstep(seconds_since(t0), &samples, &secondary);
  }

  // The steps a block of about `seconds` takes, for measure.block_s: runs of
  // doubling length (each synchronised, as a block is) until one lasts a
  // tenth of it, then the faster of that run and one more as the step time
  // (a run the scheduler interrupted overstates a step). These are warmup
  // steps: training, unmeasured.
  int64_t steps_for(double seconds) {
    int64_t n = 1;
    double took = warm(n);
    if (took >= seconds) return 1;  // one step is a block already: no second look
    while (took < 0.1 * seconds && n < (int64_t{1} << 24)) {
      n *= 2;
      took = warm(n);
    }
    const double per_step = std::min(took, warm(n)) / static_cast<double>(n);
    return std::max<int64_t>(1, std::llround(seconds / std::max(per_step, 1e-9)));
  }

  void warmup() {
    out_.emit({{"event", event::phase}, {"phase", "warmup"}, {"steps", m_.warmup_steps}});
    const auto t0 = Clock::now();
    Json done = {{"event", event::warmup_done}};
    // The first step on its own: the transient the rest of warmup hides.
    if (m_.warmup_steps > 0) done["first_step_s"] = warm(1);
    warm(std::max<int64_t>(0, m_.warmup_steps - 1));
    if (m_.block_s > 0) {
      m_.steps_per_block = steps_for(m_.block_s);
      done["block_steps"] = m_.steps_per_block;
    }
    if (m_.min_warmup_s > 0) {
      // Windows of a quarter block until warmup has lasted long enough.
      const int64_t steps = std::max<int64_t>(1, (m_.steps_per_block + 3) / 4);
      while (seconds_since(t0) < m_.min_warmup_s) warm(steps);
    }
    if (m_.stable_warmup) {
      // Windows of a quarter block until the last three agree.
      const int64_t steps = std::max<int64_t>(1, (m_.steps_per_block + 3) / 4);
      std::vector<double> windows;
      bool stable = false;
      while (!stable && static_cast<int64_t>(windows.size()) < kMaxWarmupWindows) {
        windows.push_back(warm(steps));
        if (windows.size() < 3) continue;
        const auto [lo, hi] = std::minmax_element(windows.end() - 3, windows.end());
        stable = *hi <= (1 + kStableWarmupTolerance) * *lo;
      }
      done["window_steps"] = steps;
      done["windows"] = windows;
      done["stable"] = stable;
    }
    warmup_s_ = seconds_since(t0);
    done["seconds"] = warmup_s_;
    out_.emit(done);
    {
      // The totals so far (input wait; diagnose's phase times), so that the
      // host counts the measured steps only.
      const char* stats = nullptr;
      check(t_->stats(inst_, &stats), "warmup", steps_done_);
      const Json snapshot = parse_or_raw(stats);
      out_.emit({{"event", event::stats_snapshot}, {"at_step", steps_done_}, {"stats", snapshot}});
      if (ranks_ != nullptr) {
        // Every rank's all-reduce wait so far, to count the measured one.
        comm_before_ = {exposed_of(snapshot)};
        ranks_->set_phase("warmup", steps_done_);
        for (const Json& other : ranks_->stats()) comm_before_.push_back(exposed_of(other));
      }
    }
  }

  static double exposed_of(const Json& stats) {
    return stats.is_object() ? stats.value("dp_comm_exposed_s", 0.0) : 0.0;
  }
  // A rank's exposed all-reduce per measured step (stats_series'
  // dp_comm_exposed_steps_s), taken out of its stats: the host needs the
  // combined figures, not the series.
  static std::vector<double> take_series(Json& stats) {
    std::vector<double> out;
    if (!stats.is_object()) return out;
    const auto it = stats.find("dp_comm_exposed_steps_s");
    if (it == stats.end()) return out;
    if (it->is_array()) {
      for (const auto& v : *it) out.push_back(v.is_number() ? v.get<double>() : 0.0);
    }
    stats.erase(it);
    return out;
  }

  // Evaluations get their own phase (a hang there is reported as such), and
  // measuring resumes after one between blocks. `extra` joins the event
  // (the training clock under measure.target); returns the metrics and sets
  // *seconds to the evaluation's time when asked.
  Json evaluate(const char* phase, const Json& extra = Json::object(), double* seconds = nullptr) {
    out_.emit({{"event", event::phase}, {"phase", phase}});
    const auto t0 = Clock::now();
    const char* metrics = nullptr;
    check(t_->evaluate(inst_, &metrics), phase, steps_done_);
    const double took = seconds_since(t0);
    Json e = {{"event", event::eval},
              {"at_step", steps_done_},
              {"seconds", took},
              {"metrics", parse_or_raw(metrics)}};
    for (const auto& [k, v] : extra.items()) e[k] = v;
    out_.emit(e);
    if (seconds != nullptr) *seconds = took;
    return e["metrics"];
  }

  // The plugin's measured window (GPUSWEEP_EXT_MEASURE_WINDOW), when it has
  // one: begins before measured steps, ends before an evaluation.
  void mark_window(bool begin) {
    if (window_ == nullptr) return;
    check(begin ? window_->begin(inst_) : window_->end(inst_), "measure", steps_done_);
    if (ranks_ != nullptr) ranks_->command({{"op", "window"}, {"begin", begin}});
  }

  // Between turns of an interleaved trial: its background work stops, so
  // that none of it runs in another trial's turn, and starts again after.
  void next_turn() {
    if (!gate_.gated()) return;
    if (turns_ != nullptr) check(turns_->pause(inst_), "measure", steps_done_);
    if (ranks_ != nullptr) ranks_->command({{"op", "pause"}});
    gate_.await_turn();
    if (turns_ != nullptr) check(turns_->resume(inst_), "measure", steps_done_);
    if (ranks_ != nullptr) ranks_->command({{"op", "resume"}});
  }

  // The block's device time by the plugin's device clock (CUDA events), or
  // nothing on a device without one: then it is not asked again.
  void begin_device_clock() {
    if (clock_ != nullptr) check(clock_->begin(inst_), "measure", steps_done_);
  }
  std::optional<double> end_device_clock() {
    if (clock_ == nullptr) return std::nullopt;
    double seconds = 0;
    const gpusweep_status st = clock_->end(inst_, &seconds);
    if (st == GPUSWEEP_STATUS_SKIPPED) {
      clock_ = nullptr;
      return std::nullopt;
    }
    check(st, "measure", steps_done_);
    return seconds;
  }

  // One measured block, in its turn (taken here unless turn_taken):
  // steps_per_block steps timed with the device synced at its end; emitted,
  // and its time kept in block_seconds_. Its seconds, and its samples in
  // *samples.
  double run_block(int64_t b, double* samples, bool turn_taken = false) {
    if (!turn_taken) next_turn();
    double secondary = 0;
    *samples = 0;
    const auto t0 = Clock::now();
    begin_device_clock();
    run_steps(m_.steps_per_block, "measure", samples, &secondary);
    const std::optional<double> device_seconds = end_device_clock();
    check(t_->synchronize(inst_), "measure", steps_done_);
    const double seconds = lockstep(seconds_since(t0), samples, &secondary);
    steps_done_ += m_.steps_per_block;
    Json block = {{"event", event::block},       {"idx", b},
                  {"steps", m_.steps_per_block}, {"seconds", seconds},
                  {"samples", *samples},         {"secondary_samples", secondary}};
    if (device_seconds) block["device_seconds"] = *device_seconds;
    if (ranks_ != nullptr) {
      block["rank_seconds"] = rank_seconds_;
      const auto slowest = std::max_element(rank_seconds_.begin(), rank_seconds_.end());
      slowest_.resize(rank_seconds_.size());
      ++slowest_[static_cast<size_t>(slowest - rank_seconds_.begin())];
    }
    out_.emit(block);
    block_seconds_.push_back(seconds);
    device_timed_ = device_timed_ || device_seconds.has_value();
    return seconds;
  }

  void measure() {
    if (m_.target) {
      measure_to_target(*m_.target);
      return;
    }
    out_.emit({{"event", event::phase}, {"phase", "measure"}, {"blocks", m_.blocks}});
    mark_window(true);
    bool evaluated_last = false;
    for (int64_t b = 0; b < m_.blocks; ++b) {
      double samples = 0;
      run_block(b, &samples);
      evaluated_last = false;
      if (m_.eval_every_blocks > 0 && (b + 1) % m_.eval_every_blocks == 0) {
        mark_window(false);
        evaluate("evaluate");
        evaluated_last = true;
        if (b + 1 < m_.blocks) {
          out_.emit({{"event", event::phase}, {"phase", "measure"}});
          mark_window(true);
        }
      }
    }
    check_block_length(block_seconds_, device_timed_);
    if (!evaluated_last) {
      mark_window(false);
      evaluate("evaluate");
    }
  }

  // The target's metric and direction: as the sweep names them, else the
  // manifest's quality metric and the direction it (or its "metrics" entry)
  // gives.
  std::pair<std::string, bool> target_metric(const TargetSpec& target) const {
    const Json manifest = parse_or_raw(manifest_.c_str());
    const Json quality = manifest.is_object() ? manifest.value("quality", Json::object()) : Json();
    std::string metric = target.metric;
    if (metric.empty() && quality.is_object()) metric = quality.value("metric", "");
    std::optional<bool> higher = target.higher_is_better;
    if (!higher && quality.is_object() && quality.value("metric", "") == metric) {
      higher = quality.value("higher_is_better", true);
    }
    if (!higher && manifest.is_object()) {
      for (const auto& mj : manifest.value("metrics", Json::array())) {
        if (mj.is_object() && mj.value("name", "") == metric) {
          higher = mj.value("higher_is_better", true);
        }
      }
    }
    return {metric, higher.value_or(true)};
  }

  // Time to quality (measure.target): an evaluation at the start (the
  // curve's first point, after the warmup, whose time and steps count),
  // then blocks, evaluated every eval_every_blocks
  // (default 1; without it set, the cadence halves whenever an evaluation
  // took more than a tenth of the training time since the last one, so that
  // evaluating stays a small share), until an evaluation reaches the target
  // or the training budget ends: max_s of blocks' time, max_steps of
  // measured steps, or the adaptive cap (--target-cap at the start, or one
  // a later turn brings: the host's slack times the best time to target of
  // the trial's round). The time to target is interpolated between the last
  // evaluation short of it and the first at or past it, on the training
  // clock (the blocks' time; evaluations timed apart). A trial that runs out
  // of budget is censored, after one more evaluation: its time is the
  // training time it had, a lower bound; `capped` says the cap ended it.
  // Long by design: the loop of blocks and evaluations reads top to bottom,
  // with the few closures it shares.
  void measure_to_target(const TargetSpec& target) {
    const auto resolved = target_metric(target);
    const std::string metric = resolved.first;
    const bool higher = resolved.second;
    const bool fixed_cadence = m_.eval_every_blocks > 0;
    int64_t every = std::max<int64_t>(1, m_.eval_every_blocks);
    // Warmup steps train the model too: their time and steps are on the
    // clock, and the first evaluation follows them.
    double train_s = warmup_s_, samples = 0, eval_s = 0, since_eval_s = 0;
    int64_t measured_steps = steps_done_, evaluations = 0, blocks_since = 0;
    // A metric that went NaN (a diverged run: JSON carries it as null) never
    // reaches the target: NaN here, and the trial ends censored.
    auto value_of = [&](const Json& metrics) {
      auto it = metrics.is_object() ? metrics.find(metric) : metrics.end();
      if (it != metrics.end() && it->is_null()) return std::nan("");
      if (it == metrics.end() || !it->is_number()) {
        end_trial("failed", "evaluate", steps_done_,
                  "measure.target: evaluate() did not report '" + metric +
                      "' as a number (it reported " + metrics.dump() + ")");
      }
      return it->get<double>();
    };
    auto evaluate_now = [&] {
      double took = 0;
      const Json metrics =
          evaluate("evaluate", {{"train_s", train_s}, {"samples", samples}}, &took);
      eval_s += took;
      ++evaluations;
      return value_of(metrics);
    };
    auto reached = [&](double v) { return higher ? v >= target.value : v <= target.value; };
    // The adaptive cap now: the lower of the one given at the start and the
    // latest a turn brought.
    auto cap_s = [&] {
      const double given = args_.target_cap_s, sent = gate_.cap_s();
      return given > 0 && sent > 0 ? std::min(given, sent) : std::max(given, sent);
    };
    auto finish_target = [&](bool ok, double time_s, bool diverged = false, bool capped = false) {
      Json e = {{"event", event::target},     {"reached", ok},
                {"diverged", diverged},       {"time_s", time_s},
                {"at_step", measured_steps},  {"train_s", train_s},
                {"evaluations", evaluations}, {"eval_s", eval_s},
                {"metric", metric},           {"value", target.value}};
      if (capped) {
        e["capped"] = true;
        e["cap_s"] = cap_s();  // the cap it stopped at
      }
      out_.emit(e);
    };
    auto over_cap = [&] { return cap_s() > 0 && train_s >= cap_s(); };
    double prev_v = evaluate_now();
    double prev_t = train_s;
    // An evaluation: reached (interpolated from the last one short of it),
    // or, when the budget is spent or the metric diverged, censored. True
    // when the trial's target is settled either way.
    auto judge = [&](bool budget_spent, bool capped) {
      const double v = evaluate_now();
      if (reached(v)) {
        // Linear between the last evaluation short of the target and this one.
        const double f = v == prev_v ? 1 : (target.value - prev_v) / (v - prev_v);
        finish_target(true, prev_t + std::clamp(f, 0.0, 1.0) * (train_s - prev_t));
        return true;
      }
      if (budget_spent || capped || std::isnan(v)) {
        finish_target(false, train_s, std::isnan(v), capped && !budget_spent);
        return true;
      }
      prev_v = v;
      prev_t = train_s;
      return false;
    };
    // Reached before training: time 0, after one block (the throughput's).
    const bool at_start = reached(prev_v);
    out_.emit({{"event", event::phase}, {"phase", "measure"}, {"target", target.to_json()}});
    mark_window(true);
    for (int64_t b = 0;; ++b) {
      next_turn();  // gated: the turn, and with it perhaps a cap
      if (!at_start && over_cap()) {
        // Capped while waiting for this turn: no block past the cap.
        mark_window(false);
        if (blocks_since == 0) {
          finish_target(false, train_s, false, true);
        } else {
          judge(false, true);
        }
        break;
      }
      double block_samples = 0;
      const double seconds = run_block(b, &block_samples, true);
      train_s += seconds;
      since_eval_s += seconds;
      samples += block_samples;
      measured_steps += m_.steps_per_block;
      if (at_start) {
        mark_window(false);
        finish_target(true, prev_t);
        break;
      }
      const bool spent = (target.max_s > 0 && train_s >= target.max_s) ||
                         (target.max_steps > 0 && measured_steps >= target.max_steps);
      const bool capped = over_cap();
      if (++blocks_since < every && !spent && !capped) continue;
      mark_window(false);
      const double before_s = eval_s;
      if (judge(spent, capped)) break;
      if (!fixed_cadence && eval_s - before_s > 0.1 * since_eval_s) every *= 2;
      blocks_since = 0;
      since_eval_s = 0;
      out_.emit({{"event", event::phase}, {"phase", "measure"}});
      mark_window(true);
    }
    check_block_length(block_seconds_, device_timed_);
  }

  const gpusweep_plugin* t_;
  std::string manifest_;  // the trial's workload's (workload_manifest)
  const WorkerArgs& args_;
  MeasureSpec m_;
  EventWriter& out_;
  // Looked up once per trial, not at every window edge.
  const gpusweep_ext_measure_window* window_ =
      find_extension<gpusweep_ext_measure_window>(t_, GPUSWEEP_EXT_MEASURE_WINDOW);
  const gpusweep_ext_turns* turns_ = find_extension<gpusweep_ext_turns>(t_, GPUSWEEP_EXT_TURNS);
  const gpusweep_ext_device_timer* clock_ =
      find_extension<gpusweep_ext_device_timer>(t_, GPUSWEEP_EXT_DEVICE_TIMER);
  Gate& gate_;
  Ranks* ranks_;                      // world_size > 1: the other ranks; else nullptr
  std::vector<int64_t> slowest_;      // per rank: the measured blocks it was slowest in
  std::vector<double> rank_seconds_;  // the last run's seconds, per rank
  std::vector<double> comm_before_;   // per rank: exposed all-reduce seconds at warmup's end
  gpusweep_instance* inst_ = nullptr;
  int64_t steps_done_ = 0;
  double warmup_s_ = 0;                // the warmup's time (on a target's clock)
  std::vector<double> block_seconds_;  // every measured block's time
  bool device_timed_ = false;          // some block was timed by the device clock
};

// A trial in this process: with the plugin already loaded (a fork server's
// child) or loading it first.
int run_trial(const WorkerArgs& args, const LoadedPlugin* preloaded) {
  // The trial's GPU, before anything in this process starts CUDA (a fork
  // server loads plugins without starting it).
  if (args.visible_devices) ::setenv("CUDA_VISIBLE_DEVICES", args.visible_devices->c_str(), 1);
  std::signal(SIGPIPE, SIG_IGN);
  // Outlives every return path (all end in _exit): the heartbeat thread
  // writes to it until the process ends.
  EventWriter& out = *new EventWriter(protect_protocol_fd(args.proto_fd));
  std::future<void> first_beat = start_heartbeat(out);
  out.emit({{"event", event::hello}, {"pid", static_cast<long>(::getpid())}});
  Gate gate(args.mode == WorkerMode::trial ? args.gate_fd : -1, out);
  // The first turn: loading, setup and warmup.
  gate.await_turn();

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
    Json probe = {{"event", event::probe},
                  {"libraries", mapped_libraries(read_text("/proc/self/maps"))}};
    if (args.probe_matmul_s > 0) probe["matmul"] = probe_matmul(plugin.table, args.probe_matmul_s);
    out.emit(probe);
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
      out.emit({{"event", event::result},
                {"status", "failed"},
                {"phase", "setup"},
                {"message", e.what()}});
      finish(0);
    }
  }
  if (args.max_memory_bytes > 0) cap_trial_memory(plugin.table, args, first_beat, out);
  MeasureSpec m;
  try {
    m = MeasureSpec::from_json(Json::parse(args.measure_json), "--measure");
  } catch (const std::exception& e) {
    out.emit({{"event", event::result},
              {"status", "failed"},
              {"phase", "args"},
              {"message", std::string("bad --measure: ") + e.what()}});
    finish(2);
  }
  Trial(plugin, args, m, out, gate, ranks).run();
}

// Threads of this process (/proc/self/task), or -1 if unknown.
int thread_count() {
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    (void)e;
    ++n;
  }
  return ec ? -1 : n;
}

// Whether loading the plugin initialised CUDA's driver (audit L4): a static
// initialiser that asks for the device count runs cuInit without necessarily
// starting a thread, and a process forked after that cannot use CUDA. Asked
// of libcuda itself, only when loading brought it in (RTLD_NOLOAD: never
// loaded here): cuDeviceGetCount answers CUDA_ERROR_NOT_INITIALIZED (3)
// until cuInit has run. (A loaded library answers to its soname, so the
// tests' fake libcuda.so.1, loaded by path, is found the same way.)
bool cuda_initialised() {
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (driver == nullptr) return false;  // not loaded: nothing initialised it
  using GetCount = int (*)(int*);
  auto get_count = reinterpret_cast<GetCount>(::dlsym(driver, "cuDeviceGetCount"));
  int count = 0;
  const int status = get_count != nullptr ? get_count(&count) : 3;
  ::dlclose(driver);
  return status != 3;
}

// The fork server's grandchild: becomes a trial worker on the descriptors it
// was sent, once the host has adopted it.
[[noreturn]] void become_trial(const std::vector<std::string>& request, const std::vector<int>& fds,
                               int control_fd, pid_t host, pid_t server,
                               const LoadedPlugin& plugin) {
  ::setpgid(0, 0);  // its own group, killed as one by the host
  ::close(control_fd);
  // The intermediate parent exits at once: wait to be the host's (a
  // subreaper) before asking to die with the host, as a spawned worker does.
  for (int i = 0; ::getppid() != host; ++i) {
    if (::getppid() == 1 || i > 20000) _exit(71);  // not adopted: nobody would wait for it
    ::usleep(50);
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != host) _exit(71);
  // Says where the process came from, to the trial's plugin and to tests.
  ::setenv("GPUSWEEP_FORK_SERVER_PID", std::to_string(server).c_str(), 1);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : kChildDefaultSignals) std::signal(sig, SIG_DFL);
  const int null = ::open("/dev/null", O_RDONLY);
  if (null >= 0 && null != 0) {
    ::dup2(null, 0);
    ::close(null);
  }
  // Out of the way of the targets first, whatever numbers they came in on.
  std::vector<int> moved;
  for (int f : fds) {
    moved.push_back(::fcntl(f, F_DUPFD, 20));
    ::close(f);
  }
  ::dup2(moved[1], 1);
  ::dup2(moved[2], 2);
  ::dup2(moved[0], 3);
  if (moved.size() > 3) ::dup2(moved[3], kGateFd);
  for (int f : moved) ::close(f);
  std::optional<WorkerArgs> args;
  try {
    args = parse_worker_args(request);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fork server: bad request: %s\n", e.what());
  }
  if (!args) finish(2);
  args->proto_fd = 3;
  run_trial(*args, &plugin);
  finish(0);
}

}  // namespace

int run_worker(const WorkerArgs& args) { return run_trial(args, nullptr); }

int run_fork_server(const WorkerArgs& args) {
  const int fd = args.serve_fd;
  auto refuse = [fd](const std::string& why) {
    send_message(fd, Json{{"ready", false}, {"error", why}}.dump());
    finish(0);
  };
  // Loaded as a worker would, nothing run but what loading runs (the
  // manifest): no thread pool exists yet for fork to break.
  LoadedPlugin plugin;
  try {
    plugin = load_plugin(args.plugin_path);
  } catch (const std::exception& e) {
    refuse(e.what());
  }
  if (const int threads = thread_count(); threads != 1) {
    refuse("loading the plugin left " + std::to_string(threads) +
           " threads in the process; forking it could deadlock a trial");
  }
  if (cuda_initialised()) {
    refuse(
        "loading the plugin initialised CUDA (its driver's cuInit ran); a trial forked "
        "from it could not use the GPU");
  }
  const pid_t host = ::getppid();
  const pid_t server = ::getpid();
  if (!send_message(fd, Json{{"ready", true}, {"pid", static_cast<long>(::getpid())}}.dump())) {
    finish(0);
  }
  for (;;) {
    std::string text;
    std::vector<int> fds;
    if (!recv_message(fd, text, fds)) finish(0);  // the host closed its end
    const Json request = Json::parse(text, nullptr, false);
    std::vector<std::string> worker_args;
    if ((fds.size() != 3 && fds.size() != 4) || !request.is_array()) {
      for (int f : fds) ::close(f);
      send_message(fd, Json{{"error", "malformed request"}}.dump());
      continue;
    }
    for (const auto& a : request)
      worker_args.push_back(a.is_string() ? a.get<std::string>() : a.dump());
    const pid_t middle = ::fork();
    if (middle == 0) {
      const pid_t trial = ::fork();
      if (trial == 0) become_trial(worker_args, fds, fd, host, server, plugin);
      send_message(fd, trial > 0
                           ? Json{{"pid", static_cast<long>(trial)}}.dump()
                           : Json{{"error", std::string("fork: ") + std::strerror(errno)}}.dump());
      _exit(0);
    }
    for (int f : fds) ::close(f);
    if (middle < 0) {
      send_message(fd, Json{{"error", std::string("fork: ") + std::strerror(errno)}}.dump());
      continue;
    }
    while (::waitpid(middle, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

}  // namespace gpusweep::host
