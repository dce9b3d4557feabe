// `gpusweep serve`'s run list (GET /api/runs): every run of every served
// database with its progress, ETA and version, shared between requests for
// share_s; and what kind of run a spec makes.
#include "serve/api.hpp"

#include "analysis/run_alive.hpp"
#include "analysis/stored.hpp"
#include "serve/api_internal.hpp"
#include "spec/hashing.hpp"
#include "spec/tune.hpp"
#include "support/format.hpp"

#include <gpusweep/db/live.hpp>
#include <gpusweep/db/store.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>

namespace gpusweep::host {

namespace detail {

// What kind of run a spec makes, as the page labels it.
std::string run_kind(const SweepSpec& spec) {
  if (is_tune_run(spec)) return "tune";
  if (spec.measure.precision > 0) return "precision";
  if (spec.measure.target) return "target";
  return "grid";
}

// Not the rate since the run was created: a run resumed (or a shard
// requeued) a day later would get an ETA of about a day.
std::optional<double> eta_s(const db::RunCounts& c, double mean_wall_s, int64_t running) {
  if (c.finished == 0 || !(mean_wall_s > 0)) return std::nullopt;
  const double running_done =
      std::min(c.started_s, 0.95 * mean_wall_s * static_cast<double>(running));
  const double left_s = static_cast<double>(c.total - c.finished) * mean_wall_s - running_done;
  return std::max(0.0, left_s) / static_cast<double>(std::max<int64_t>(1, running));
}

}  // namespace detail

namespace {

using Json = nlohmann::json;

// When the live file of a run (db/live.hpp) last changed, as text ("" when
// there is none): a running trial's new block changes a live run's version.
std::string live_stamp(const std::string& db_path, int64_t run_id) {
  std::error_code ec;
  const auto t = std::filesystem::last_write_time(db::live_blocks_path(db_path, run_id), ec);
  return ec ? "" : std::to_string(t.time_since_epoch().count());
}

// A run's version: what changes whenever anything shown of it changes (for
// a live run, its live file too).
std::string run_version(const db::SweepRecord& s, const db::RunCounts& c, bool live,
                        const std::string& db_path) {
  return hash_text(std::string(db::sweep_status_name(s.status)) + "|" + std::to_string(live) + "|" +
                   std::to_string(c.total) + "|" + std::to_string(c.finished) + "|" +
                   std::to_string(c.started) + "|" + std::to_string(c.max_trial_id) + "|" +
                   c.last_finished_at + "|" + (live ? live_stamp(db_path, s.id) : ""));
}

}  // namespace

const Json& ServeApi::shared_list() const {
  if (runs_list_.is_null() ||
      std::chrono::duration<double>(std::chrono::steady_clock::now() - runs_at_).count() >=
          share_s_) {
    rescan();
    runs_list_ = list_runs();
    runs_at_ = std::chrono::steady_clock::now();
  }
  return runs_list_;
}

Json ServeApi::runs(const std::string& since) const {
  std::lock_guard<std::mutex> lock(runs_mu_);
  const Json& list = shared_list();
  const std::string& cursor = list["cursor"].get_ref<const std::string&>();
  return {{"cursor", cursor},
          {"unchanged", !since.empty() && since == cursor},
          {"runs", list["runs"]},
          {"unreadable", list["unreadable"]},
          {"waiting", list["waiting"]}};
}

std::optional<std::pair<std::string, bool>> ServeApi::run_state(size_t d, int64_t id) const {
  std::lock_guard<std::mutex> lock(runs_mu_);
  for (const auto& r : shared_list()["runs"]) {
    if (r["db"] == d && r["id"] == id) {
      return std::make_pair(r["version"].get<std::string>(), r["status"] == "running");
    }
  }
  return std::nullopt;
}

// One record a run, field after field.
Json ServeApi::list_runs() const {
  Json out = Json::array();
  Json problems = Json::array();
  std::string all;
  const size_t served_now = databases();
  for (size_t d = 0; d < served_now; ++d) {
    const std::string path = this->path(d);
    std::vector<db::SweepRecord> sweeps;
    std::vector<db::RunCounts> counts;
    try {
      const auto file = readable(d);
      db::Store store(*file, db::Connection::Mode::read_only);
      sweeps = store.sweeps();
      counts = store.run_counts();
    } catch (const std::exception& e) {
      // One database that cannot be read (a shard a task is still creating,
      // a file deleted, a copy that failed) is listed with why; the others
      // are served: one bad file must not blank the whole list.
      problems.push_back({{"db", d}, {"path", path}, {"error", e.what()}});
      all += std::to_string(d) + ":error:" + e.what() + ";";
      continue;
    }
    for (const auto& s : sweeps) {
      db::RunCounts c;
      c.sweep_id = s.id;
      for (const auto& k : counts) {
        if (k.sweep_id == s.id) c = k;
      }
      const bool live = s.status == db::SweepStatus::running && run_alive(path, s.id);
      const int64_t running = live ? c.started : 0;
      Json r = {
          {"db", d},
          {"id", s.id},
          {"name", s.name},
          {"workload", s.workload},
          {"status", live                                   ? "running"
                     : s.status == db::SweepStatus::running ? "stopped"
                                                            : db::sweep_status_name(s.status)},
          {"created_at", s.created_at},
          {"total", c.total},
          {"finished", c.finished},
          {"ok", c.ok},
          {"failed", c.failed},
          {"running", running},
          {"eta_s", nullptr},
          {"eta_text", "-"}};
      try {
        r["kind"] = detail::run_kind(stored_spec(s));
      } catch (const std::exception&) {
        r["kind"] = "grid";
      }
      if (live) {
        const double mean =
            c.finished > 0 ? c.finished_wall_s / static_cast<double>(c.finished) : 0;
        if (auto eta = detail::eta_s(c, mean, running)) {
          r["eta_s"] = *eta;
          r["eta_text"] = clock_time(*eta);  // as run's progress line says it
        }
      }
      const std::string version = run_version(s, c, live, path);
      r["version"] = version;
      all += std::to_string(d) + ":" + std::to_string(s.id) + ":" + version + ";";
      out.push_back(r);
    }
  }
  const std::vector<std::string> waits = waiting();
  for (const auto& w : waits) all += "waiting:" + w + ";";
  return {{"cursor", hash_text(all)}, {"runs", out}, {"unreadable", problems}, {"waiting", waits}};
}

}  // namespace gpusweep::host
