// gpusweep-worker: the process side of one trial (not for users; the host
// starts it). A program of its own so that the process a plugin runs in holds
// the worker layer and what it uses, and no database and no Asio.
#include "protocol/worker_args.hpp"
#include "support/error.hpp"
#include "worker/ranks.hpp"
#include "worker/worker.hpp"

#include <sys/prctl.h>
#include <unistd.h>
#include <csignal>
#include <iostream>

namespace gpusweep::host {
namespace {

int worker_main(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << "usage: gpusweep-worker --plugin FILE [--describe | --check --config JSON |\n"
                   "                       --probe | --config JSON --measure JSON | --serve FD]\n\n"
                   "Internal: runs one trial in this process and streams JSON events on\n"
                   "--proto-fd. The host starts it; users do not.\n\n"
                << worker_options_help();
      return 0;
    }
  }
  const WorkerArgs w = parse_worker_args(args);
  // A worker outlives nothing: when the host dies (SIGKILL included) the
  // kernel kills it too, instead of leaving it to finish a trial nobody will
  // record. (Started after the host already died, it is orphaned: stop.)
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return 1;
  switch (w.mode) {
    case WorkerMode::serve:
      return run_fork_server(w);
    case WorkerMode::plugin_check:
      return run_plugin_check_worker(w);
    default:
      if (w.peer_fd >= 0) run_follower(w);  // a data-parallel trial's rank > 0
      return run_worker(w);
  }
}

}  // namespace
}  // namespace gpusweep::host

int main(int argc, char** argv) {
  try {
    return gpusweep::host::worker_main(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const gpusweep::UsageError& e) {
    std::cerr << "gpusweep-worker: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "gpusweep-worker: " << e.what() << "\n";
    return 1;
  }
}
