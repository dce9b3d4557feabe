// The worker side of the fork server (`gpusweep-worker --serve FD`; the
// host's side is run/fork_server.hpp): the plugin loaded once, and a trial
// forked from it for each request.
#include "worker/worker.hpp"

#include "protocol/fork_messages.hpp"
#include "spec/manifest.hpp"
#include "support/spawn.hpp"
#include "worker/loader.hpp"
#include "worker/trial.hpp"

#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

namespace {

using Json = nlohmann::json;

// Threads of this process (/proc/self/task), or -1 if unknown.
int thread_count() {
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    (void)e;
    ++n;
  }
  return ec ? -1 : n;
}

// Whether loading the plugin initialised CUDA's driver: a static
// initialiser that asks for the device count runs cuInit without necessarily
// starting a thread, and a process forked after that cannot use CUDA. Asked
// of libcuda itself, only when loading brought it in (RTLD_NOLOAD: never
// loaded here): cuDeviceGetCount answers CUDA_ERROR_NOT_INITIALIZED (3)
// until cuInit has run. (A loaded library answers to its soname, so the
// tests' fake libcuda.so.1, loaded by path, is found the same way.)
bool cuda_initialised() {
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (driver == nullptr) return false;  // not loaded: nothing initialised it
  using GetCount = int (*)(int*);
  auto get_count = reinterpret_cast<GetCount>(::dlsym(driver, "cuDeviceGetCount"));
  int count = 0;
  const int status = get_count != nullptr ? get_count(&count) : 3;
  ::dlclose(driver);
  return status != 3;
}

// The fork server's grandchild: becomes a trial worker on the descriptors it
// was sent, once the host has adopted it.
[[noreturn]] void become_trial(const std::vector<std::string>& request, const std::vector<int>& fds,
                               int control_fd, pid_t host, pid_t server,
                               const LoadedPlugin& plugin) {
  ::setpgid(0, 0);  // its own group, killed as one by the host
  ::close(control_fd);
  // The intermediate parent exits at once: wait to be the host's (a
  // subreaper) before asking to die with the host, as a spawned worker does.
  for (int i = 0; ::getppid() != host; ++i) {
    if (::getppid() == 1 || i > 20000) _exit(71);  // not adopted: nobody would wait for it
    ::usleep(50);
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != host) _exit(71);
  // Says where the process came from, to the trial's plugin and to tests.
  ::setenv("GPUSWEEP_FORK_SERVER_PID", std::to_string(server).c_str(), 1);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : kChildDefaultSignals) std::signal(sig, SIG_DFL);
  const int null = ::open("/dev/null", O_RDONLY);
  if (null >= 0 && null != 0) {
    ::dup2(null, 0);
    ::close(null);
  }
  // Out of the way of the targets first, whatever numbers they came in on.
  std::vector<int> moved;
  for (int f : fds) {
    moved.push_back(::fcntl(f, F_DUPFD, 20));
    ::close(f);
  }
  ::dup2(moved[1], 1);
  ::dup2(moved[2], 2);
  ::dup2(moved[0], 3);
  if (moved.size() > 3) ::dup2(moved[3], kGateFd);
  for (int f : moved) ::close(f);
  std::optional<WorkerArgs> args;
  try {
    args = parse_worker_args(request);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fork server: bad request: %s\n", e.what());
  }
  if (!args) finish(2);
  args->proto_fd = 3;
  detail::run_trial(*args, &plugin);
  finish(0);
}

}  // namespace

int run_fork_server(const WorkerArgs& args) {
  const int fd = args.serve_fd;
  auto refuse = [fd](const std::string& why) {
    send_message(fd, Json{{"ready", false}, {"error", why}}.dump());
    finish(0);
  };
  // Loaded as a worker would, nothing run but what loading runs (the
  // manifest): no thread pool exists yet for fork to break.
  LoadedPlugin plugin;
  try {
    plugin = load_plugin(args.plugin_path);
  } catch (const std::exception& e) {
    refuse(e.what());
  }
  if (const int threads = thread_count(); threads != 1) {
    refuse("loading the plugin left " + std::to_string(threads) +
           " threads in the process; forking it could deadlock a trial");
  }
  if (cuda_initialised()) {
    refuse(
        "loading the plugin initialised CUDA (its driver's cuInit ran); a trial forked "
        "from it could not use the GPU");
  }
  const pid_t host = ::getppid();
  const pid_t server = ::getpid();
  if (!send_message(fd, Json{{"ready", true}, {"pid", static_cast<long>(::getpid())}}.dump())) {
    finish(0);
  }
  for (;;) {
    std::string text;
    std::vector<int> fds;
    if (!recv_message(fd, text, fds)) finish(0);  // the host closed its end
    const Json request = Json::parse(text, nullptr, false);
    std::vector<std::string> worker_args;
    if ((fds.size() != 3 && fds.size() != 4) || !request.is_array()) {
      for (int f : fds) ::close(f);
      send_message(fd, Json{{"error", "malformed request"}}.dump());
      continue;
    }
    for (const auto& a : request) worker_args.push_back(value_text(a));
    const pid_t middle = ::fork();
    if (middle == 0) {
      const pid_t trial = ::fork();
      if (trial == 0) become_trial(worker_args, fds, fd, host, server, plugin);
      send_message(fd, trial > 0
                           ? Json{{"pid", static_cast<long>(trial)}}.dump()
                           : Json{{"error", std::string("fork: ") + std::strerror(errno)}}.dump());
      _exit(0);
    }
    for (int f : fds) ::close(f);
    if (middle < 0) {
      send_message(fd, Json{{"error", std::string("fork: ") + std::strerror(errno)}}.dump());
      continue;
    }
    while (::waitpid(middle, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

}  // namespace gpusweep::host
