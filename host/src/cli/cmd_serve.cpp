// `gpusweep serve`: a live, read-only view of result databases in a browser
// (serve/api.hpp: the page and its JSON API; serve/http.hpp: the server).
#include "cli/cli.hpp"
#include "serve/api.hpp"
#include "serve/http.hpp"
#include "serve/process.hpp"
#include "support/error.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>

namespace gpusweep::host {

namespace {

// The server's address, port, access token and host names from the
// command line (and $GPUSWEEP_SERVE_TOKEN).
HttpOptions http_options(const po::variables_map& vm) {
  HttpOptions options;
  options.bind = vm["bind"].as<std::string>();
  const unsigned port = vm["port"].as<unsigned>();
  if (port > 65535) throw UsageError("--port " + std::to_string(port) + ": at most 65535");
  options.port = static_cast<uint16_t>(port);
  const char* env_token = std::getenv("GPUSWEEP_SERVE_TOKEN");
  if (vm.count("token") != 0U || (env_token != nullptr && *env_token != '\0')) {
    const bool flag = vm.count("token") != 0U;
    options.token = flag ? vm["token"].as<std::string>() : std::string(env_token);
    if (options.token.size() < 16) {
      throw UsageError(std::string(flag ? "--token" : "GPUSWEEP_SERVE_TOKEN") +
                       ": give at least 16 characters (it is all that guards the view)");
    }
  } else {
    options.token = random_token();
  }
  if (vm.count("allow-host") != 0U) {
    options.allowed_hosts = vm["allow-host"].as<std::vector<std::string>>();
  }
  return options;
}

// The --db paths not there yet, which are served once they appear.
std::string not_there_yet(const std::vector<std::string>& given) {
  std::string waiting;
  for (const auto& g : given) {
    if (!std::filesystem::exists(g)) waiting += (waiting.empty() ? "" : ", ") + g;
  }
  return waiting;
}

}  // namespace

int cmd_serve(const Args& args) {
  po::options_description o;
  o.add_options()("db", po::value<std::vector<std::string>>()->composing(),
                  "results database to show, or a folder of them (a run folder's shards); "
                  "repeatable (default gpusweep.db)")(
      "port", po::value<unsigned>()->default_value(8080),
      "TCP port (0: any free port; the line it prints says which)")(
      "bind", po::value<std::string>()->default_value("127.0.0.1"),
      "address to listen on (0.0.0.0: every address; plain HTTP, so off this machine "
      "prefer an SSH tunnel to the loopback address)")(
      "token", po::value<std::string>(),
      "the access token every request must carry (default: $GPUSWEEP_SERVE_TOKEN, else a "
      "random one, printed in the URL; the page keeps it in a cookie of this server's)")(
      "allow-host", po::value<std::vector<std::string>>()->composing(),
      "a host name (or name:port) the browser may use for this server besides the loopback "
      "address, localhost and --bind's address (a proxy's or tunnel's name); repeatable")(
      "snapshot", po::value<std::string>()->default_value("auto"),
      "read databases through local copies: auto (those on a network filesystem: NFS, SMB, "
      "Lustre, GPFS, Ceph, FUSE...), always, or never");
  po::positional_options_description pos;
  auto p = parse_command(
      "serve",
      "[--db FILE|FOLDER ...] [--port 8080] [--bind 127.0.0.1] [--token T] [--allow-host NAME]",
      "Serves a live view of result databases to a browser: every run with its\n"
      "progress (done, running and failed trials of those planned) and an ETA, each\n"
      "config's ratio to the baseline with its interval as rounds arrive, a tune's\n"
      "race, failures with their reason and log tail, and a finished run's report.\n"
      "The page updates itself about once a second and asks only for what changed.\n\n"
      "It never disturbs the sweeps it shows: it only reads (GET and HEAD; every\n"
      "connection read-only, opened and closed within one request, so no read\n"
      "transaction outlives a request and the writer's checkpoints go on), and\n"
      "kill -9 of it at any moment leaves the databases as they were. It binds\n"
      "127.0.0.1 unless told otherwise, and every request must carry the access token\n"
      "in the URL it prints, so that other users of the machine read nothing; it\n"
      "answers only requests that name it (the Host header: its address, localhost\n"
      "or --allow-host's names) and, but for the page itself, only those of its own\n"
      "page, so that no other web page reads through the browser. A database that\n"
      "cannot be read is named in the list and the others go on; a folder given with\n"
      "--db is looked at again as the list refreshes, so shards that start later\n"
      "appear. It runs at niceness 10 and the lowest best-effort\n"
      "I/O priority, so that the sweeps on the same machine get the CPU and disk\n"
      "first. A database on a network filesystem (a Slurm run folder's shards,\n"
      "written from other hosts) is never opened by SQLite there, whose WAL cannot be\n"
      "shared across hosts: it is read through local copies, checked to be whole and\n"
      "made again when it changed (at most every 2 s, or ten times what a copy took).",
      o, pos, args);
  if (p.help) return 0;
  const auto& vm = p.vm;
  const std::vector<std::string> given = vm.count("db") != 0U
                                             ? vm["db"].as<std::vector<std::string>>()
                                             : std::vector<std::string>{"gpusweep.db"};
  std::vector<std::string> folders;
  const std::vector<std::string> dbs = ServeApi::databases_given(given, &folders);
  const HttpOptions options = http_options(vm);
  const ServeApi::Snapshot snapshot = ServeApi::snapshot_mode(vm["snapshot"].as<std::string>());
  // Before any thread starts: they inherit it, and the signal mask.
  const std::string priority_note = yield_to_writers();
  const sigset_t stop_signals = block_stop_signals();
  const ServeApi api(dbs, ServeApi::kShareS, snapshot, folders);
  remove_on_stop(stop_signals, [&api] { return api.copy_folders(); });
  HttpServer server(options, [&api](const HttpRequest& r) { return api.handle(r); });
  const std::string host =
      options.bind.find(':') != std::string::npos ? "[" + options.bind + "]" : options.bind;
  const std::string waiting = not_there_yet(given);
  std::cout << "serving " << dbs.size() << (dbs.size() == 1 ? " database" : " databases")
            << (!waiting.empty()  ? " (waiting for " + waiting + " to appear)"
                : folders.empty() ? ""
                                  : " (and those that appear in the folders given)")
            << " read-only on http://" << host << ":" << server.port() << "/"
            << "?token=" << options.token << "  (Ctrl-C stops it)" << priority_note << "\n";
  for (size_t i = 0; i < dbs.size(); ++i) {
    const std::string how = api.reading(i);
    std::cout << "  db " << i << ": " << dbs[i] << (how.empty() ? "" : " " + how) << "\n";
  }
  std::cout << std::flush;
  server.run();
  return 0;
}

}  // namespace gpusweep::host
