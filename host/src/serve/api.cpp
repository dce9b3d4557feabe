// The page and JSON API of `gpusweep serve`; see api.hpp.
#include "serve/api.hpp"

#include "analysis/compare.hpp"
#include "analysis/race.hpp"
#include "analysis/stored.hpp"
#include "analysis/tune_trials.hpp"
#include "model/hashing.hpp"
#include "model/tune.hpp"
#include "report/compare_view.hpp"
#include "report/report.hpp"
#include "report/tune_view.hpp"
#include "serve/page.hpp"
#include "support/error.hpp"

#include <gpusweep/db/live.hpp>
#include <gpusweep/db/migrate.hpp>
#include <gpusweep/db/run_lock.hpp>
#include <gpusweep/db/snapshot.hpp>
#include <gpusweep/db/store.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>

namespace gpusweep::host {

namespace {

using Json = nlohmann::json;

// The stderr tail a failure shows (the end of what the store kept).
constexpr size_t kLogTail = 2000;

// Seconds since the epoch of "2026-11-25T15:02:03.123Z" (the store's times);
// nothing when it does not parse.
std::optional<double> epoch_of(const std::string& iso) {
  std::tm tm{};
  const char* end = strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return std::nullopt;
  double frac = 0;
  if (*end == '.') frac = std::atof(end);
  return static_cast<double>(timegm(&tm)) + frac;
}

double now_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

HttpResponse json_response(const Json& j) { return {200, "application/json", j.dump()}; }

HttpResponse not_found(const std::string& what) {
  return {404, "application/json", Json{{"error", what}}.dump()};
}

// What kind of run a spec makes, as the page labels it.
std::string run_kind(const SweepSpec& spec) {
  if (parse_tune(spec.source, spec.tune).race) return "tune";
  if (spec.measure.precision > 0) return "precision";
  if (spec.measure.target) return "target";
  return "grid";
}

// The ETA of a run with counts c and its trials' mean wall time: the work
// left over the rate so far, where a running trial counts as the share of
// a mean trial it has run (at most 95%).
std::optional<double> eta_s(const db::RunCounts& c, double elapsed_s, double mean_wall_s,
                            double running_elapsed_s, int64_t running) {
  if (c.finished == 0 || !(mean_wall_s > 0) || !(elapsed_s > 0)) return std::nullopt;
  const double partial =
      std::min(running_elapsed_s / mean_wall_s, 0.95 * static_cast<double>(running));
  const double done = static_cast<double>(c.finished) + partial;
  const double left = static_cast<double>(c.total) - done;
  if (left <= 0) return 0.0;
  return left / (done / elapsed_s);
}

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
  return hash_text(s.status + "|" + std::to_string(live) + "|" + std::to_string(c.total) + "|" +
                   std::to_string(c.finished) + "|" + std::to_string(c.started) + "|" +
                   std::to_string(c.max_trial_id) + "|" + c.last_finished_at + "|" +
                   (live ? live_stamp(db_path, s.id) : ""));
}

// The blocks of a live run's running trials so far, from the file its host
// keeps beside the database (db/live.hpp): [{id, phase, throughput: [...]}],
// each checked, since the file is not the database's; empty when there is
// none or it does not parse.
Json live_blocks(const std::string& db_path, int64_t run_id) {
  constexpr std::uintmax_t kMaxBytes = 8u << 20;
  constexpr size_t kMaxBlocks = 10000;
  Json out = Json::array();
  const std::string path = db::live_blocks_path(db_path, run_id);
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > kMaxBytes) return out;
  std::ifstream in(path);
  const Json j = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("trials") || !j["trials"].is_array()) return out;
  for (const auto& t : j["trials"]) {
    if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer()) continue;
    Json row = {{"id", t["id"]}, {"phase", ""}, {"throughput", Json::array()}};
    if (t.contains("phase") && t["phase"].is_string()) row["phase"] = t["phase"];
    if (t.contains("throughput") && t["throughput"].is_array()) {
      for (const auto& v : t["throughput"]) {
        if (v.is_number() && row["throughput"].size() < kMaxBlocks) row["throughput"].push_back(v);
      }
    }
    out.push_back(std::move(row));
  }
  return out;
}

// An optional number as JSON (NaN and infinities as null, as nlohmann writes them).
std::string json_number(const std::optional<double>& v) { return v ? Json(*v).dump() : "null"; }

// A trial's row in a run's answer, as JSON text written directly (a run of
// 100,000 trials built and serialised them as JSON objects in a fifth of a
// second): its place, status, whether its worker started, its time and
// throughput, and for a failure its reason and the end of its log.
std::string trial_row(const db::TrialRecord& t) {
  std::string row =
      "{\"id\":" + std::to_string(t.id) + ",\"ordinal\":" + std::to_string(t.plan.ordinal) +
      ",\"config\":" + std::to_string(t.plan.config_index + 1) +
      ",\"repeat\":" + std::to_string(t.plan.repeat) +
      ",\"status\":" + Json(db::status_name(t.status)).dump() +
      ",\"started\":" + (t.started_at ? "true" : "false") + ",\"wall_s\":" + json_number(t.wall_s) +
      ",\"throughput\":" +
      json_number(t.summary ? std::optional<double>(t.summary->throughput_median) : std::nullopt);
  if (db::has_finished(t.status) && t.status != db::TrialStatus::ok) {
    std::string tail = t.stderr_tail.value_or("");
    if (tail.size() > kLogTail) tail = tail.substr(tail.size() - kLogTail);
    row +=
        ",\"reason\":" + Json(t.error.value_or("")).dump() + ",\"log_tail\":" + Json(tail).dump();
  }
  return row + "}";
}

// compare's records as JSON text, made and written a chunk at a time (10,000
// of them held at once as objects cost a fifth of a second to make, write
// and free).
std::string comparison_text(const std::vector<ComparisonRow>& rows,
                            const std::vector<std::string>& keys) {
  constexpr size_t kChunk = 1024;
  std::string text = "[";
  for (size_t begin = 0; begin < rows.size(); begin += kChunk) {
    for (const auto& r : comparison_records(rows, keys, begin, begin + kChunk)) {
      if (text.size() > 1) text += ',';
      text += r.dump();
    }
  }
  return text + "]";
}

// The live answer may be this old before a running run's details are
// computed again, or kLiveComputeShare times as old as its computation took,
// if longer: a run so large that its details take 0.4 s is computed every
// 2 s, so that watching it costs at most a fifth of a core.
constexpr double kLiveRecomputeS = 1.0;
constexpr double kLiveComputeShare = 5.0;

}  // namespace

// A cursor names the server that gave it: one from an earlier server (the
// page outlived a restart) gets a whole answer, not a wrong delta.
ServeApi::ServeApi(std::vector<std::string> db_paths, double share_s, Snapshot snapshot,
                   std::vector<std::string> folders)
    : share_s_(share_s), snapshot_(snapshot), folders_(std::move(folders)) {
  std::random_device random;
  char text[17];
  std::snprintf(text, sizeof text, "%08x%08x", random(), random());
  generation_ = text;
  std::lock_guard<std::mutex> lock(dbs_mu_);
  for (const auto& path : db_paths) add(path);
}

std::vector<std::string> ServeApi::databases_in(const std::string& folder) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(folder, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code type;
    if (it->is_regular_file(type) && it->path().extension() == ".db") {
      found.push_back(it->path());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::vector<std::string> ServeApi::databases_given(const std::vector<std::string>& given,
                                                   std::vector<std::string>* folders) {
  std::vector<std::string> out;
  for (const auto& g : given) {
    namespace fs = std::filesystem;
    if (fs::is_directory(g)) {
      const auto found = databases_in(g);
      out.insert(out.end(), found.begin(), found.end());
      folders->push_back(g);
    } else if (fs::exists(g)) {
      out.push_back(g);
    } else {
      throw UsageError("--db " + g + ": no such database (run a sweep first, or name one)");
    }
  }
  return out;
}

ServeApi::Snapshot ServeApi::snapshot_mode(const std::string& text) {
  if (text == "auto") return Snapshot::automatic;
  if (text == "always") return Snapshot::always;
  if (text == "never") return Snapshot::never;
  throw UsageError("--snapshot " + text + ": use auto, always or never");
}

void ServeApi::add(const std::string& path) const {
  auto entry = std::make_shared<Served>();
  entry->path = path;
  const auto fs = db::network_filesystem(path);
  // The schema it was written with, read in place only where SQLite may
  // open it (a network filesystem's database is read through copies anyway).
  int version = 0;
  if (!fs) {
    try {
      db::Connection c(path, db::Connection::Mode::read_only);
      version = db::current_version(c);
    } catch (const std::exception&) {
      version = 0;  // not readable yet: the requests say why
    }
  }
  const bool older = version > 0 && version < db::schema_version();
  const std::string every = ", made again when it changed, at most every " +
                            std::to_string(static_cast<int>(kSnapshotIntervalS)) + " s)";
  if (older) {
    entry->why = "(written by an older gpusweep, schema " + std::to_string(version) + " of " +
                 std::to_string(db::schema_version()) +
                 ": read through an upgraded local copy, the file left as it is" + every;
  } else if (snapshot_ == Snapshot::always || (snapshot_ == Snapshot::automatic && fs)) {
    entry->why = std::string(fs ? "(on " + *fs : "(--snapshot always") +
                 ": read through local copies" + every;
  }
  if (!entry->why.empty()) {
    entry->snapshots = std::make_shared<db::Snapshots>(path, kSnapshotIntervalS);
  }
  dbs_.push_back(std::move(entry));
}

void ServeApi::rescan() const {
  for (const auto& folder : folders_) {
    for (const auto& path : databases_in(folder)) {
      std::lock_guard<std::mutex> lock(dbs_mu_);
      const bool known =
          std::any_of(dbs_.begin(), dbs_.end(), [&](const auto& d) { return d->path == path; });
      if (!known) add(path);
    }
  }
}

size_t ServeApi::databases() const {
  std::lock_guard<std::mutex> lock(dbs_mu_);
  return dbs_.size();
}

std::shared_ptr<const ServeApi::Served> ServeApi::served(size_t d) const {
  std::lock_guard<std::mutex> lock(dbs_mu_);
  return d < dbs_.size() ? dbs_[d] : nullptr;
}

std::string ServeApi::path(size_t d) const { return served(d)->path; }

std::string ServeApi::reading(size_t d) const { return served(d)->why; }

int64_t ServeApi::copies(size_t d) const {
  const auto s = served(d);
  return s->snapshots ? s->snapshots->copies() : 0;
}

std::vector<std::string> ServeApi::copy_folders() const {
  std::lock_guard<std::mutex> lock(dbs_mu_);
  std::vector<std::string> out;
  for (const auto& d : dbs_) {
    if (d->snapshots) out.push_back(d->snapshots->folder());
  }
  return out;
}

std::shared_ptr<const std::string> ServeApi::readable(size_t d) const {
  const auto s = served(d);
  if (!s) return nullptr;
  if (s->snapshots) return s->snapshots->current();
  return {s, &s->path};  // shares the entry's life
}

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
          {"unreadable", list["unreadable"]}};
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

// Long by design: one record a run, field after field.
Json ServeApi::list_runs() const {
  Json out = Json::array();
  Json problems = Json::array();
  std::string all;
  const double now = now_epoch();
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
      // are served (the 2026-11-26 audit's M2).
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
      const bool live = s.status == "running" && db::RunLock::held(path, s.id);
      const int64_t running = live ? c.started : 0;
      Json r = {{"db", d},
                {"id", s.id},
                {"name", s.name},
                {"workload", s.workload},
                {"status", live                    ? "running"
                           : s.status == "running" ? "stopped"
                                                   : s.status},
                {"created_at", s.created_at},
                {"total", c.total},
                {"finished", c.finished},
                {"ok", c.ok},
                {"failed", c.failed},
                {"running", running},
                {"eta_s", nullptr}};
      try {
        r["kind"] = run_kind(stored_spec(s));
      } catch (const std::exception&) {
        r["kind"] = "grid";
      }
      if (live) {
        const auto created = epoch_of(s.created_at);
        const double mean =
            c.finished > 0 ? c.finished_wall_s / static_cast<double>(c.finished) : 0;
        if (created) {
          if (auto eta = eta_s(c, now - *created, mean, c.started_s, running)) {
            r["eta_s"] = *eta;
          }
        }
      }
      const std::string version = run_version(s, c, live, path);
      r["version"] = version;
      all += std::to_string(d) + ":" + std::to_string(s.id) + ":" + version + ";";
      out.push_back(r);
    }
  }
  return {{"cursor", hash_text(all)}, {"runs", out}, {"unreadable", problems}};
}

Json ServeApi::run(size_t d, int64_t id) const {
  RunParts parts = run_parts(d, id);
  if (parts.head.is_null()) return nullptr;
  Json trials = Json::array();
  for (const auto& [trial, row] : parts.rows) trials.push_back(Json::parse(row.text));
  parts.head["trials"] = std::move(trials);
  for (const auto& [key, text] : parts.raw) parts.head[key] = Json::parse(text);
  return std::move(parts.head);
}

// Long by design: the run's parts in the page's order, each tolerant of a
// run that has not got that far (no baseline trial yet, say).
ServeApi::RunParts ServeApi::run_parts(size_t d, int64_t id) const {
  RunParts parts;
  const auto file = readable(d);
  if (!file) return parts;
  const std::string path = this->path(d);
  db::Store store(*file, db::Connection::Mode::read_only);
  const auto sweep = store.sweep(id);
  if (!sweep) return parts;
  const SweepSpec spec = stored_spec(*sweep);
  const auto keys = varying_keys(spec);
  Json& j = parts.head;
  j = {{"db", d},
       {"id", id},
       {"name", sweep->name},
       {"status", sweep->status},
       {"kind", run_kind(spec)},
       {"keys", keys}};
  j["spec"] = Json::parse(sweep->spec_json);
  j["blocks_planned"] = spec.measure.blocks;
  // The running trials' blocks so far, while the run's host holds its lock
  // (a file left by a killed host is stale).
  j["live"] = sweep->status == "running" && db::RunLock::held(path, id) ? live_blocks(path, id)
                                                                        : Json::array();
  // The run's trials as the comparison reads them (one read for both), then
  // their rows on a thread of their own while the comparison is made.
  std::vector<db::TrialRecord> trials;
  std::vector<ConfigSamples> configs;
  Rounds rounds = rounds_for(spec, false);
  try {
    configs = gather_configs(store, id, true, rounds, &trials);
    if (rounds == Rounds::confirmation && configs.empty()) {
      // A tune still racing: no fresh rounds yet, so the racing rounds,
      // said to be selection data (they flatter the leader).
      rounds = Rounds::all;
      configs = gather_configs(store, id, true, rounds, &trials);
    }
  } catch (const std::exception& e) {
    j["compare_error"] = e.what();
    trials = store.trials(id, db::TrialFields::brief);
  }
  auto rows = std::async(std::launch::async, [&] { return trial_rows(trials, keys); });
  if (!j.contains("compare_error")) {
    try {
      CompareOptions opt;
      opt.baseline = spec.baseline;
      opt.sequential = stops_when_precise(spec);
      j["selection_data"] = rounds == Rounds::all && run_kind(spec) == "tune";
      const auto compared = compare_configs(configs, opt);
      parts.raw.emplace_back("compare", comparison_text(compared, keys));
      if (spec.measure.target) {
        j["targets"] =
            Json::parse(render_targets(compare_targets(compared, opt), keys, OutputFormat::json));
      }
    } catch (const std::exception& e) {
      j["compare_error"] = e.what();
    }
  }
  try {
    const TuneSpec tune = parse_tune(spec.source, spec.tune);
    if (tune.race) {
      const TuneSpace space(spec, PluginManifest{});
      const RaceOptions options = race_options(spec, space, tune);
      const RaceStatus status =
          race(space, race_trials(store, id, tune), options, sweep->status == "finished");
      j["race"] = tune_json(space, status, options.baseline, spec, tune);
      j["race"]["leader"] = status.leader ? Json(*status.leader + 1) : Json();
      j["race"]["alive"] = status.live.size();
    }
  } catch (const std::exception& e) {
    j["race_error"] = e.what();
  }
  auto [labels, made] = rows.get();
  j["labels"] = std::move(labels);
  parts.rows = std::move(made);
  return parts;
}

std::pair<nlohmann::json, std::vector<std::pair<int64_t, ServeApi::Row>>> ServeApi::trial_rows(
    const std::vector<db::TrialRecord>& trials, const std::vector<std::string>& keys) {
  // Each config's settings once, by its number (its repeats share them).
  Json labels = Json::object();
  std::vector<std::pair<int64_t, Row>> rows;
  rows.reserve(trials.size());
  for (const auto& t : trials) {
    const std::string config = std::to_string(t.plan.config_index + 1);
    if (!labels.contains(config)) {
      labels[config] = config_label(Json::parse(t.plan.config_json), keys);
    }
    rows.emplace_back(t.id, Row{t.plan.ordinal, trial_row(t), 0});
  }
  return {std::move(labels), std::move(rows)};
}

void ServeApi::update(Cached& entry, RunParts answer) {
  entry.exists = !answer.head.is_null();
  if (!entry.exists) return;
  const uint64_t rev = entry.rev + 1;
  bool changed = false;
  // The fresh rows and the kept ones, both by id, walked together (a map of
  // 100,000 rows took a tenth of a second to build).
  auto& rows = answer.rows;
  const auto by_id = [](const auto& a, const auto& b) { return a.first < b.first; };
  if (!std::is_sorted(rows.begin(), rows.end(), by_id)) std::sort(rows.begin(), rows.end(), by_id);
  const auto& kept = entry.rows;
  size_t k = 0;
  const auto gone = [&](int64_t id) {
    entry.removed.emplace_back(id, rev);
    changed = true;
  };
  for (auto& [id, row] : rows) {
    row.rev = rev;
    for (; k < kept.size() && kept[k].first < id; ++k) gone(kept[k].first);
    if (k < kept.size() && kept[k].first == id) {
      if (kept[k].second.text == row.text) row.rev = kept[k].second.rev;  // unchanged
      ++k;
    }
    changed = changed || row.rev == rev;
  }
  for (; k < kept.size(); ++k) gone(kept[k].first);
  std::string head = answer.head.dump();
  // The fields made as text go in before its closing brace.
  head.pop_back();
  for (const auto& [key, text] : answer.raw) head += "," + Json(key).dump() + ":" + text;
  head += "}";
  if (head != entry.head) {
    entry.head = std::move(head);
    changed = true;
  }
  entry.rows = std::move(rows);
  if (changed) {
    entry.rev = rev;
    entry.full = nullptr;
  }
}

// Long by design: the three answers (unchanged, delta, whole) assembled
// from the kept rows' text, without parsing or serialising them again.
std::shared_ptr<const std::string> ServeApi::answer(Cached& entry, const std::string& since) const {
  // A cursor names the server and the run: another run's (a page that
  // switched runs while an answer was on its way) gets a whole answer.
  const std::string& prefix = entry.cursor_prefix;
  const std::string cursor = prefix + std::to_string(entry.rev);
  std::optional<uint64_t> from;
  if (since.size() > prefix.size() && since.compare(0, prefix.size(), prefix) == 0 &&
      since.size() - prefix.size() <= 19 &&
      std::all_of(since.begin() + static_cast<std::ptrdiff_t>(prefix.size()), since.end(),
                  ::isdigit)) {
    const uint64_t n = std::stoull(since.substr(prefix.size()));
    if (n <= entry.rev) from = n;
  }
  if (from && *from == entry.rev) {
    return std::make_shared<const std::string>(
        Json{{"unchanged", true}, {"cursor", cursor}, {"version", entry.version}}.dump());
  }
  if (!from && entry.full && entry.full_version == entry.version) return entry.full;
  // The head's closing brace gives way to the cursor and the trials.
  std::vector<const std::pair<int64_t, Row>*> rows;
  for (const auto& r : entry.rows) {
    if (!from || r.second.rev > *from) rows.push_back(&r);
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto* a, const auto* b) { return a->second.ordinal < b->second.ordinal; });
  std::string body = entry.head.substr(0, entry.head.size() - 1);
  body += ",\"cursor\":" + Json(cursor).dump() + ",\"version\":" + Json(entry.version).dump() +
          ",\"delta\":" + (from ? "true" : "false");
  body += ",\"trials\":[";
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i > 0) body += ',';
    body += rows[i]->second.text;
  }
  body += "],\"removed\":[";
  bool first = true;
  for (const auto& [id, rev] : entry.removed) {
    if (!from || rev <= *from) continue;
    if (!first) body += ',';
    body += std::to_string(id);
    first = false;
  }
  body += "]}";
  auto out = std::make_shared<const std::string>(std::move(body));
  if (!from) {
    entry.full = out;
    entry.full_version = entry.version;
  }
  return out;
}

// Long by design: the shared answer, the version check, the computation.
std::shared_ptr<const std::string> ServeApi::cached_run(size_t d, int64_t id,
                                                        const std::string& since) const {
  const auto seconds_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  std::shared_ptr<Cached> entry;
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (const auto it = cache_.find({d, id}); it != cache_.end()) entry = it->second;
  }
  // Within share_s of the last look at the database, the answer as it was:
  // the many pages polling a run cost one look, not one each.
  if (entry) {
    std::lock_guard<std::mutex> computing(entry->computing);
    if (!entry->version.empty() && seconds_since(entry->checked) < share_s_) {
      return entry->exists ? answer(*entry, since) : nullptr;
    }
  }
  // The run's version as the run list has it (one count of every run's
  // trials, shared by both routes within share_s).
  const auto state = run_state(d, id);
  if (!state) return nullptr;
  const auto& [version, live] = *state;
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto& e = cache_[{d, id}];
    if (!e) {
      e = std::make_shared<Cached>();
      e->cursor_prefix = generation_ + "." + std::to_string(d) + "." + std::to_string(id) + ".";
    }
    entry = e;
  }
  // One request computes; the others wait for it and take its answer.
  std::lock_guard<std::mutex> computing(entry->computing);
  const bool fresh = !entry->version.empty() &&
                     (entry->version == version ||
                      (live && entry->live &&
                       seconds_since(entry->at) <
                           std::max(kLiveRecomputeS, kLiveComputeShare * entry->compute_s)));
  if (!fresh) {
    const auto t0 = std::chrono::steady_clock::now();
    update(*entry, run_parts(d, id));
    entry->version = version;
    entry->live = live;
    entry->at = std::chrono::steady_clock::now();
    entry->compute_s = seconds_since(t0);
  }
  entry->checked = std::chrono::steady_clock::now();
  if (!entry->exists) return nullptr;
  return answer(*entry, since);
}

HttpResponse ServeApi::handle(const HttpRequest& request) const {
  const auto& q = request.query;
  auto number = [&](const char* key) -> std::optional<int64_t> {
    const auto it = q.find(key);
    if (it == q.end() || it->second.empty() || it->second.size() > 18 ||
        !std::all_of(it->second.begin(), it->second.end(), ::isdigit)) {
      return std::nullopt;
    }
    return std::stoll(it->second);
  };
  if (request.path == "/" || request.path == "/index.html") {
    return {200, "text/html; charset=utf-8", serve_files().at(0).text};
  }
  if (request.path == "/api/runs") {
    const auto it = q.find("since");
    return json_response(runs(it == q.end() ? "" : it->second));
  }
  if (request.path == "/api/run" || request.path == "/api/report") {
    const auto d = number("db");
    const auto id = number("id");
    const size_t count = databases();
    if (!d || !id || static_cast<size_t>(*d) >= count) {
      return not_found(count == 0 ? std::string("no database yet")
                                  : "no such run: give db (0.." + std::to_string(count - 1) +
                                        ") and id as numbers");
    }
    if (request.path == "/api/run") {
      const auto since = q.find("since");
      const auto body =
          cached_run(static_cast<size_t>(*d), *id, since == q.end() ? "" : since->second);
      if (!body) return not_found("no run " + std::to_string(*id));
      return {200, "application/json", *body};
    }
    const auto file = readable(static_cast<size_t>(*d));
    db::Store store(*file, db::Connection::Mode::read_only);
    const auto sweep = store.sweep(*id);
    if (!sweep) return not_found("no run " + std::to_string(*id));
    return {200, "text/html; charset=utf-8", render_report(store, *sweep)};
  }
  return not_found("no such page: " + request.path);
}

}  // namespace gpusweep::host
