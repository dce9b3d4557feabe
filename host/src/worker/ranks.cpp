// A data-parallel trial's ranks; see ranks.hpp.
#include "worker/ranks.hpp"

#include "protocol/event_payloads.hpp"
#include "protocol/event_writer.hpp"
#include "protocol/events.hpp"
#include "spec/gpus.hpp"
#include "support/error.hpp"
#include "support/spawn.hpp"
#include "worker/loader.hpp"
#include "worker/worker.hpp"

#include <gpusweep/plugin.h>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

namespace gpusweep::host {

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string& rendezvous_folder() {
  static std::string folder;
  return folder;
}

// The ranks this process started (the leader's), for end_ranks.
std::vector<pid_t>& followers() {
  static std::vector<pid_t> pids;
  return pids;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, sep);) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// The CPUs this process may run on, in order.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

// Rank r's share of cpus: a contiguous r-th of them, "" when there are
// fewer CPUs than ranks (then every rank may run anywhere).
std::string cpu_share(const std::vector<int>& cpus, int64_t rank, int64_t world_size) {
  const auto n = static_cast<int64_t>(cpus.size());
  if (n < world_size) return "";
  const int64_t each = n / world_size;
  std::string list;
  for (int64_t i = rank * each; i < (rank + 1) * each; ++i) {
    list += (list.empty() ? "" : ",") + std::to_string(cpus[static_cast<size_t>(i)]);
  }
  return list;
}

void bind_cpus(const std::string& list) {
  if (list.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const auto& c : split(list, ',')) CPU_SET(std::atoi(c.c_str()), &set);
  ::sched_setaffinity(0, sizeof set, &set);
}

// One line from fd into *line (without the newline), reading through
// *pending; false at EOF or an error.
bool read_line(int fd, std::string* pending, std::string* line) {
  for (;;) {
    if (const auto nl = pending->find('\n'); nl != std::string::npos) {
      *line = pending->substr(0, nl);
      pending->erase(0, nl + 1);
      return true;
    }
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    pending->append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

bool claim_trial_end() {
  static std::atomic<bool> claimed{false};
  return !claimed.exchange(true);
}

void end_ranks() {
  // The watch's way out and rank 0's may meet here.
  static std::mutex once;
  std::lock_guard<std::mutex> lock(once);
  // From now on a rank's exit is this one's doing, not news for the watch.
  claim_trial_end();
  // Gone before the host hands their GPUs to the next trial: killed, and
  // reaped for at most 5 s (one stuck in a driver call may take longer;
  // the host's kill of the group ends it then).
  for (const pid_t pid : followers()) ::kill(pid, SIGKILL);
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  for (const pid_t pid : followers()) {
    while (::waitpid(pid, nullptr, WNOHANG) == 0 && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  followers().clear();
  remove_rendezvous();
}

void remove_rendezvous() {
  static std::mutex once;
  std::lock_guard<std::mutex> lock(once);
  std::string& folder = rendezvous_folder();
  if (folder.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(folder, ec);
  folder.clear();
}

int64_t requested_world_size(const std::string& config_json) {
  try {
    return world_size_of(Json::parse(config_json));
  } catch (const Json::exception&) {
    return 1;
  }
}

// Each rank's environment, devices, CPUs and descriptors,
// in the order a rank needs them.
Ranks::Ranks(const WorkerArgs& args, int64_t world_size) {
  // Named by this process's pid, so that the host removes it after reaping
  // this process however it ended.
  std::string pattern = rendezvous_template(static_cast<int>(::getpid()));
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw Error("data-parallel trial: cannot make the rendezvous folder " + pattern + ": " +
                std::strerror(errno));
  }
  folder_ = pattern;
  rendezvous_folder() = folder_;
  if (const char* t = std::getenv("GPUSWEEP_DP_TIMEOUT_S"); t != nullptr && std::atof(t) > 0) {
    timeout_s_ = std::atof(t);
  }
  const std::string store = folder_ + "/store";
  // One GPU a rank where the trial was given as many (CUDA_VISIBLE_DEVICES
  // as the worker set it from --visible-devices); fewer (Gloo's ranks,
  // which may share: spec/gpus.hpp) go round the ranks, each rank seeing
  // one as its cuda:0.
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::vector<std::string> gpus =
      visible != nullptr ? split(visible, ',') : std::vector<std::string>{};
  const bool gpu_each = !gpus.empty();
  const std::vector<int> cpus = allowed_cpus();
  const std::string exe = self_executable();
  for (int64_t r = 1; r < world_size; ++r) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      throw Error(std::string("data-parallel trial: socketpair: ") + std::strerror(errno));
    }
    WorkerArgs a = args;
    a.mode = WorkerMode::trial;
    a.gate_fd = -1;
    a.peer_fd = 3;
    a.rank = r;
    if (gpu_each) a.visible_devices = gpus[static_cast<size_t>(r) % gpus.size()];
    const std::vector<std::string> env = {"GPUSWEEP_DP_RANK=" + std::to_string(r),
                                          "GPUSWEEP_DP_WORLD_SIZE=" + std::to_string(world_size),
                                          "GPUSWEEP_DP_STORE=" + store,
                                          "GPUSWEEP_DP_LEADER_PID=" + std::to_string(::getpid()),
                                          "GPUSWEEP_DP_CPUS=" + cpu_share(cpus, r, world_size)};
    pid_t pid = -1;
    try {
      pid = spawn_with_fds(exe, a.to_argv(), env, {{1, 1}, {2, 2}, {3, sv[1]}},
                           /*own_group=*/false);
    } catch (...) {
      ::close(sv[0]);
      ::close(sv[1]);
      throw;
    }
    ::close(sv[1]);
    followers().push_back(pid);
    Peer p;
    p.rank = r;
    p.pid = pid;
    p.fd = sv[0];
    peers_.push_back(p);
  }
  ::setenv("GPUSWEEP_DP_RANK", "0", 1);
  ::setenv("GPUSWEEP_DP_WORLD_SIZE", std::to_string(world_size).c_str(), 1);
  ::setenv("GPUSWEEP_DP_STORE", store.c_str(), 1);
  if (gpu_each) ::setenv("CUDA_VISIBLE_DEVICES", gpus[0].c_str(), 1);
  bind_cpus(cpu_share(cpus, 0, world_size));
}

int64_t Ranks::world_size() const { return static_cast<int64_t>(peers_.size()) + 1; }

RankFailure Ranks::exit_of(Peer& p) {
  // Its socket closed: it has exited, or is about to. Its status is read
  // without reaping it (WNOWAIT), so that its pid stays its own until
  // end_ranks reaps it: killing a reaped pid could kill a stranger.
  siginfo_t info{};
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (::waitid(P_PID, static_cast<id_t>(p.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string how = "closed its connection";
  if (info.si_pid == p.pid && (info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED)) {
    how = "was killed by signal " + std::to_string(info.si_status) + " (" +
          strsignal(info.si_status) + ")";
  } else if (info.si_pid == p.pid && info.si_code == CLD_EXITED) {
    how = "exited with code " + std::to_string(info.si_status);
  }
  return {"crashed",
          "rank " + std::to_string(p.rank) + " of " + std::to_string(world_size()) + " " + how};
}

std::optional<Json> Ranks::read_reply(Peer& p, RankFailure* failure, bool* closed) {
  std::string line;
  if (!read_line(p.fd, &p.pending, &line)) {
    *closed = true;  // exit_of says how, once the end is claimed
    return std::nullopt;
  }
  Json reply;
  try {
    reply = Json::parse(line);
  } catch (const Json::exception&) {
    *failure = {"failed", "rank " + std::to_string(p.rank) + " sent an unreadable reply: " + line};
    return std::nullopt;
  }
  // Events a rank's own harness wrote on its way (loading, the memory
  // cap) are for nobody; its result, a failure before it could reply.
  if (reply.contains("event") && reply["event"] != event::result) return reply;
  if (!reply.value("ok", false)) {
    *failure = {reply.value("status", "failed"),
                "rank " + std::to_string(p.rank) + " of " + std::to_string(world_size()) + ", " +
                    reply.value("phase", "step") + ": " + reply.value("message", "")};
    return std::nullopt;
  }
  return reply;
}

void Ranks::set_phase(Phase phase, int64_t at_step) {
  phase_.store(phase);
  at_step_.store(at_step);
}

// Ends the trial for a rank's failure, unless rank 0 is ending it already
// (then its own result stands, and this returns).
void Ranks::report(const RankFailure& failure) {
  noticed_ = true;
  if (claim_trial_end()) emit_and_end(failure);
}

void Ranks::emit_and_end(const RankFailure& failure) {
  event::Result r;
  r.status = failure.status;
  r.phase = phase_.load();
  r.at_step = at_step_.load();
  r.message = failure.message;
  out_->emit(r.to_json());
  finish(0);
}

// The one loop that reads every rank's socket, start to end.
void Ranks::start_watch(EventWriter& out) {
  out_ = &out;
  std::thread([this] {
    std::vector<pollfd> fds;
    for (const Peer& p : peers_) fds.push_back({p.fd, POLLIN, 0});
    for (;;) {
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR) continue;
        report(
            {"failed", std::string("cannot watch the other ranks: poll: ") + std::strerror(errno)});
        return;
      }
      // Every whole line that arrived on every socket. A rank that died is
      // the cause to report before the failures it caused on the others
      // (their collective with it failed), whatever their order here.
      std::optional<RankFailure> failed;
      Peer* dead = nullptr;
      for (size_t i = 0; i < fds.size() && dead == nullptr; ++i) {
        if (fds[i].revents == 0) continue;
        Peer& p = peers_[i];
        do {
          RankFailure failure;
          bool closed = false;
          auto reply = read_reply(p, &failure, &closed);
          if (closed) {
            dead = &p;
            break;
          }
          if (!reply) {
            if (!failed) failed = failure;
            break;
          }
          if (reply->contains("event")) continue;  // not a reply (see read_reply)
          std::lock_guard<std::mutex> lock(mutex_);
          p.replies.push_back(std::move(*reply));
          replied_.notify_all();
        } while (p.pending.find('\n') != std::string::npos);
      }
      if (dead != nullptr) {
        // Claimed first, then how it ended (which may take a moment to
        // show): rank 0's failing collective must not report it first.
        noticed_ = true;
        if (!claim_trial_end()) return;
        emit_and_end(exit_of(*dead));
      }
      if (failed) {
        report(*failed);
        return;
      }
    }
  }).detach();
}

Json Ranks::next_reply(Peer& p, const char* what) {
  std::unique_lock<std::mutex> lock(mutex_);
  // A rank alive but stuck (in the plugin's stats, say) would keep rank 0
  // here for good, heartbeats and all: it fails the trial after the
  // rendezvous' timeout, which no healthy reply comes near.
  // Setup has no deadline of its own: a slow one is the host's timeout_s.
  const bool setup = std::strcmp(what, "setup") == 0;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s_);
  const auto ready = [&p] { return !p.replies.empty(); };
  if (setup) {
    replied_.wait(lock, ready);
  } else if (!replied_.wait_until(lock, deadline, ready)) {
    lock.unlock();
    char text[64];
    std::snprintf(text, sizeof text, "%g", timeout_s_);
    report({"failed", "rank " + std::to_string(p.rank) + " of " + std::to_string(world_size()) +
                          " did not answer '" + what + "' within " + text +
                          " s (GPUSWEEP_DP_TIMEOUT_S): it is stuck"});
    for (;;) ::pause();  // rank 0 is ending the trial meanwhile
  }
  Json reply = std::move(p.replies.front());
  p.replies.pop_front();
  return reply;
}

std::optional<StepComm> per_step_comm(const std::vector<std::vector<double>>& ranks) {
  if (ranks.empty()) return std::nullopt;
  const size_t steps = ranks.front().size();
  for (const auto& r : ranks) {
    if (r.size() != steps) return std::nullopt;
  }
  if (steps == 0) return std::nullopt;
  StepComm out;
  out.steps = static_cast<int64_t>(steps);
  for (size_t i = 0; i < steps; ++i) {
    double low = ranks.front()[i], sum = 0;
    for (const auto& r : ranks) {
      low = std::min(low, r[i]);
      sum += r[i];
    }
    out.comm_s += low;
    out.imbalance_s += sum / static_cast<double>(ranks.size()) - low;
  }
  return out;
}

void Ranks::await_ready() {
  for (Peer& p : peers_) next_reply(p, "setup");
  // The store stays until end_ranks: a communicator made after setup (a
  // collective on another device or group) or NCCL's dump on a timeout
  // opens it again; removing it after setup failed those.
}

namespace {

bool send_line(int fd, const Json& j) {
  std::string line = j.dump() + "\n";
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::send(fd, p, left, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

void Ranks::send_steps(int64_t n, int64_t at_step) {
  // A rank that is gone: the watch reports it.
  for (Peer& p : peers_) send_line(p.fd, {{"op", "steps"}, {"n", n}, {"at_step", at_step}});
}

void Ranks::collect(std::vector<double>& seconds, double* samples, double* secondary) {
  for (Peer& p : peers_) {
    const Json reply = next_reply(p, "steps");
    seconds.push_back(reply.value("seconds", 0.0));
    *samples += reply.value("samples", 0.0);
    *secondary += reply.value("secondary", 0.0);
  }
}

void Ranks::command(const Json& op) {
  for (Peer& p : peers_) send_line(p.fd, op);
  for (Peer& p : peers_) next_reply(p, op.value("op", "command").c_str());
}

std::vector<Json> Ranks::stats() {
  for (Peer& p : peers_) send_line(p.fd, {{"op", "stats"}});
  std::vector<Json> out;
  for (Peer& p : peers_) out.push_back(next_reply(p, "stats").value("stats", Json::object()));
  return out;
}

std::string Ranks::ranks_not_running() const {
  std::string out;
  for (const Peer& p : peers_) {
    std::ifstream in("/proc/" + std::to_string(p.pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), {});
    const auto close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) continue;
    const char state = stat[close + 2];
    const char* what = state == 'T' || state == 't' ? "stopped"
                       : state == 'D'               ? "in uninterruptible sleep (a driver call?)"
                       : state == 'Z'               ? "exited"
                                                    : nullptr;
    if (what == nullptr) continue;
    out +=
        (out.empty() ? "" : ", ") + std::string("rank ") + std::to_string(p.rank) + " is " + what;
  }
  return out;
}

void Ranks::await_failure(double grace_s) {
  // The watch reports a rank it saw fail, and ends the process; rank 0's
  // own error stands when none did within grace_s.
  const auto deadline = Clock::now() + std::chrono::duration<double>(grace_s);
  while (Clock::now() < deadline) {
    if (noticed_) {
      for (;;) ::pause();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// ---- the follower ---------------------------------------------------------

namespace {

class Follower {
 public:
  Follower(const WorkerArgs& args, const gpusweep_plugin* t, EventWriter& reply)
      : args_(args), plugin_(t), reply_(reply) {}

  [[noreturn]] void run() {
    const gpusweep_status st = plugin_->create(args_.config_json.c_str(), &inst_);
    if (st != GPUSWEEP_STATUS_OK || inst_ == nullptr) fail(st, "setup");
    reply_.emit({{"ok", true}, {"ready", true}});
    std::string pending, line;
    while (read_line(args_.peer_fd, &pending, &line)) serve(Json::parse(line));
    finish(0);  // the leader is gone or done
  }

 private:
  [[noreturn]] void fail(gpusweep_status st, const char* phase) {
    reply_.emit({{"ok", false},
                 {"status", st == GPUSWEEP_STATUS_OK ? "failed" : status_name(st)},
                 {"phase", phase},
                 {"message", plugin_->error_message(inst_)}});
    finish(0);
  }
  void check(gpusweep_status st, const char* phase) {
    if (st != GPUSWEEP_STATUS_OK) fail(st, phase);
  }

  void serve(const Json& cmd) {
    const std::string op = cmd.value("op", "");
    if (op == "steps") {
      gpusweep_step_result r{};
      double samples = 0, secondary = 0;
      const auto t0 = Clock::now();
      for (int64_t s = 0; s < cmd.value("n", int64_t{0}); ++s) {
        r.struct_size = sizeof r;
        r.samples = 0;
        r.secondary_samples = 0;
        check(plugin_->step(inst_, &r), "step");
        samples += r.samples;
        secondary += r.secondary_samples;
      }
      check(plugin_->synchronize(inst_), "step");
      const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      reply_.emit(
          {{"ok", true}, {"seconds", seconds}, {"samples", samples}, {"secondary", secondary}});
    } else if (op == "pause" || op == "resume") {
      if (turns_ != nullptr)
        check(op == "pause" ? turns_->pause(inst_) : turns_->resume(inst_), op.c_str());
      reply_.emit({{"ok", true}});
    } else if (op == "window") {
      if (window_ != nullptr) {
        check(cmd.value("begin", false) ? window_->begin(inst_) : window_->end(inst_), "window");
      }
      reply_.emit({{"ok", true}});
    } else if (op == "stats") {
      const char* stats = nullptr;
      check(plugin_->stats(inst_, &stats), "stats");
      reply_.emit({{"ok", true}, {"stats", parse_or_raw(stats)}});
    } else {
      reply_.emit({{"ok", false}, {"status", "failed"}, {"message", "unknown command " + op}});
    }
  }

  const WorkerArgs& args_;
  const gpusweep_plugin* plugin_;
  EventWriter& reply_;
  gpusweep_instance* inst_ = nullptr;
  const gpusweep_ext_measure_window* window_ =
      find_extension<gpusweep_ext_measure_window>(plugin_, GPUSWEEP_EXT_MEASURE_WINDOW);
  const gpusweep_ext_turns* turns_ =
      find_extension<gpusweep_ext_turns>(plugin_, GPUSWEEP_EXT_TURNS);
};

}  // namespace

void run_follower(const WorkerArgs& args) {
  // Started by the leader, which it must not outlive (main() asked for
  // PR_SET_PDEATHSIG; a leader that died before that leaves us adopted).
  const char* leader = std::getenv("GPUSWEEP_DP_LEADER_PID");
  if (leader == nullptr || ::getppid() != static_cast<pid_t>(std::atol(leader))) finish(71);
  if (const char* cpus = std::getenv("GPUSWEEP_DP_CPUS")) bind_cpus(cpus);
  if (args.visible_devices) ::setenv("CUDA_VISIBLE_DEVICES", args.visible_devices->c_str(), 1);
  std::signal(SIGPIPE, SIG_IGN);
  WorkerArgs a = args;
  a.peer_fd = protect_protocol_fd(args.peer_fd);
  EventWriter& reply = *new EventWriter(a.peer_fd);
  // Loading and the memory cap report on the reply socket as a trial's
  // would: rank 0's watch skips their events and takes a result as this
  // rank's failure, with its message.
  const LoadedPlugin plugin = load_and_announce(a.plugin_path, a.config_json, reply);
  // The trial's cap holds for every rank, each process its own.
  if (a.max_memory_bytes > 0) {
    std::promise<void> ready;
    ready.set_value();
    std::future<void> beat = ready.get_future();
    cap_trial_memory(plugin.table, a, beat, reply);
  }
  Follower(a, plugin.table, reply).run();
}

}  // namespace gpusweep::host
