// GPU assignment for concurrent workers; see gpus.hpp.
#include "spec/gpus.hpp"

#include "spec/device.hpp"

#include "support/error.hpp"
#include "support/format.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

namespace gpusweep::host {

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// An entry CUDA takes: an index, or a GPU or MIG instance UUID (prefix).
bool device_entry(const std::string& e) {
  return all_digits(e) || e.rfind("GPU-", 0) == 0 || e.rfind("MIG-", 0) == 0;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

std::string describe(const std::vector<std::string>& visible) {
  if (visible.empty()) return "no GPU is visible";
  std::string out = std::to_string(visible.size()) + " GPU(s) visible:";
  for (size_t i = 0; i < visible.size(); ++i) {
    out += " " + std::to_string(i) + "=" + visible[i];
  }
  return out;
}

size_t position(const std::string& token, const std::string& list,
                const std::vector<std::string>& visible) {
  if (!all_digits(token) || token.size() > 6) {
    throw UsageError("--gpus '" + list + "': '" + token +
                     "' is not a GPU number; give positions among the visible GPUs, such as "
                     "--gpus 0,1 or --gpus 0-3, or --gpus all");
  }
  const size_t i = std::stoul(token);
  if (i >= visible.size()) {
    throw UsageError("--gpus '" + list + "': GPU " + token + " does not exist here (" +
                     describe(visible) + "); the numbers count the visible GPUs from 0");
  }
  return i;
}

// The config's device, as plan_interleave reads it.

}  // namespace

std::vector<std::string> visible_gpus(const char* cuda_visible_devices,
                                      const std::vector<std::string>& nvml_uuids) {
  std::vector<std::string> out;
  if (cuda_visible_devices != nullptr) {
    std::stringstream in(cuda_visible_devices);
    for (std::string e; std::getline(in, e, ',');) {
      e = trim(e);
      if (!device_entry(e)) break;
      out.push_back(e);
    }
    return out;
  }
  for (size_t i = 0; i < nvml_uuids.size(); ++i) {
    out.push_back(nvml_uuids[i].empty() ? std::to_string(i) : nvml_uuids[i]);
  }
  return out;
}

std::vector<std::string> select_gpus(const std::string& list,
                                     const std::vector<std::string>& visible) {
  if (trim(list) == "all") {
    if (visible.empty()) {
      throw UsageError(
          "--gpus all: no GPU is visible to gpusweep (neither "
          "CUDA_VISIBLE_DEVICES nor NVML names one)");
    }
    return visible;
  }
  std::vector<std::string> out;
  std::set<size_t> seen;
  std::stringstream in(list);
  for (std::string token; std::getline(in, token, ',');) {
    token = trim(token);
    size_t first = 0, last = 0;
    if (const auto dash = token.find('-'); dash != std::string::npos && dash > 0) {
      first = position(trim(token.substr(0, dash)), list, visible);
      last = position(trim(token.substr(dash + 1)), list, visible);
      if (last < first) {
        throw UsageError("--gpus '" + list + "': the range '" + token + "' runs backwards");
      }
    } else {
      first = last = position(token, list, visible);
    }
    for (size_t i = first; i <= last; ++i) {
      if (!seen.insert(i).second) {
        throw UsageError("--gpus '" + list + "': GPU " + std::to_string(i) +
                         " is named twice; each worker needs a GPU of its own");
      }
      out.push_back(visible[i]);
    }
  }
  if (out.empty()) throw UsageError("--gpus '" + list + "': names no GPU");
  return out;
}

int64_t world_size_of(const nlohmann::json& config) {
  const auto it = config.find("world_size");
  return it != config.end() && it->is_number_integer() ? std::max<int64_t>(1, it->get<int64_t>())
                                                       : 1;
}

int64_t gpus_for_trial(const nlohmann::json& config, size_t available) {
  const int64_t ranks = world_size_of(config);
  const auto backend = config.find("dp_backend");
  const bool gloo = backend != config.end() && backend->is_string() && *backend == "gloo";
  if (!gloo) return ranks;
  return std::max<int64_t>(1, std::min<int64_t>(ranks, static_cast<int64_t>(available)));
}

// Long by design: each refusal is one early exit with its reason and fix,
// in the order a user meets them.
GpuAssignment assign_gpus(const std::optional<std::string>& gpus_option,
                          const std::vector<std::string>& visible, int jobs, int window,
                          const std::vector<nlohmann::json>& configs) {
  GpuAssignment a;
  bool on_cuda = false;
  std::string numbered;  // a config's cuda:N with N > 0
  int64_t ranks = 1;     // the most ranks a trial on CUDA asks for
  int64_t needed = 1;    // the most GPUs one needs (Gloo's ranks may share)
  for (const auto& c : configs) {
    const std::string device = device_setting(c);
    const bool gpu = on_gpu(device, static_cast<unsigned>(visible.size()));
    on_cuda = on_cuda || gpu;
    if (gpu) ranks = std::max(ranks, world_size_of(c));
    if (gpu) needed = std::max(needed, gpus_for_trial(c, visible.size()));
    if (device.rfind("cuda:", 0) == 0 && device != "cuda:0") numbered = device;
  }
  if (!on_cuda) {
    if (gpus_option) {
      if (visible.empty()) select_gpus(*gpus_option, visible);  // says no GPU is visible
      a.note = "--gpus has nothing to do: every trial runs on the CPU";
    }
    return a;
  }
  // One trial of one rank at a time, on the GPU its config names.
  // (Gloo's ranks sharing one GPU count as one.)
  if (!gpus_option && jobs <= 1 && needed <= 1) return a;
  if (!gpus_option && visible.empty() && needed > 1) {
    throw UsageError("world_size " + std::to_string(needed) +
                     " on CUDA needs a GPU per rank, but gpusweep sees no list of GPUs to hand "
                     "out (NVML, libnvidia-ml.so.1, did not load, and CUDA_VISIBLE_DEVICES is "
                     "not set): set CUDA_VISIBLE_DEVICES to the GPUs to use");
  }
  if (!gpus_option && visible.empty()) {
    // Without a list of the GPUs (no NVML, no CUDA_VISIBLE_DEVICES) every
    // worker would put its trial on the same cuda:0 at once.
    throw UsageError("--jobs " + std::to_string(jobs) +
                     " runs trials on CUDA at once, one GPU each, but gpusweep sees no list of "
                     "GPUs to hand out (NVML, libnvidia-ml.so.1, did not load, and "
                     "CUDA_VISIBLE_DEVICES is not set): run with --jobs 1, or set "
                     "CUDA_VISIBLE_DEVICES to the GPUs to use (their indices or UUIDs)");
  }
  std::vector<std::string> chosen = gpus_option ? select_gpus(*gpus_option, visible) : visible;
  if (!numbered.empty()) {
    throw UsageError("a trial's config says device=" + numbered +
                     ", but with one GPU per worker (--gpus, or --jobs > 1 with GPUs visible) "
                     "each worker sees only its own GPU, as cuda:0; set device to cuda or auto "
                     "and choose the GPUs with --gpus");
  }
  if (static_cast<int64_t>(chosen.size()) < needed) {
    throw UsageError("world_size " + std::to_string(needed) +
                     " needs a GPU per rank (dp_backend gloo lets ranks share one), but " +
                     (gpus_option
                          ? "--gpus '" + *gpus_option + "' names " + std::to_string(chosen.size())
                          : describe(visible)) +
                     "; lower world_size, or name more GPUs with --gpus");
  }
  if (window > 1) {
    if (jobs > 1) {
      throw UsageError("interleaved trials (measure.interleave " + std::to_string(window) +
                       ") take turns on one GPU, so they run with --jobs 1; for several GPUs "
                       "at once set measure.interleave to 1");
    }
    chosen.resize(std::min(chosen.size(), static_cast<size_t>(ranks)));
    a.gpus = chosen;
    a.shared = true;
    a.note = "the interleaved trials take turns on GPU" + std::string(ranks > 1 ? "s " : " ") +
             joined(chosen) + " (CUDA_VISIBLE_DEVICES)";
    return a;
  }
  if (static_cast<size_t>(jobs) > chosen.size()) {
    throw UsageError("--jobs " + std::to_string(jobs) + " needs a GPU per running trial, but " +
                     (gpus_option
                          ? "--gpus '" + *gpus_option + "' names " + std::to_string(chosen.size())
                          : describe(visible)) +
                     "; use --jobs " + std::to_string(chosen.size()) +
                     " or fewer, or name more GPUs with --gpus");
  }
  chosen.resize(std::min(chosen.size(), static_cast<size_t>(jobs * ranks)));
  a.gpus = chosen;
  a.note = needed > 1 ? "one GPU per rank: a trial of world_size N runs on N of " + joined(chosen) +
                            " (each rank's cuda:0), starting when N are free"
                      : "one GPU per worker: each trial runs with CUDA_VISIBLE_DEVICES set to one "
                        "of " +
                            joined(chosen) + " (its cuda:0)";
  return a;
}

}  // namespace gpusweep::host
