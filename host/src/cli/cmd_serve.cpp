// `gpusweep serve`: a live, read-only view of result databases in a browser
// (serve/api.hpp: the page and its JSON API; serve/http.hpp: the server).
#include "cli/cli.hpp"
#include "cli/requests.hpp"
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

// The --db paths not there yet, which are served once they appear.
std::string not_there_yet(const std::vector<std::string>& given) {
  std::string waiting;
  for (const auto& g : given) {
    if (!std::filesystem::exists(g)) waiting += (waiting.empty() ? "" : ", ") + g;
  }
  return waiting;
}

int run_serve(const po::variables_map& vm) {
  const std::vector<std::string> given = vm.count("db") != 0U
                                             ? vm["db"].as<std::vector<std::string>>()
                                             : std::vector<std::string>{"gpusweep.db"};
  std::vector<std::string> folders;
  const std::vector<std::string> dbs = ServeApi::databases_given(given, &folders);
  const HttpOptions options = http_options_of(vm);
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

}  // namespace

// The server's address, port, access token and host names from the
// command line (and $GPUSWEEP_SERVE_TOKEN).
HttpOptions http_options_of(const po::variables_map& vm) {
  HttpOptions options;
  options.bind = vm["bind"].as<std::string>();
  const int64_t port = vm["port"].as<int64_t>();
  if (port < 0 || port > 65535) {
    throw UsageError("--port " + std::to_string(port) + ": give 0 to 65535");
  }
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

CommandDef cmd_serve() {
  return {"serve",
          "watch sweeps and races live in a browser (read-only)",
          "Serves a live view of result databases to a browser: every run with its progress\n"
          "and ETA, each config's ratio to the baseline as rounds arrive, a tune's race,\n"
          "failures with their log tail, and a finished run's report. It only reads, never\n"
          "disturbs the sweeps it shows, binds 127.0.0.1 unless told otherwise, and every\n"
          "request must carry the access token in the URL it prints.",
          "serve.md",
          {texts("db", "FILE|FOLDER",
                 "results database to show, or a folder of them (a run folder's shards) "
                 "(default gpusweep.db)"),
           integer("port", "PORT", "TCP port (0: any free port; the line it prints says which)",
                   HttpOptions{}.port),
           text("bind", "ADDR",
                "address to listen on (0.0.0.0: every address; plain HTTP, so off this machine "
                "prefer an SSH tunnel to the loopback address)",
                HttpOptions{}.bind),
           text("token", "TOKEN",
                "the access token every request must carry (default: $GPUSWEEP_SERVE_TOKEN, else "
                "a random one, printed in the URL; the page keeps it in a cookie of this "
                "server's)"),
           texts("allow-host", "NAME",
                 "a host name (or name:port) the browser may use for this server besides the "
                 "loopback address, localhost and --bind's address (a proxy's or tunnel's name)"),
           text("snapshot", "MODE",
                "read databases through local copies: auto (those on a network filesystem: NFS, "
                "SMB, Lustre, GPFS, Ceph, FUSE...), always, or never",
                "auto")},
          {},
          {},
          run_serve};
}

}  // namespace gpusweep::host
