// One run's details for `gpusweep serve` (GET /api/run): its trials as
// rows of JSON text, the comparison, times to target, a tune's race, and
// the blocks its running trials have measured so far.
#include "serve/api.hpp"

#include "analysis/compare.hpp"
#include "analysis/race.hpp"
#include "analysis/run_alive.hpp"
#include "analysis/stored.hpp"
#include "analysis/tune_trials.hpp"
#include "report/compare_view.hpp"
#include "report/output.hpp"
#include "report/report.hpp"
#include "report/trial_row.hpp"
#include "report/tune_view.hpp"
#include "serve/api_internal.hpp"
#include "spec/tune.hpp"

#include <gpusweep/db/live.hpp>
#include <gpusweep/db/store.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

namespace gpusweep::host {

namespace {

using Json = nlohmann::json;

// The stderr tail a failure shows (the end of what the store kept).
constexpr size_t kLogTail = 2000;

// A running run of more configs than this gets its knob table and best's
// pick once it has ended, not with every answer: on 10,000 configs the knob
// effects alone took a third of a second, and a live run's answer is made
// again every second.
constexpr size_t kLiveTablesConfigs = 1000;

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

// A trial's row in a run's answer, written by the listings' RecordWriter
// (`writer` holds the keys below): its place, status, whether its worker
// started, its time and throughput, and for a failure its reason and the
// end of its log.
std::string trial_row(const db::TrialRecord& t, const RecordWriter& writer) {
  const TrialRow row(t);
  std::vector<Json> cells = {
      row.value(TrialField::trial_id), t.plan.ordinal,
      row.value(TrialField::config),   row.value(TrialField::repeat),
      row.value(TrialField::status),   t.started_at.has_value(),
      row.value(TrialField::wall_s),   row.value(TrialField::throughput_median)};
  if (db::has_finished(t.status) && t.status != db::TrialStatus::ok) {
    std::string tail = t.stderr_tail.value_or("");
    if (tail.size() > kLogTail) tail = tail.substr(tail.size() - kLogTail);
    cells.emplace_back(t.error.value_or(""));  // error: "" rather than null, for the page
    cells.emplace_back(std::move(tail));
  }
  return "{" + writer.cells(cells) + "}";
}

// The keys of trial_row, in its cells' order.
const std::vector<std::string> kTrialRowKeys = {
    field_name(TrialField::trial_id), "ordinal",
    field_name(TrialField::config),   field_name(TrialField::repeat),
    field_name(TrialField::status),   "started",
    field_name(TrialField::wall_s),   field_name(TrialField::throughput_median),
    field_name(TrialField::error),    "log_tail"};

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

// A table of text cells as JSON: {headers, numeric, rows, footer}.
Json table_json(const TextTable& t) {
  return {{"headers", t.headers}, {"numeric", t.numeric}, {"rows", t.rows}, {"footer", t.footer}};
}

// compare's table, and the repeats each ratio pairs (the live view's
// interval narrows as they come in) before its note.
Json compare_table_json(const std::vector<ComparisonRow>& rows,
                        const std::vector<std::string>& keys) {
  TextTable t = comparison_table(rows, keys);
  const auto note = std::find(t.headers.begin(), t.headers.end(), "note");
  const auto at = static_cast<size_t>(note - t.headers.begin());
  if (t.rows.size() == rows.size()) {
    t.headers.insert(t.headers.begin() + at, "repeats");
    t.numeric.insert(t.numeric.begin() + std::min(at, t.numeric.size()), true);
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& ratio = rows[i].ratio;
      auto& cells = t.rows[i];
      cells.insert(cells.begin() + std::min(at, cells.size()),
                   ratio ? std::to_string(ratio->repeats) : "-");
    }
  }
  return table_json(t);
}

}  // namespace

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
  // Every read below sees one state of the database: a trial committed
  // between two of them cannot be in the comparison and not in the rows.
  const db::ReadTransaction one_state = store.read_transaction();
  const auto sweep = store.sweep(id);
  if (!sweep) return parts;
  const SweepSpec spec = stored_spec(*sweep);
  const auto keys = varying_keys(spec);
  Json& j = parts.head;
  j = {{"db", d},
       {"id", id},
       {"name", sweep->name},
       {"status", sweep->status},
       {"kind", detail::run_kind(spec)},
       {"keys", keys}};
  j["spec"] = Json::parse(sweep->spec_json);
  j["blocks_planned"] = spec.measure.blocks;
  // The running trials' blocks so far, while the run's host holds its lock
  // (a file left by a killed host is stale).
  const bool alive = sweep->status == db::SweepStatus::running && run_alive(path, id);
  j["live"] = alive ? live_blocks(path, id) : Json::array();
  // The run's trials as the comparison reads them (one read for both), then
  // their rows on a thread of their own while the comparison is made.
  std::vector<StoredTrial> trials;
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
    trials = stored_trials(store, id);
  }
  auto rows = std::async(std::launch::async, [&] { return trial_rows(trials, keys); });
  if (!j.contains("compare_error")) {
    try {
      CompareOptions opt;
      opt.baseline = spec.baseline;
      opt.sequential = stops_when_precise(spec);
      j["selection_data"] = rounds == Rounds::all && detail::run_kind(spec) == "tune";
      const auto compared = compare_configs(configs, opt);
      parts.raw.emplace_back("compare", comparison_text(compared, keys));
      j["compare_table"] = compare_table_json(compared, keys);
      if (!alive || configs.size() <= kLiveTablesConfigs) {
        Json knobs = table_json(knob_table(ablation(configs, spec.grid, opt)));
        knobs["legend"] = kKnobLegend;
        j["knobs"] = std::move(knobs);
      }
      if (spec.measure.target) {
        j["targets"] =
            Json::parse(render_targets(compare_targets(compared, opt), keys, OutputFormat::json));
      }
    } catch (const std::exception& e) {
      j["compare_error"] = e.what();
    }
  }
  try {
    const TuneSpec tune = spec.tune.value_or(TuneSpec{});
    if (tune.race) {
      const TuneSpace space(spec, PluginManifest{});
      const RaceOptions options = race_options(spec, space, tune);
      const RaceStatus status = race(space, race_trials(store, id, tune), options,
                                     sweep->status == db::SweepStatus::finished);
      j["race"] = tune_json(space, status, options.baseline, spec, tune);
      j["race"]["leader"] = status.leader ? Json(*status.leader + 1) : Json();
      j["race"]["alive"] = status.live.size();
    }
  } catch (const std::exception& e) {
    j["race_error"] = e.what();
  }
  try {
    if (!alive || configs.size() <= kLiveTablesConfigs) {
      j["best"] = best_pick(store, *sweep, spec, configs, rounds);
    }
  } catch (const std::exception& e) {
    j["best_error"] = e.what();
  }
  auto [labels, made] = rows.get();
  j["labels"] = std::move(labels);
  parts.rows = std::move(made);
  return parts;
}

std::pair<nlohmann::json, std::vector<std::pair<int64_t, ServeApi::Row>>> ServeApi::trial_rows(
    const std::vector<StoredTrial>& trials, const std::vector<std::string>& keys) {
  // Each config's settings once, by its number (its repeats share them).
  Json labels = Json::object();
  std::vector<std::pair<int64_t, Row>> rows;
  rows.reserve(trials.size());
  std::ostringstream unused;  // a JSON writer writes nothing before its first record
  const RecordWriter writer(kTrialRowKeys, false, unused);
  for (const auto& stored : trials) {
    const db::TrialRecord& t = stored.row;
    const std::string config = std::to_string(t.plan.config_index + 1);
    if (!labels.contains(config)) {
      labels[config] = config_label(Json::parse(t.plan.config_json), keys);
    }
    rows.emplace_back(t.id, Row{t.plan.ordinal, trial_row(t, writer), 0});
  }
  return {std::move(labels), std::move(rows)};
}

}  // namespace gpusweep::host
