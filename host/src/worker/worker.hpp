// `gpusweep-worker`: runs one trial (or describes a plugin) inside its own
// process and streams JSON-line events to the host over a dedicated pipe.
#pragma once

#include "protocol/worker_args.hpp"
#include "worker/loader.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <future>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

class EventWriter;

// `gpusweep-worker --serve FD`: loads the plugin once, without running any
// of its code beyond the manifest (no parallel region: LibTorch's and
// OpenMP's thread pools start only in the forked trials), then for each
// request on FD forks a trial worker that runs as `run_worker` would after
// loading. Ends when FD closes. See run/fork_server.hpp for the protocol.
int run_fork_server(const WorkerArgs& args);

// Never returns normally for a trial: the process ends with _exit so that a
// LibTorch plugin is never unloaded. Returns an exit code for argument errors.
int run_worker(const WorkerArgs& args);

// `gpusweep plugins --check`'s worker: loads the plugin, then calls create,
// step (check_steps times), synchronize, evaluate, stats and destroy with
// config_json, each call bracketed by "begin" and "end" events so that the
// host can name the function that crashed or hung. Never returns normally.
int run_plugin_check_worker(const WorkerArgs& args);

// Loads the plugin and announces it with a "loaded" event (ABI, table size,
// manifest, runtime); when it cannot be loaded, reports a failed result in
// phase "load" and ends the process.
LoadedPlugin load_and_announce(const std::string& plugin_path, const std::string& config_json,
                               EventWriter& out);

// measure.max_memory (args.max_memory_bytes > 0): the device allocator's
// cap where the plugin caps one, else the address space (RLIMIT_AS) after
// first_beat; a memory_cap event on out, or a failed result and the end of
// the process.
void cap_trial_memory(const gpusweep_plugin* table, const WorkerArgs& args,
                      std::future<void>& first_beat, EventWriter& out);

// Map a plugin status to a trial status name.
const char* status_name(int status);

// Ends a worker process (never a return: a LibTorch plugin is never
// unloaded): a data-parallel trial's other ranks first (end_ranks), then
// the output flushed and _exit(code).
[[noreturn]] void finish(int code);

// A plugin's JSON text (a manifest, metrics, stats) as JSON; text that does
// not parse as {"unparsed": text}, none as null.
nlohmann::json parse_or_raw(const char* text);

// Moves the protocol descriptor out of the plugin's way: returns its new
// number and leaves /dev/null at the old one.
int protect_protocol_fd(int fd);

}  // namespace gpusweep::host
