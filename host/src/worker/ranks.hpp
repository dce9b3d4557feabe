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

#include "protocol/phase.hpp"
#include "protocol/worker_args.hpp"

#include <nlohmann/json.hpp>

#include <sys/types.h>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
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

// A data-parallel trial's communication from its ranks' exposed all-reduce
// per measured step (one series a rank, the same steps in the same order):
// each rank's figure for a step is the all-reduce plus its wait for slower
// ranks, so the least of them that step (the rank that waited for none) is
// communication, and each step's mean over the ranks less that least is
// imbalance; both summed over the steps. The least of whole-trial totals
// would keep about E[max(0, other - self)] of waiting a step whenever the
// slowest rank changes from step to step.
// Nothing when a rank has no series or the series differ in length.
struct StepComm {
  double comm_s = 0;
  double imbalance_s = 0;
  int64_t steps = 0;
};
std::optional<StepComm> per_step_comm(const std::vector<std::vector<double>>& ranks);

// In the leader: the other ranks.
class Ranks {
 public:
  // Starts ranks 1..world_size-1 and sets this process's rank-0 environment
  // and CPU share. Throws gpusweep::Error when a rank cannot start.
  Ranks(const WorkerArgs& args, int64_t world_size);
  Ranks(const Ranks&) = delete;
  Ranks& operator=(const Ranks&) = delete;

  int64_t world_size() const;

  // From before create() to the end: a thread that reads every rank's
  // replies, and ends the trial (a result event on out naming the rank, the
  // phase and step of set_phase, then the process) as soon as one reports a
  // failure or dies, whatever rank 0 is doing meanwhile: blocked in the
  // rendezvous, or in a collective that waits for the dead rank (NCCL's
  // would wait out its timeout).
  void start_watch(EventWriter& out);
  void set_phase(Phase phase, int64_t at_step);
  // Every follower's setup done (the rendezvous' store is kept until
  // end_ranks).
  void await_ready();

  // Each follower runs n steps and synchronises ("steps" command); collect()
  // waits for their replies: their seconds (ranks 1..N-1, in order) and
  // samples summed into *samples and *secondary.
  void send_steps(int64_t n, int64_t at_step);
  void collect(std::vector<double>& seconds, double* samples, double* secondary);
  // A command every follower acknowledges: {"op": "pause"|"resume"} or
  // {"op": "window", "begin": bool}.
  void command(const nlohmann::json& op);
  // Each follower's stats() (index r - 1).
  std::vector<nlohmann::json> stats();

  // After rank 0's own step failed: the cause is often a rank that died (a
  // collective then fails on every other rank), which the watch reports and
  // ends the process for; waits grace_s for that.
  void await_failure(double grace_s);
  // The ranks the kernel says are not running (stopped, in a driver call,
  // exited), as "rank 1 is stopped"; "" when all are. For rank 0's own
  // failure, which a stuck rank's collective timeout can be.
  std::string ranks_not_running() const;

 private:
  struct Peer {
    int64_t rank = 0;
    pid_t pid = -1;
    int fd = -1;
    std::string pending;                 // bytes read past the last line (the watch's)
    std::deque<nlohmann::json> replies;  // read, not yet taken (guarded by mutex_)
  };
  // The watch thread's only: one reply, or the failure, or *closed when
  // the rank's socket closed.
  std::optional<nlohmann::json> read_reply(Peer& p, RankFailure* failure, bool* closed);
  RankFailure exit_of(Peer& p);
  // The next reply of p's, waited for (what names the command, for the
  // failure when p does not answer within timeout_s_: the trial ends).
  nlohmann::json next_reply(Peer& p, const char* what);
  void report(const RankFailure& failure);
  [[noreturn]] void emit_and_end(const RankFailure& failure);

  std::vector<Peer> peers_;
  std::string folder_;  // the rendezvous' folder
  std::mutex mutex_;
  std::condition_variable replied_;
  std::atomic<Phase> phase_{Phase::setup};
  std::atomic<int64_t> at_step_{0};
  EventWriter* out_ = nullptr;        // the trial's events (start_watch)
  std::atomic<bool> noticed_{false};  // the watch saw a rank fail
  double timeout_s_ = 120;            // GPUSWEEP_DP_TIMEOUT_S: a reply's deadline
};

// True for the first caller only: the one that reports the trial's end. The
// watch and rank 0's own result race when a rank fails while rank 0 ends;
// one result is emitted. (Always true in a trial of one rank.)
bool claim_trial_end();

// The leader's way out (the worker's exit path calls it; the leader ends
// with _exit): kills and reaps the ranks it started, so that their devices
// are free when the host hands them on, and removes the rendezvous' folder.
void end_ranks();
// The rendezvous' folder alone (end_ranks' last step; the store is kept
// while the ranks live, which may open it again).
void remove_rendezvous();

// A follower: loads the plugin, creates the workload, then serves the
// leader's commands on args.peer_fd until it closes. Never returns.
[[noreturn]] void run_follower(const WorkerArgs& args);

}  // namespace gpusweep::host
