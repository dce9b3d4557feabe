// Data-parallel trials (world_size > 1) in the worker. The worker the host
// started is rank 0, the leader: before the plugin's create() it starts
// ranks 1..N-1 as gpusweep-worker processes of its own process group (the
// host's kill of the trial's group ends them all; each also dies with the
// leader, PR_SET_PDEATHSIG), each with its rank, the world size and the
// rendezvous (a c10d FileStore in a fresh folder) in its environment, its
// own share of the leader's CPUs, and on CUDA its own GPU when the trial was
// given enough. The followers load the plugin, create their workload (the
// process group's rendezvous happens there, in torchkit) and then take
// commands from the leader over a socket, one JSON line each way: run n
// steps and synchronise (replying with their own time and samples), pause
// or resume background work between turns, mark a measured window, report
// stats. The leader runs the protocol as for one process and, for every run
// of steps, has the followers run as many in lockstep (the gradients'
// all-reduce couples them anyway); a block's time is the slowest rank's.
// The host sees one trial, one process group, one stream of events.
#pragma once

#include "protocol/worker_args.hpp"

#include <nlohmann/json.hpp>

#include <sys/types.h>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

class EventWriter;

// A rank's failure, as the trial's result: status (failed, oom, crashed,
// skipped, ...) and a message that names the rank.
struct RankFailure {
  std::string status;
  std::string message;
};

// The world size a trial's config asks for (its "world_size", default 1).
int64_t requested_world_size(const std::string& config_json);

// In the leader: the other ranks.
class Ranks {
 public:
  // Starts ranks 1..world_size-1 and sets this process's rank-0 environment
  // and CPU share. Throws gpusweep::Error when a rank cannot start.
  Ranks(const WorkerArgs& args, int64_t world_size);
  Ranks(const Ranks&) = delete;
  Ranks& operator=(const Ranks&) = delete;

  int64_t world_size() const { return static_cast<int64_t>(peers_.size()) + 1; }

  // While the leader's own create() waits in the rendezvous: a thread that
  // ends the trial (a result event on out, then the process) as soon as a
  // follower reports a failed setup or dies, instead of letting the leader
  // wait out the rendezvous' timeout. stop_watch() ends the thread.
  void watch_setup(EventWriter& out);
  void stop_watch();
  // Every follower's setup done; else the first failure.
  std::optional<RankFailure> await_ready();

  // Each follower runs n steps and synchronises ("steps" command); collect()
  // waits for their replies: their seconds (ranks 1..N-1, in order) and
  // samples summed into *samples and *secondary.
  void send_steps(int64_t n, int64_t at_step);
  std::optional<RankFailure> collect(std::vector<double>& seconds, double* samples,
                                     double* secondary);
  // A command every follower acknowledges: {"op": "pause"|"resume"} or
  // {"op": "window", "begin": bool}.
  std::optional<RankFailure> command(const nlohmann::json& op);
  // Each follower's stats() (index r - 1), or a failure.
  std::optional<RankFailure> stats(std::vector<nlohmann::json>& out);

  // A follower that has exited, waiting up to grace_s for one to: after the
  // leader's own step failed, the cause is often a rank that died (the
  // collective then fails on every other rank).
  std::optional<RankFailure> dead_rank(double grace_s);

 private:
  struct Peer {
    int64_t rank = 0;
    pid_t pid = -1;
    int fd = -1;
    std::string pending;  // bytes read past the last line
    bool ready = false;
  };
  std::optional<nlohmann::json> read_reply(Peer& p, RankFailure* failure);
  RankFailure exit_of(Peer& p);

  std::vector<Peer> peers_;
  std::string folder_;  // the rendezvous' folder
  struct Watch;
  std::shared_ptr<Watch> watch_;
};

// Removes the rendezvous' folder, if this process made one (the worker's
// exit path calls it: the leader ends with _exit).
void remove_rendezvous();

// A follower: loads the plugin, creates the workload, then serves the
// leader's commands on args.peer_fd until it closes. Never returns.
[[noreturn]] void run_follower(const WorkerArgs& args);

}  // namespace gpusweep::host
