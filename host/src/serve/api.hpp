// What `gpusweep serve` answers: one self-contained page and a small JSON
// API over result databases, read-only.
//
//   GET /                         the page (updates itself about once a second)
//   GET /api/runs[?since=CURSOR]  every run of every database with its progress
//                                 (done, running, failed of planned; an ETA that
//                                 counts the running trials' partial progress)
//                                 and its version (and its ETA as text), the
//                                 databases that could not be read
//                                 ("unreadable": index, path, why), the paths
//                                 given that are not there yet ("waiting"), and
//                                 a cursor; with since = the cursor the last
//                                 answer gave, "unchanged" says whether any
//                                 run's version changed since
//   GET /api/run?db=I&id=N[&since=CURSOR]
//                                 one run: its trials (no blocks; a failed
//                                 one with its reason and log tail), the
//                                 comparison as `compare` gives it, times to
//                                 target, a tune's race, the running trials'
//                                 blocks so far, compare's table and knob table
//                                 as text cells, best's pick, the run's version it shows
//                                 (as /api/runs gives it), and a cursor naming
//                                 the run; with since = the cursor the last
//                                 answer for this run gave,
//                                 only the trials that changed since
//                                 ("delta": true, "removed": ids gone), or
//                                 {"unchanged": true} when nothing did
//   GET /api/report?db=I&id=N     the run's HTML report (`report --html`'s renderer)
//   GET /api/history?db=I&workload=W
//                                 the workload's runs in database I as series
//                                 with their change points (`history --html`'s
//                                 page), under the report's policy
//
// The page comes with the run list drawn in (a first paint without
// JavaScript), and numbers come formatted by the server with the command
// line's functions: the page shows them as compare, best and run print them.
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
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpusweep::db {
class Snapshots;
}  // namespace gpusweep::db

namespace gpusweep::host {

struct StoredTrial;

class ServeApi {
 public:
  // share_s: how long an answer's look at a database is shared by the
  // requests that follow (the run list, a run's version): 23 pages polling
  // once a second cost about 2 looks a second, not 46 (each counts the
  // run's trials), at the price of answers up to share_s older.
  // snapshot: whether a database is read through local copies
  // (db/snapshot.hpp): automatic for those on a network filesystem, where
  // SQLite's WAL cannot be shared with a writer on another host.
  enum class Snapshot { automatic, always, never };
  // folders: the folders db_paths came from (a run folder's shards), and
  // paths given that are not there yet, looked at again whenever the run
  // list is read afresh: a *.db file that appears in one (a shard whose task
  // started later), or a database that appears at such a path (serve opened
  // before the first run), is served from then on, with the next index, so
  // that the indices already given stay as they were.
  explicit ServeApi(std::vector<std::string> db_paths, double share_s = kShareS,
                    Snapshot snapshot = Snapshot::automatic,
                    std::vector<std::string> folders = std::vector<std::string>());
  static constexpr double kShareS = 0.5;
  // A copy is made again at most this often (longer for a database that
  // takes long to copy: see Snapshots).
  static constexpr double kSnapshotIntervalS = 2.0;
  // The *.db files in a folder and below, sorted.
  static std::vector<std::string> databases_in(const std::string& folder);
  // The databases to serve, each of `given` (serve's --db) a file or a
  // folder whose *.db files (a run folder's shards) are all served; the
  // folders in *folders, to be looked at again for shards that start later
  // (an empty one is accepted), and so is a path that does not exist yet:
  // waited for.
  static std::vector<std::string> databases_given(const std::vector<std::string>& given,
                                                  std::vector<std::string>* folders);
  // --snapshot's value (auto, always, never); UsageError naming the choices.
  static Snapshot snapshot_mode(const std::string& text);
  // How many databases are served now, and database d's path.
  size_t databases() const;
  std::string path(size_t db) const;
  // How database d is read, for the server's first lines: "" when directly,
  // else why and how through copies. Through copies are read: a database
  // on a network filesystem (automatic), every one (always), and one an
  // older gpusweep wrote (whatever the mode), whose copy is upgraded once
  // instead of each request making and upgrading a copy of its own.
  std::string reading(size_t db) const;
  // The local copies made of database d so far (0: read directly).
  int64_t copies(size_t db) const;
  // The folders of the local copies (none when every database is read
  // directly): what a server stopped by a signal removes on its way out.
  std::vector<std::string> copy_folders() const;
  HttpResponse handle(const HttpRequest& request) const;
  // A workload's name longer than this is refused (names are identifiers).
  static constexpr size_t kMaxWorkloadName = 200;

  // The parts, for tests. run() gives the trials as "trials", in run order,
  // and each config's settings as "labels" (by config number).
  nlohmann::json runs(const std::string& since) const;
  nlohmann::json run(size_t db, int64_t id) const;

  // A run's details through a cache: computed again only when the run's
  // version changed, and for a running run at most once a second (its
  // answer up to a second old), by one request while the others wait for
  // it: a page open in many browsers costs one computation, not one each.
  // Each trial's row is kept as JSON text with the revision at which it
  // last changed, so that an answer to a cursor carries only the trials
  // that changed since (at 6,000 trials the whole answer was 2.6 MB, and
  // every open page asked for it every second), and a whole answer is
  // serialised once per revision, not once per request. Nothing (null) for
  // no such run.
  std::shared_ptr<const std::string> cached_run(size_t db, int64_t id,
                                                const std::string& since = "") const;

 private:
  // /api/history's page: read afresh for each request (no cache: it is
  // asked for when a finished run is shown, not every second).
  HttpResponse history(size_t db, const std::string& workload) const;

  struct Row {
    int64_t ordinal = 0;
    std::string text;  // the row's JSON
    uint64_t rev = 0;  // the revision at which it last changed
  };
  struct Cached {
    std::mutex computing;
    std::string version;                            // empty: not computed yet
    std::chrono::steady_clock::time_point at;       // computed
    std::chrono::steady_clock::time_point checked;  // its version last read
    double compute_s = 0;                           // what computing it took
    bool exists = false;
    bool live = false;                          // computed while its host ran it
    std::string head;                           // the answer without its trials, as JSON text
    std::vector<std::pair<int64_t, Row>> rows;  // sorted by trial id
    std::vector<std::pair<int64_t, uint64_t>> removed;  // trial id, revision gone
    uint64_t rev = 0;                                   // the newest revision
    std::shared_ptr<const std::string> full;            // the whole answer at rev
    std::string full_version;                           // and the version it said
    std::string cursor_prefix;  // "GENERATION.DB.ID.": a cursor names its run
  };
  // A run's answer in two parts: everything but its trials (null: no such
  // run), and each trial's row as JSON text, by id, in run order.
  struct RunParts {
    nlohmann::json head;
    // Fields of the head made as JSON text (the comparison), by key.
    std::vector<std::pair<std::string, std::string>> raw;
    std::vector<std::pair<int64_t, Row>> rows;
  };
  RunParts run_parts(size_t db, int64_t id) const;
  // A run's trials as rows, with each config's settings (labels, by number).
  static std::pair<nlohmann::json, std::vector<std::pair<int64_t, Row>>> trial_rows(
      const std::vector<StoredTrial>& trials, const std::vector<std::string>& keys);
  // Folds a fresh answer into `entry`, raising the revision of what changed.
  static void update(Cached& entry, RunParts answer);
  // The answer to `since` from entry's state (its lock held).
  std::shared_ptr<const std::string> answer(Cached& entry, const std::string& since) const;

  // The run list as the database gave it (cursor, runs).
  nlohmann::json list_runs() const;
  // The run list shared for share_s (runs_mu_ held), read again after.
  const nlohmann::json& shared_list() const;
  // A run's version and whether its host runs it, from the shared list
  // (one count of every run's trials serves both routes); none: no such run.
  std::optional<std::pair<std::string, bool>> run_state(size_t db, int64_t id) const;

  // One served database: its path, and its local copies (null: read
  // directly) with why they are made.
  struct Served {
    std::string path;
    std::shared_ptr<db::Snapshots> snapshots;
    std::string why;
  };
  // Database d (null: no such); the entry lives while the pointer does.
  std::shared_ptr<const Served> served(size_t d) const;
  // Appends a database to the list (dbs_mu_ held).
  void add(const std::string& path) const;
  // Appends the *.db files new in the watched folders, and the databases
  // that appeared at watched paths.
  void rescan() const;
  // The watched paths not there yet.
  std::vector<std::string> waiting() const;
  // The file to open for database d: the database, or its newest local
  // copy (kept on disk while the pointer lives); null: no such database.
  std::shared_ptr<const std::string> readable(size_t db) const;

  double share_s_;
  Snapshot snapshot_;
  std::vector<std::string> folders_;
  mutable std::mutex dbs_mu_;
  mutable std::vector<std::shared_ptr<const Served>> dbs_;
  mutable std::mutex runs_mu_;
  mutable nlohmann::json runs_list_;
  mutable std::chrono::steady_clock::time_point runs_at_;
  std::string generation_;  // this server's cursors begin with it
  mutable std::mutex cache_mu_;
  mutable std::map<std::pair<size_t, int64_t>, std::shared_ptr<Cached>> cache_;
};

}  // namespace gpusweep::host
