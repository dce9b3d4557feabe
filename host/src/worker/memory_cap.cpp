// measure.max_memory inside the worker: the device allocator's cap, or the
// process's address space (RLIMIT_AS); see cap_trial_memory in worker.hpp.
#include "worker/worker.hpp"

#include "protocol/event_payloads.hpp"
#include "protocol/event_writer.hpp"
#include "protocol/events.hpp"
#include "worker/loader.hpp"

#include <gpusweep/plugin.h>

#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <cstdio>
#include <future>
#include <string>

namespace gpusweep::host {

namespace {

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

// RLIMIT_AS = the address space now + the cap. The first heartbeat is awaited
// first, so that the heap arena its message creates counts before the cap
// rather than against the trial's budget.
void cap_memory(double cap_bytes, std::future<void>& first_beat, EventWriter& out) {
  first_beat.wait();
  const double baseline = address_space_bytes();
  rlimit cap{};
  cap.rlim_cur = cap.rlim_max = static_cast<rlim_t>(baseline + cap_bytes);
  if (baseline <= 0 || ::setrlimit(RLIMIT_AS, &cap) != 0) {
    out.emit(event::Result::failed(Phase::args, "cannot cap the worker's memory (RLIMIT_AS)"));
    finish(0);
  }
  event::MemoryCap capped;
  capped.kind = "address_space";
  capped.cap_bytes = cap_bytes;
  capped.baseline_bytes = baseline;
  capped.limit_bytes = baseline + cap_bytes;
  out.emit(capped.to_json());
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
    out.emit(event::Result::failed(Phase::args, "cannot cap the device's memory: " + text));
    finish(0);
  }
  // The plugin's report (device, limit_bytes, device_bytes, fraction) as it gave it.
  event::MemoryCap capped;
  capped.extra = parse_or_raw(text.c_str());
  capped.kind = "device";
  capped.cap_bytes = args.max_memory_bytes;
  out.emit(capped.to_json());
}

}  // namespace gpusweep::host
