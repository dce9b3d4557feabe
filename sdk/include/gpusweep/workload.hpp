// Header-only C++ side of the plugin ABI: a plugin author derives from
// gpusweep::Workload, writes a static manifest(), and exports it with
// GPUSWEEP_EXPORT_WORKLOAD(Class). Exceptions stop here and become statuses.
#pragma once

#include <gpusweep/plugin.h>
#include <gpusweep/manifest.hpp>

#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#if defined(GPUSWEEP_WITH_TORCH)
#include <c10/util/Exception.h>
#endif

namespace gpusweep {

// Throw from a workload's constructor (or step) when the configuration cannot
// apply here; the message is the reason shown to the user.
class Skipped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throw when an allocation failed in a way the wrapper cannot recognise.
class OutOfMemory : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The resolved configuration of one trial: every parameter of the manifest
// with its value, each checked against its parameter's type, choices and
// range before the workload is constructed (Manifest::resolve): a workload
// reads its knobs with get<T>() and checks only what the manifest cannot say
// (one knob against another).
class TrialConfig {
 public:
  explicit TrialConfig(Json json) : json_(std::move(json)) {}

  template <class T>
  T get(const std::string& key) const {
    auto it = json_.find(key);
    if (it == json_.end()) throw std::invalid_argument("config has no key '" + key + "'");
    try {
      return it->get<T>();
    } catch (const nlohmann::json::exception&) {
      throw std::invalid_argument("config key '" + key + "' has the wrong type: " + it->dump());
    }
  }
  template <class T>
  T get_or(const std::string& key, T fallback) const {
    return has(key) ? get<T>(key) : fallback;
  }
  bool has(const std::string& key) const { return json_.contains(key); }
  const Json& json() const { return json_; }

 private:
  Json json_;
};

struct StepResult {
  double samples = 0;            // in the manifest's unit
  double secondary_samples = 0;  // in the manifest's secondary unit
};

using Metrics = std::map<std::string, double>;
// Named series of numbers (a data-parallel rank's per-step figures).
using Series = std::map<std::string, std::vector<double>>;

class Workload {
 public:
  virtual ~Workload() = default;
  virtual StepResult step() = 0;
  virtual void synchronize() {}
  virtual Metrics evaluate() { return {}; }
  virtual Metrics stats() { return {}; }
  // Series the host reads beside stats()' numbers, written into the same
  // JSON object as arrays (the host keeps the numbers; a series is for it to
  // combine, such as a data-parallel rank's exposed all-reduce per step).
  virtual Series stats_series() { return {}; }
  // The host's measured window (GPUSWEEP_EXT_MEASURE_WINDOW): measured steps
  // start, and pause before an evaluation. Figures stats() reports over the
  // trial, such as peak memory, should cover what lies between the two.
  virtual void begin_measurement() {}
  virtual void end_measurement() {}
  // Interleaved execution (GPUSWEEP_EXT_TURNS): between its turns the trial
  // waits idle. pause_background() stops background work (loader threads)
  // and returns once it has stopped; resume_background() starts it again.
  virtual void pause_background() {}
  virtual void resume_background() {}
  // The device's clock for a block (GPUSWEEP_EXT_DEVICE_TIMER): begin before
  // the block's first step; end after its last, waiting for the device, and
  // false when the device has no such clock (the CPU).
  virtual void begin_device_timer() {}
  virtual bool end_device_timer(double* seconds) {
    (void)seconds;
    return false;
  }
  // The device's busy time over a few steps (GPUSWEEP_EXT_DEVICE_BUSY):
  // begin before the first, false when the device keeps no activity records
  // (the CPU) or the recording cannot start; end after the last, waiting for
  // the device, false when nothing was recorded.
  virtual bool begin_device_busy() { return false; }
  virtual bool end_device_busy(double* busy_seconds) {
    (void)busy_seconds;
    return false;
  }
};

namespace detail {

// What an exception means at the boundary.
struct Failure {
  gpusweep_status status;
  std::string message;
};

// An allocation failure by its message: LibTorch's CPU allocator ("can't
// allocate memory"), the CUDA caching allocator and runtime ("CUDA out of
// memory", "out of memory"), and the CUDA libraries' own allocation statuses,
// which LibTorch passes on by name (CUBLAS_STATUS_ALLOC_FAILED,
// CUSOLVER_STATUS_ALLOC_FAILED, cuDNN 8's CUDNN_STATUS_ALLOC_FAILED, cuDNN 9's
// CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED / _HOST_...).
// The one list: the python workload hands it to its Python side too
// (gpusweep._bridge.OOM_MARKERS), so that a Python trial ends oom where a C++
// one does.
inline constexpr const char* kOomMarkers[] = {"can't allocate memory", "out of memory",
                                              "_STATUS_ALLOC_FAILED", "_ALLOCATION_FAILED"};
inline bool looks_like_oom(const char* what) {
  for (const char* marker : kOomMarkers) {
    if (std::strstr(what, marker) != nullptr) return true;
  }
  return false;
}

// Call inside a catch block: classifies the in-flight exception. It
// allocates the message, so it can itself throw std::bad_alloc: at the ABI
// boundary use record_current_exception, which cannot.
inline Failure classify_current_exception() {
  try {
    throw;
  } catch (const Skipped& e) {
    return {GPUSWEEP_STATUS_SKIPPED, e.what()};
  } catch (const OutOfMemory& e) {
    return {GPUSWEEP_STATUS_OUT_OF_MEMORY, e.what()};
  } catch (const std::bad_alloc& e) {
    return {GPUSWEEP_STATUS_OUT_OF_MEMORY, std::string("allocation failed: ") + e.what()};
#if defined(GPUSWEEP_WITH_TORCH)
  } catch (const c10::Error& e) {
    const char* msg = e.what_without_backtrace();
    return {looks_like_oom(msg) ? GPUSWEEP_STATUS_OUT_OF_MEMORY : GPUSWEEP_STATUS_ERROR, msg};
#endif
  } catch (const std::exception& e) {
    return {looks_like_oom(e.what()) ? GPUSWEEP_STATUS_OUT_OF_MEMORY : GPUSWEEP_STATUS_ERROR,
            e.what()};
  } catch (...) {
    return {GPUSWEEP_STATUS_ERROR, "unknown exception (not derived from std::exception)"};
  }
}

// Call inside a catch block: classifies the in-flight exception and puts
// its message in `slot`, never throwing. When memory is too short even for
// the message, the slot says so in a literal short enough for the string's
// own inline buffer (no allocation) and the status is out of memory: a
// plugin call that fails that way reports oom instead of ending the process
// through a noexcept boundary.
inline gpusweep_status record_current_exception(std::string& slot) noexcept {
  try {
    Failure f = classify_current_exception();
    slot.swap(f.message);
    return f.status;
  } catch (...) {
    slot.clear();
    slot.assign("out of memory");  // 13 chars: fits any std::string's capacity
    return GPUSWEEP_STATUS_OUT_OF_MEMORY;
  }
}

template <class T, class = void>
struct HasRuntime : std::false_type {};
template <class T>
struct HasRuntime<T, std::void_t<decltype(T::runtime())>> : std::true_type {};

// A workload class offers ABI extensions with a static
// `const void* extension(const char* id)` (torchkit's TorchWorkload does).
template <class T, class = void>
struct HasExtension : std::false_type {};
template <class T>
struct HasExtension<T, std::void_t<decltype(T::extension(static_cast<const char*>(nullptr)))>>
    : std::true_type {};

// A workload class whose manifest depends on its configuration (a bridge
// to workloads written elsewhere) has a static
// `Manifest selected_manifest(const Json& config)`; the SDK offers it as
// GPUSWEEP_EXT_SELECTED_MANIFEST and resolves create()'s config with it.
template <class T, class = void>
struct HasSelectedManifest : std::false_type {};
template <class T>
struct HasSelectedManifest<T, std::void_t<decltype(T::selected_manifest(std::declval<Json>()))>>
    : std::true_type {};

struct Instance {
  std::unique_ptr<Workload> workload;
  std::string error;
  std::string buffer;  // backs the last returned JSON string
};

inline Instance* cast(gpusweep_instance* p) { return reinterpret_cast<Instance*>(p); }
inline const Instance* cast(const gpusweep_instance* p) {
  return reinterpret_cast<const Instance*>(p);
}

inline std::string metrics_json(const Metrics& m, const Series& series = {}) {
  Json j = Json::object();
  for (const auto& [k, v] : m) j[k] = v;
  for (const auto& [k, v] : series) j[k] = v;
  return j.dump();
}

// The C function table for workload class W.
template <class W>
struct Adapter {
  static std::string& create_error() {
    static thread_local std::string error;
    return error;
  }

  // W's manifest, built once; nullptr when W::manifest() threw.
  static const Manifest* manifest_object() noexcept {
    static const std::optional<Manifest> m = []() -> std::optional<Manifest> {
      try {
        return W::manifest();
      } catch (...) {
        return std::nullopt;
      }
    }();
    return m ? &*m : nullptr;
  }

  static const char* manifest() noexcept {
    // The fallback is a literal: nothing to allocate when memory is what failed.
    static const std::optional<std::string> text = []() -> std::optional<std::string> {
      const Manifest* m = manifest_object();
      try {
        if (m != nullptr) return m->to_json().dump();
      } catch (...) {
      }
      return std::nullopt;
    }();
    return text ? text->c_str() : "{\"error\":\"manifest() threw\"}";
  }

  static const char* runtime() noexcept {
    static std::string text;
    if constexpr (HasRuntime<W>::value) {
      try {
        text = Json(W::runtime()).dump();
      } catch (...) {
        text = "{}";
      }
    } else {
      text = "{}";
    }
    return text.c_str();
  }

  static gpusweep_status create(const char* config_json, gpusweep_instance** out) noexcept {
    if (out == nullptr) return GPUSWEEP_STATUS_ERROR;
    *out = nullptr;
    try {
      const Manifest* m = manifest_object();
      if (m == nullptr) throw std::runtime_error("the plugin's manifest() threw");
      Json config = Json::parse(config_json);
      if constexpr (HasSelectedManifest<W>::value) {
        config = W::selected_manifest(config).resolve(config);
      } else {
        config = m->resolve(config);
      }
      auto inst = std::make_unique<Instance>();
      inst->workload = std::make_unique<W>(TrialConfig(std::move(config)));
      *out = reinterpret_cast<gpusweep_instance*>(inst.release());
      create_error().clear();
      return GPUSWEEP_STATUS_OK;
    } catch (...) {
      return record_current_exception(create_error());
    }
  }

  template <class F>
  static gpusweep_status guarded(gpusweep_instance* p, F&& f) noexcept {
    Instance* inst = cast(p);
    if (inst == nullptr) return GPUSWEEP_STATUS_ERROR;
    try {
      f(*inst);
      return GPUSWEEP_STATUS_OK;
    } catch (...) {
      return record_current_exception(inst->error);
    }
  }

  // Not through guarded(): the hot path, one call per step, keeps to a
  // null check and a try block.
  static gpusweep_status step(gpusweep_instance* p, gpusweep_step_result* result) noexcept {
    Instance* inst = cast(p);
    if (inst == nullptr || result == nullptr) return GPUSWEEP_STATUS_ERROR;
    try {
      StepResult r = inst->workload->step();
      result->samples = r.samples;
      result->secondary_samples = r.secondary_samples;
      return GPUSWEEP_STATUS_OK;
    } catch (...) {
      return record_current_exception(inst->error);
    }
  }

  static gpusweep_status synchronize(gpusweep_instance* p) noexcept {
    return guarded(p, [](Instance& i) { i.workload->synchronize(); });
  }

  static gpusweep_status evaluate(gpusweep_instance* p, const char** out) noexcept {
    return guarded(p, [out](Instance& i) {
      i.buffer = metrics_json(i.workload->evaluate());
      *out = i.buffer.c_str();
    });
  }

  static gpusweep_status stats(gpusweep_instance* p, const char** out) noexcept {
    return guarded(p, [out](Instance& i) {
      i.buffer = metrics_json(i.workload->stats(), i.workload->stats_series());
      *out = i.buffer.c_str();
    });
  }

  static const char* error_message(const gpusweep_instance* p) noexcept {
    if (p == nullptr) return create_error().c_str();
    return cast(p)->error.c_str();
  }

  static void destroy(gpusweep_instance* p) noexcept {
    try {
      delete cast(p);
    } catch (...) {
      // A destructor that throws has nowhere to report to; the worker exits next.
    }
  }

  static gpusweep_status begin_measurement(gpusweep_instance* p) noexcept {
    return guarded(p, [](Instance& i) { i.workload->begin_measurement(); });
  }

  static gpusweep_status end_measurement(gpusweep_instance* p) noexcept {
    return guarded(p, [](Instance& i) { i.workload->end_measurement(); });
  }

  static gpusweep_status pause_background(gpusweep_instance* p) noexcept {
    return guarded(p, [](Instance& i) { i.workload->pause_background(); });
  }

  static gpusweep_status resume_background(gpusweep_instance* p) noexcept {
    return guarded(p, [](Instance& i) { i.workload->resume_background(); });
  }

  static gpusweep_status begin_device_timer(gpusweep_instance* p) noexcept {
    return guarded(p, [](Instance& i) { i.workload->begin_device_timer(); });
  }

  // A call that succeeded without doing its work (no device clock, no
  // activity records) answers SKIPPED.
  static gpusweep_status skipped_unless(gpusweep_status st, bool done) noexcept {
    return st == GPUSWEEP_STATUS_OK && !done ? GPUSWEEP_STATUS_SKIPPED : st;
  }

  static gpusweep_status end_device_timer(gpusweep_instance* p, double* seconds) noexcept {
    bool timed = false;  // read after the call: arguments are evaluated in no set order
    const gpusweep_status st =
        guarded(p, [&](Instance& i) { timed = i.workload->end_device_timer(seconds); });
    return skipped_unless(st, timed);
  }

  static gpusweep_status begin_device_busy(gpusweep_instance* p) noexcept {
    bool started = false;
    const gpusweep_status st =
        guarded(p, [&](Instance& i) { started = i.workload->begin_device_busy(); });
    return skipped_unless(st, started);
  }

  static gpusweep_status end_device_busy(gpusweep_instance* p, double* busy_seconds) noexcept {
    bool recorded = false;
    const gpusweep_status st =
        guarded(p, [&](Instance& i) { recorded = i.workload->end_device_busy(busy_seconds); });
    return skipped_unless(st, recorded);
  }

  static gpusweep_status selected_manifest(const char* config_json, const char** out) noexcept {
    static std::string text;
    try {
      if constexpr (HasSelectedManifest<W>::value) {
        text = W::selected_manifest(Json::parse(config_json)).to_json().dump();
        *out = text.c_str();
        return GPUSWEEP_STATUS_OK;
      }
      text = "this plugin selects no workload";
    } catch (...) {
      // Any failure is the config's error to the host, whatever its kind.
      (void)record_current_exception(text);
    }
    *out = text.c_str();
    return GPUSWEEP_STATUS_ERROR;
  }

  // The SDK's own extensions (every workload has them), then the class's.
  static const void* get_extension(const char* id) noexcept {
    static const gpusweep_ext_measure_window window = {sizeof(gpusweep_ext_measure_window), 0,
                                                       &begin_measurement, &end_measurement};
    static const gpusweep_ext_turns turns = {sizeof(gpusweep_ext_turns), 0, &pause_background,
                                             &resume_background};
    static const gpusweep_ext_device_timer timer = {sizeof(gpusweep_ext_device_timer), 0,
                                                    &begin_device_timer, &end_device_timer};
    if (id != nullptr && std::strcmp(id, GPUSWEEP_EXT_MEASURE_WINDOW) == 0) return &window;
    if (id != nullptr && std::strcmp(id, GPUSWEEP_EXT_TURNS) == 0) return &turns;
    if (id != nullptr && std::strcmp(id, GPUSWEEP_EXT_DEVICE_TIMER) == 0) return &timer;
    static const gpusweep_ext_device_busy busy = {sizeof(gpusweep_ext_device_busy), 0,
                                                  &begin_device_busy, &end_device_busy};
    if (id != nullptr && std::strcmp(id, GPUSWEEP_EXT_DEVICE_BUSY) == 0) return &busy;
    if constexpr (HasSelectedManifest<W>::value) {
      static const gpusweep_ext_selected_manifest selected = {
          sizeof(gpusweep_ext_selected_manifest), 0, &selected_manifest};
      if (id != nullptr && std::strcmp(id, GPUSWEEP_EXT_SELECTED_MANIFEST) == 0) return &selected;
    }
    if constexpr (HasExtension<W>::value) {
      try {
        return id != nullptr ? W::extension(id) : nullptr;
      } catch (...) {
        return nullptr;
      }
    } else {
      (void)id;
      return nullptr;
    }
  }

  static const gpusweep_plugin* table() noexcept {
    static const gpusweep_plugin t = {sizeof(gpusweep_plugin),
                                      GPUSWEEP_ABI_MAJOR,
                                      GPUSWEEP_ABI_MINOR,
                                      0,
                                      &manifest,
                                      &runtime,
                                      &create,
                                      &step,
                                      &synchronize,
                                      &evaluate,
                                      &stats,
                                      &error_message,
                                      &destroy,
                                      &get_extension};
    return &t;
  }
};

}  // namespace detail
}  // namespace gpusweep

// Exports workload class Class as this shared library's plugin. Use once per
// plugin, in one source file.
#define GPUSWEEP_EXPORT_WORKLOAD(Class)                                           \
  extern "C" GPUSWEEP_EXPORT const gpusweep_plugin* gpusweep_plugin_entry(void) { \
    return ::gpusweep::detail::Adapter<Class>::table();                           \
  }
