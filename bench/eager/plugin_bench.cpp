// Runs a gpusweep plugin's step() in-process, outside gpusweep, for two
// diagnostics the host does not record:
//   * measure (default): the gpusweep protocol (warmup, then blocks of steps)
//     timing every block by wall clock AND by process CPU time, so that on a
//     shared machine the CPU-time throughput can cross-check gpusweep's
//     wall-clock one (only meaningful with threads=1: idle OpenMP workers
//     spin and count as CPU time). Prints one JSON line, like the eager
//     scripts (which report the same two numbers).
//   * --profile N: N steps under LibTorch's legacy autograd profiler, the
//     one `torch.autograd.profiler.profile(use_kineto=False)` drives (the
//     eager scripts' --profile N), aggregated the same way: per op, calls,
//     self and total CPU ms per step. The profiler adds a few us per op.
//
// Build (outside the repo's build tree; compare.sh --cpu does this itself):
//   g++ -std=c++17 -O2 bench/eager/plugin_bench.cpp -o /tmp/plugin_bench \
//       -Isdk/include -I/usr/include/torch/csrc/api/include -ltorch_cpu -lc10 -ldl
// Run (config: JSON overrides on top of the manifest's defaults, as a sweep's base):
//   /tmp/plugin_bench build/plugins/gpusweep_marl.so '{"device":"cpu","threads":1}' \
//       [--warmup W] [--steps S] [--blocks B] [--profile N] [--top K]
#include <gpusweep/plugin.h>

#include <torch/csrc/autograd/profiler_legacy.h>
#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace prof = torch::autograd::profiler;

namespace {

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s PLUGIN.so CONFIG_JSON [--warmup W] [--steps S] [--blocks B] "
                 "[--profile N] [--top K]\n",
                 argv[0]);
    return 2;
  }
  int warmup = 2, steps = 3, blocks = 5, profile = 0, top = 40;
  for (int i = 3; i + 1 < argc; i += 2) {
    const int v = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--warmup"))
      warmup = v;
    else if (!std::strcmp(argv[i], "--steps"))
      steps = v;
    else if (!std::strcmp(argv[i], "--blocks"))
      blocks = v;
    else if (!std::strcmp(argv[i], "--profile"))
      profile = v;
    else if (!std::strcmp(argv[i], "--top"))
      top = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  auto entry = reinterpret_cast<gpusweep_plugin_entry_fn>(dlsym(lib, GPUSWEEP_ENTRY_SYMBOL));
  const gpusweep_plugin* p = entry();
  // The host fills every setting the sweep leaves out with the manifest's
  // default; do the same, then apply the given overrides.
  const nlohmann::json manifest = nlohmann::json::parse(p->manifest());
  nlohmann::json config = nlohmann::json::object();
  for (const auto& param : manifest.at("params")) {
    config[param.at("name").get<std::string>()] = param.at("default");
  }
  config.update(nlohmann::json::parse(argv[2]));
  const std::string config_text = config.dump();
  gpusweep_instance* inst = nullptr;
  const double setup_t0 = wall_seconds();
  if (p->create(config_text.c_str(), &inst) != GPUSWEEP_STATUS_OK) {
    std::fprintf(stderr, "create: %s\n", p->error_message(nullptr));
    return 1;
  }
  const double setup_s = wall_seconds() - setup_t0;
  double samples = 0;
  auto step = [&] {
    gpusweep_step_result r{};
    r.struct_size = sizeof r;
    if (p->step(inst, &r) != GPUSWEEP_STATUS_OK) {
      std::fprintf(stderr, "step: %s\n", p->error_message(inst));
      std::exit(1);
    }
    samples = r.samples;
  };
  for (int i = 0; i < warmup; ++i) step();

  if (profile > 0) {
    double t0 = wall_seconds();
    for (int i = 0; i < profile; ++i) step();
    const double plain_s = (wall_seconds() - t0) / profile;
    prof::enableProfilerLegacy(torch::profiler::impl::ProfilerConfig(
        torch::profiler::impl::ProfilerState::CPU, /*report_input_shapes=*/false,
        /*profile_memory=*/false));
    t0 = wall_seconds();
    for (int i = 0; i < profile; ++i) step();
    const double profiled_s = (wall_seconds() - t0) / profile;
    const prof::thread_event_lists lists = prof::disableProfilerLegacy();
    struct Agg {
      double self_us = 0, total_us = 0;
      long calls = 0;
    };
    std::map<std::string, Agg> agg;
    for (const auto& events : lists) {
      struct Open {
        const prof::LegacyEvent* ev;
        double child_us;
      };
      std::vector<Open> stack;
      for (const auto& ev : events) {
        if (ev.kind() == prof::EventKind::PushRange) {
          stack.push_back({&ev, 0});
        } else if (ev.kind() == prof::EventKind::PopRange && !stack.empty()) {
          const Open o = stack.back();
          stack.pop_back();
          const double us = o.ev->cpuElapsedUs(ev);
          Agg& a = agg[o.ev->name()];
          a.total_us += us;
          a.self_us += us - o.child_us;
          a.calls += 1;
          if (!stack.empty()) stack.back().child_us += us;
        }
      }
    }
    std::vector<std::pair<std::string, Agg>> rows(agg.begin(), agg.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.self_us > b.second.self_us; });
    long calls = 0;
    for (const auto& row : rows) calls += row.second.calls;
    std::printf("step: %.2f ms unprofiled, %.2f ms profiled; %.0f ops/step; samples/step %.0f\n",
                plain_s * 1e3, profiled_s * 1e3, static_cast<double>(calls) / profile, samples);
    std::printf("%-48s %8s %12s %12s\n", "op", "calls", "self ms", "total ms");
    for (int i = 0; i < top && i < static_cast<int>(rows.size()); ++i) {
      const auto& [name, a] = rows[i];
      std::printf("%-48s %8.1f %12.3f %12.3f\n", name.substr(0, 48).c_str(),
                  static_cast<double>(a.calls) / profile, a.self_us / 1e3 / profile,
                  a.total_us / 1e3 / profile);
    }
  } else {
    std::vector<double> wall, cpu;
    for (int b = 0; b < blocks; ++b) {
      double total = 0;
      const double w0 = wall_seconds(), c0 = cpu_seconds();
      for (int i = 0; i < steps; ++i) {
        step();
        total += samples;
      }
      p->synchronize(inst);
      wall.push_back(total / (wall_seconds() - w0));
      cpu.push_back(total / (cpu_seconds() - c0));
    }
    nlohmann::json out{{"workload", manifest.at("name")},
                       {"impl", "plugin-in-process"},
                       {"unit", manifest.at("unit")},
                       {"throughput_median", median(wall)},
                       {"throughput_cpu_median", median(cpu)},
                       {"blocks", wall},
                       {"blocks_cpu", cpu},
                       {"steps_per_block", steps},
                       {"warmup", warmup},
                       {"setup_s", setup_s}};
    std::printf("%s\n", out.dump().c_str());
  }
  p->destroy(inst);
  return 0;
}
