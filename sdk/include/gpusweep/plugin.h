/* gpusweep plugin ABI, version 1.1.
 *
 * The one boundary between the gpusweep host (worker process) and a workload
 * plugin. Plain C99 so that any compiler and any language can implement it.
 *
 * A plugin exports exactly one symbol, gpusweep_plugin_entry, which returns a
 * pointer to a static, immutable function table. The table grows only by
 * appending members at the end (a new ABI minor); struct_size tells the host
 * how many members this plugin's table actually has, so an older plugin
 * loads in a newer host. A new ABI major means an incompatible change and the
 * host refuses the plugin, naming both versions.
 *
 * Everything structured crosses as UTF-8 JSON text: the manifest, the trial
 * configuration, metrics, statistics and runtime information. Errors cross as
 * a status code plus a message; exceptions never cross.
 */
#ifndef GPUSWEEP_PLUGIN_H
#define GPUSWEEP_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUSWEEP_ABI_MAJOR 1
#define GPUSWEEP_ABI_MINOR 1

#if defined(_WIN32)
#define GPUSWEEP_EXPORT __declspec(dllexport)
#else
#define GPUSWEEP_EXPORT __attribute__((visibility("default")))
#endif

/* Name of the single exported symbol (for dlsym and friends). */
#define GPUSWEEP_ENTRY_SYMBOL "gpusweep_plugin_entry"

/* Status codes returned by every table function that can fail. */
typedef int32_t gpusweep_status;
#define GPUSWEEP_STATUS_OK 0
/* Something went wrong; the message says what. The trial is `failed`. */
#define GPUSWEEP_STATUS_ERROR 1
/* An allocation failed (host or device). The trial is `oom`. */
#define GPUSWEEP_STATUS_OUT_OF_MEMORY 2
/* The configuration cannot apply here (fp16 autocast on a CPU device, a
 * setting that does not concern this workload). The trial is `skipped` and
 * the message is the reason shown to the user. */
#define GPUSWEEP_STATUS_SKIPPED 3

/* One live workload, created from a trial configuration. Opaque to the host. */
typedef struct gpusweep_instance gpusweep_instance;

/* What one training step did. The host zero-fills the struct and sets
 * struct_size before each call; the plugin writes the fields it knows. */
typedef struct gpusweep_step_result {
  uint32_t struct_size; /* sizeof(gpusweep_step_result) as the host knows it */
  uint32_t reserved;    /* zero */
  /* Samples processed by this step, in the manifest's throughput unit
   * (updates, images, tokens...). Throughput = sum(samples) / time. */
  double samples;
  /* Samples in the manifest's secondary unit (for example env-steps for
   * dqn), 0 when the workload has none. */
  double secondary_samples;
} gpusweep_step_result;

/* The function table. All strings returned by the plugin are UTF-8, owned by
 * the plugin, and valid until the next call into the same instance (or, for
 * functions without an instance, until the next call of the same function);
 * the host copies them at once. No function may throw or longjmp across this
 * boundary. Functions on one instance are never called concurrently. */
typedef struct gpusweep_plugin {
  /* sizeof(gpusweep_plugin) as compiled into the plugin. Members beyond it
   * are absent and must not be read. */
  uint32_t struct_size;
  uint32_t abi_major; /* GPUSWEEP_ABI_MAJOR the plugin was built against */
  uint32_t abi_minor; /* GPUSWEEP_ABI_MINOR the plugin was built against */
  uint32_t reserved;  /* zero */

  /* The manifest: a JSON object with name, version, description, unit,
   * secondary_unit, quality, and params (the typed parameter schema). Static
   * storage: valid for the plugin's lifetime. Never NULL. */
  const char* (*manifest)(void);

  /* The runtime the plugin runs on, as a JSON object (LibTorch version and
   * build, BLAS, threads, devices), for the environment table. Static
   * storage or valid until the next call. Never NULL ("{}" when unknown). */
  const char* (*runtime)(void);

  /* Create a workload from a resolved trial configuration (a JSON object;
   * owned by the host, valid only during the call). On success *out is set.
   * On failure *out is NULL and error_message(NULL) describes it. Setup work
   * (data generation, model construction, buffer filling) happens here. */
  gpusweep_status (*create)(const char* config_json, gpusweep_instance** out);

  /* Run one training step. result is owned by the host. Must not block on the
   * device unless the workload inherently reads device values (the protocol
   * synchronises at block edges through synchronize()). */
  gpusweep_status (*step)(gpusweep_instance* instance, gpusweep_step_result* result);

  /* Wait until all work queued on the instance's device has finished. */
  gpusweep_status (*synchronize)(gpusweep_instance* instance);

  /* Evaluate quality on held-out data. *metrics_json receives a JSON object
   * of numbers (owned by the plugin, valid until the next call). */
  gpusweep_status (*evaluate)(gpusweep_instance* instance, const char** metrics_json);

  /* Runtime statistics of the instance so far as a JSON object of numbers.
   * The names gpusweep reads (peak_memory_bytes, input_wait_s, flops_per_step,
   * the diagnose phases...) are the table in gpusweep/stat_names.hpp; any
   * other counter is stored under the workload's own name. */
  gpusweep_status (*stats)(gpusweep_instance* instance, const char** stats_json);

  /* The message of the last failed call on instance, or of the last failed
   * create() when instance is NULL. Never NULL (empty when none). */
  const char* (*error_message)(const gpusweep_instance* instance);

  /* Destroy an instance created by create(). NULL is allowed. */
  void (*destroy)(gpusweep_instance* instance);

  /* ---- ABI 1.1 ---- */

  /* An optional feature of the plugin, by id (GPUSWEEP_EXT_*): a pointer to
   * that extension's struct of functions, with static storage, or NULL when
   * the plugin does not offer it (an id it does not know included). May be
   * NULL itself: no extensions. The host reads it only when struct_size
   * covers it (a 1.0 plugin's table ends before it). */
  const void* (*get_extension)(const char* id);
} gpusweep_plugin;

/* Extensions (ABI 1.1). Each struct starts with its own struct_size, grows
 * only by appending, and gets a new id ("/2") for an incompatible change. */

/* Step-phase timers, for `gpusweep diagnose`: the time of each phase of a
 * step (input wait, host-to-device copies, forward, backward, optimiser,
 * host reads of device values), reported by stats() as phase_<name>_s and
 * host_syncs. */
#define GPUSWEEP_EXT_PHASE_TIMERS "gpusweep.phase_timers/1"
typedef struct gpusweep_ext_phase_timers {
  uint32_t struct_size; /* sizeof(gpusweep_ext_phase_timers) in the plugin */
  uint32_t reserved;    /* zero */
  /* Switches the timers on in this process, for instances created after the
   * call. They synchronise the device at phase edges, which serialises the
   * step: the host asks for them only in diagnose trials, never in sweeps. */
  void (*enable)(void);
} gpusweep_ext_phase_timers;

/* The measured window: the host says when measured steps start and pause,
 * so that figures stats() reports over the trial (peak memory above all)
 * cover the measured steps only, not setup, warmup or evaluation. */
#define GPUSWEEP_EXT_MEASURE_WINDOW "gpusweep.measure_window/1"
typedef struct gpusweep_ext_measure_window {
  uint32_t struct_size; /* sizeof(gpusweep_ext_measure_window) in the plugin */
  uint32_t reserved;    /* zero */
  /* Measured steps start: before the first block, and again after an
   * evaluation between blocks. */
  gpusweep_status (*begin)(gpusweep_instance* instance);
  /* Measured steps pause: after the last block before an evaluation. */
  gpusweep_status (*end)(gpusweep_instance* instance);
} gpusweep_ext_measure_window;

/* The machine's matmul peak as the plugin's runtime sees it, for `doctor`
 * and `diagnose`: what fraction of it a step reaches. */
#define GPUSWEEP_EXT_MATMUL_PROBE "gpusweep.matmul_probe/1"
typedef struct gpusweep_ext_matmul_probe {
  uint32_t struct_size; /* sizeof(gpusweep_ext_matmul_probe) in the plugin */
  uint32_t reserved;    /* zero */
  /* Multiplies float32 matrices for about `seconds` on each device the
   * plugin can use; *result_json receives a JSON array with one object per
   * device ({"device", "n", "dtype", "threads", "seconds", "products",
   * "gflops"}), valid until the next call. */
  gpusweep_status (*measure)(double seconds, const char** result_json);
} gpusweep_ext_matmul_probe;

/* Turns, for interleaved execution: the host runs the blocks of several
 * live trials one at a time, in turn, and a trial waits idle between its
 * turns. pause() is called before the wait: the instance stops its
 * background work (input loader threads) and returns once it has stopped, so
 * that nothing of this trial runs during another trial's turn and no batches
 * pile up while it waits; resume() is called when its turn comes. */
#define GPUSWEEP_EXT_TURNS "gpusweep.turns/1"
typedef struct gpusweep_ext_turns {
  uint32_t struct_size; /* sizeof(gpusweep_ext_turns) in the plugin */
  uint32_t reserved;    /* zero */
  gpusweep_status (*pause)(gpusweep_instance* instance);
  gpusweep_status (*resume)(gpusweep_instance* instance);
} gpusweep_ext_turns;

/* The device's own clock for a measured block: begin() records an event on
 * the trial's device stream before the block's first step, end() records one
 * after its last step, waits for it and stores the device time between the
 * two in *seconds. end() returns GPUSWEEP_STATUS_SKIPPED when the trial's
 * device has no such clock (the CPU), and *seconds is then untouched. */
#define GPUSWEEP_EXT_DEVICE_TIMER "gpusweep.device_timer/1"
typedef struct gpusweep_ext_device_timer {
  uint32_t struct_size; /* sizeof(gpusweep_ext_device_timer) in the plugin */
  uint32_t reserved;    /* zero */
  gpusweep_status (*begin)(gpusweep_instance* instance);
  gpusweep_status (*end)(gpusweep_instance* instance, double* seconds);
} gpusweep_ext_device_timer;

/* How busy the device is over a few steps, without NVML, for `diagnose`
 * (and sweeps with measure.busy_share): begin() starts recording what the
 * trial's device runs (its kernels, copies and memsets: CUDA's activity
 * records through LibTorch's profiler, the phase timers paused so that
 * their syncs do not idle it), end() waits for the device, stops, and
 * stores in *busy_seconds the time at least one of them ran (overlaps
 * counted once). The host divides by the steps' wall time, from begin() to
 * a synchronize() it calls before end(). begin() returns
 * GPUSWEEP_STATUS_SKIPPED where the device keeps no such records (the CPU)
 * or the recording cannot start (end() is then not called); end() returns
 * it when nothing was recorded, *busy_seconds untouched. */
#define GPUSWEEP_EXT_DEVICE_BUSY "gpusweep.device_busy/1"
typedef struct gpusweep_ext_device_busy {
  uint32_t struct_size; /* sizeof(gpusweep_ext_device_busy) in the plugin */
  uint32_t reserved;    /* zero */
  gpusweep_status (*begin)(gpusweep_instance* instance);
  gpusweep_status (*end)(gpusweep_instance* instance, double* busy_seconds);
} gpusweep_ext_device_busy;

/* A cap on the trial device's own memory, for `measure.max_memory` and
 * `tune-batch --max-memory`: called before create(), with the trial's
 * resolved config. On a device with an allocator of its own (CUDA's caching
 * allocator) the plugin caps that allocator at `bytes` for instances created
 * after the call, so that an allocation past it fails as out of memory, and
 * returns OK with *result_json = {"device", "limit_bytes", "device_bytes",
 * "fraction"}. It returns SKIPPED when the trial's device has no such
 * allocator (the CPU): the host then caps the process's address space. On
 * ERROR *result_json is the message. Strings are valid until the next call. */
#define GPUSWEEP_EXT_DEVICE_MEMORY_CAP "gpusweep.device_memory_cap/1"
typedef struct gpusweep_ext_device_memory_cap {
  uint32_t struct_size; /* sizeof(gpusweep_ext_device_memory_cap) in the plugin */
  uint32_t reserved;    /* zero */
  gpusweep_status (*cap)(const char* config_json, double bytes, const char** result_json);
} gpusweep_ext_device_memory_cap;

/* A plugin that runs workloads written elsewhere (the python bridge runs a
 * user's Python module): its own manifest() names the parameters that select
 * one ("selects": true, such as "module"), and the manifest of the workload a
 * configuration selects comes from here: its quality metric, units and
 * parameters, which the host validates a sweep against and create() resolves
 * the configuration with. config_json is a JSON object holding at least the
 * selecting parameters (the sweep's base, or a trial's resolved config). On
 * OK *manifest_json is that manifest, whose name is the plugin's own; on
 * ERROR it is the message (a module that does not import, a bad parameter).
 * Strings are valid until the next call. The first call may be slow (it may
 * start an interpreter); never call it in a fork server before forking. */
#define GPUSWEEP_EXT_SELECTED_MANIFEST "gpusweep.selected_manifest/1"
typedef struct gpusweep_ext_selected_manifest {
  uint32_t struct_size; /* sizeof(gpusweep_ext_selected_manifest) in the plugin */
  uint32_t reserved;    /* zero */
  gpusweep_status (*manifest)(const char* config_json, const char** manifest_json);
} gpusweep_ext_selected_manifest;

/* The entry point every plugin exports. Returns a pointer to a table with
 * static storage duration; never NULL. Must be cheap and free of side
 * effects (the host may call it only to read the manifest). */
typedef const gpusweep_plugin* (*gpusweep_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* GPUSWEEP_PLUGIN_H */
