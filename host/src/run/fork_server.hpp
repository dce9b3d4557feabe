// A pre-loaded fork server for trial workers. A fresh worker process pays for
// loading its plugin every trial (LibTorch: about 0.5 s and 160 MB here before
// any work); the fork server, `gpusweep-worker --plugin P --serve 3`, loads the
// plugin once, runs none of its code but the manifest (so that no thread pool
// exists to be broken by fork), and forks a fresh process per trial: each
// trial still runs alone in its own process, from the same just-loaded state.
//
// Protocol on a SOCK_SEQPACKET socket pair (one message per datagram):
//   server -> host, once:  {"ready": true, "pid": N}
//                       or {"ready": false, "error": "why"} (then it exits)
//   host -> server:        a JSON array of the worker's arguments (as for
//                          `gpusweep-worker`), with three descriptors attached
//                          (SCM_RIGHTS): the write ends of the trial's
//                          protocol, stdout and stderr pipes
//   server -> host:        {"pid": N} or {"error": "why"}
// The server forks twice, so that the trial process is orphaned at once and
// adopted by the host, which is a child subreaper (PR_SET_CHILD_SUBREAPER):
// the host waits for it, reads its rusage and kills its process group exactly
// as for a worker it spawned itself.
#pragma once

#include "protocol/fork_messages.hpp"
#include "protocol/worker_args.hpp"
#include "support/spawn.hpp"

#include <sys/types.h>

#include <string>
#include <vector>

namespace gpusweep::host {

// Makes this process the reaper of its orphaned descendants (idempotent).
// Whoever waits for children must then also reap orphans it did not start.
void become_subreaper();

class ForkServer {
 public:
  // Starts the server for plugin_path and waits until it has loaded the
  // plugin. Throws gpusweep::Error with the reason when it cannot serve
  // (the plugin does not load, it started threads while loading, ...).
  ForkServer(const std::string& exe, const std::string& plugin_path);
  ~ForkServer();
  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;

  // A trial worker forked from the server, started as `worker` says (its
  // plugin must be this server's). Its pid is this process's to wait for.
  // Throws gpusweep::Error when the server cannot fork one.
  SpawnedProcess spawn(const WorkerArgs& worker);

  pid_t pid() const { return pid_; }

 private:
  void shutdown();  // ends the server and waits for it

  pid_t pid_ = -1;
  int fd_ = -1;  // the host's end of the socket pair
};

}  // namespace gpusweep::host
