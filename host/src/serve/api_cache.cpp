// `gpusweep serve`'s cache of run details (ServeApi::cached_run): computed
// again when a run's version changes (a live run at most every so often),
// each trial's row kept with the revision at which it last changed, and the
// answers to a cursor (unchanged, a delta, or the whole run) made from it.
#include "serve/api.hpp"

#include <algorithm>
#include <chrono>

namespace gpusweep::host {

namespace {

using Json = nlohmann::json;

// The live answer may be this old before a running run's details are
// computed again, or kLiveComputeShare times as old as its computation took,
// if longer: a run so large that its details take 0.4 s is computed every
// 2 s, so that watching it costs at most a fifth of a core.
constexpr double kLiveRecomputeS = 1.0;
constexpr double kLiveComputeShare = 5.0;

}  // namespace

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

// The three answers (unchanged, delta, whole) assembled
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

// The shared answer, the version check, the computation.
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

}  // namespace gpusweep::host
