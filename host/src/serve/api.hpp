// What `gpusweep serve` answers: one self-contained page and a small JSON
// API over result databases, read-only.
//
//   GET /                         the page (updates itself about once a second)
//   GET /api/runs[?since=CURSOR]  every run of every database with its progress
//                                 (done, running, failed of planned; an ETA that
//                                 counts the running trials' partial progress)
//                                 and its version; with since = the cursor the
//                                 last answer gave, only the runs whose version
//                                 changed carry their details ("changed")
//   GET /api/run?db=I&id=N        one run: its trials (no blocks), the
//                                 comparison as `compare` gives it, times to
//                                 target, a tune's race, failures with their
//                                 log tails
//   GET /api/report?db=I&id=N     the run's HTML report (`report --html`'s renderer)
//
// Databases are named by their index in the server's list, never by a path
// from the URL. Every request opens its own read-only connection and closes
// it before answering, so no read transaction outlives a request: the
// writer's checkpoints are never starved, and a killed server leaves nothing
// behind.
#pragma once

#include "serve/http.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace gpusweep::host {

class ServeApi {
 public:
  explicit ServeApi(std::vector<std::string> db_paths);
  HttpResponse handle(const HttpRequest& request) const;

  // The parts, for tests.
  nlohmann::json runs(const std::string& since) const;
  nlohmann::json run(size_t db, int64_t id) const;

  // A run's details through a cache: computed again only when the run's
  // version changed, and for a running run at most once a second (its
  // answer up to a second old), by one request while the others wait for
  // it: a page open in many browsers costs one computation, not one each.
  // Kept as the JSON text it answers with: serialised once per computation,
  // not once per request (at thousands of trials that text is a megabyte,
  // and 20 open pages asked for it every second). Nothing (null) for no such
  // run.
  std::shared_ptr<const std::string> cached_run(size_t db, int64_t id) const;

 private:
  struct Cached {
    std::mutex computing;
    std::string version;
    std::chrono::steady_clock::time_point at;
    std::shared_ptr<const std::string> body;  // null: not computed yet
  };
  std::vector<std::string> dbs_;
  mutable std::mutex cache_mu_;
  mutable std::map<std::pair<size_t, int64_t>, std::shared_ptr<Cached>> cache_;
};

}  // namespace gpusweep::host
