// The results store's reads of what trials measured (see store.hpp): a
// trial's blocks and metrics, its last stats, and a run's block series.
#include <gpusweep/db/store.hpp>
#include "series.hpp"

#include <algorithm>
#include <climits>
#include <string_view>

namespace gpusweep::db {

std::vector<BlockSample> Store::blocks(int64_t trial_id) {
  // One prepared statement for every call: listing commands read the blocks
  // of thousands of trials one trial after another, in the trials' order,
  // which is cheaper than one joined query that has to be sorted.
  if (!blocks_query_) {
    blocks_query_.emplace(
        db_.prepare("SELECT idx, steps, seconds, samples, secondary_samples, cycle, device_seconds "
                    "FROM blocks WHERE trial_id = ? "
                    "ORDER BY idx"));
  }
  Statement& st = *blocks_query_;
  st.reset();
  st.bind(1, trial_id);
  std::vector<BlockSample> out;
  while (st.step()) {
    BlockSample& b = out.emplace_back();
    b.idx = st.get_int(0);
    b.steps = st.get_int(1);
    b.seconds = st.get_double(2);
    b.samples = st.get_double(3);
    b.secondary_samples = st.get_double(4);
    if (!st.is_null(5)) b.cycle = st.get_int(5);
    b.device_seconds = st.get_optional_double(6);
  }
  return out;
}

BlockSeries Store::series(int64_t trial_id) {
  if (!series_query_) {
    series_query_.emplace(
        db_.prepare("SELECT blocks, throughput, cycles FROM block_series WHERE trial_id = ?"));
  }
  Statement& st = *series_query_;
  st.reset();
  st.bind(1, trial_id);
  if (!st.step()) return series_of(blocks(trial_id));
  BlockSeries s;
  unpack_series(trial_id, st.get_int(0), st.get_blob(1), st.get_blob(2), s);
  st.reset();  // ends the read, as a statement prepared per call would
  return s;
}

std::vector<MetricSample> Store::metrics(int64_t trial_id) {
  auto st = db_.prepare(
      "SELECT kind, at_step, name, value FROM metrics WHERE trial_id = ? "
      "ORDER BY kind, at_step, name");
  st.bind(1, trial_id);
  std::vector<MetricSample> out;
  while (st.step()) {
    out.push_back({st.get_text(0), st.get_int(1), st.get_text(2), st.get_double(3)});
  }
  return out;
}

std::optional<double> Store::last_stat(int64_t trial_id, const std::string& name) {
  auto st = db_.prepare(
      "SELECT value FROM metrics WHERE trial_id = ? AND kind = 'stat' AND name = ? "
      "ORDER BY at_step DESC LIMIT 1");
  st.bind(1, trial_id).bind(2, name);
  if (!st.step()) return std::nullopt;
  return st.get_double(0);
}

void Store::for_each_series(int64_t sweep_id, const std::function<void(int64_t, BlockSeries&)>& f) {
  auto st = db_.prepare(
      "SELECT s.trial_id, s.blocks, s.throughput, s.cycles FROM block_series s JOIN trials t ON "
      "t.id = s.trial_id WHERE t.sweep_id = ?");
  st.bind(1, sweep_id);
  BlockSeries s;
  while (st.step()) {
    const int64_t id = st.get_int(0);
    unpack_series(id, st.get_int(1), st.get_blob(2), st.get_blob(3), s);
    f(id, s);
  }
}

std::unordered_map<int64_t, std::vector<std::optional<double>>> Store::last_stats(
    int64_t sweep_id, const std::vector<std::string>& names, const std::string& kind) {
  std::unordered_map<int64_t, std::vector<std::optional<double>>> out;
  if (names.empty()) return out;
  std::string in;
  for (size_t i = 0; i < names.size(); ++i) in += i == 0 ? "?" : ", ?";
  // Unsorted (sorting 100,000s of rows cost more than the rest): the value
  // at the highest step is kept as the rows come.
  auto st = db_.prepare(
      "SELECT m.trial_id, m.name, m.at_step, m.value FROM metrics m JOIN trials t ON t.id = "
      "m.trial_id WHERE t.sweep_id = ? AND m.kind = ? AND m.name IN (" +
      in + ")");
  st.bind(1, sweep_id);
  st.bind(2, kind);
  for (size_t i = 0; i < names.size(); ++i) st.bind(static_cast<int>(i) + 3, names[i]);
  // A trial's rows come together (the join walks the trials): its entries
  // are looked up once per trial, not once per row, and names compared
  // without copying them.
  std::unordered_map<std::string_view, size_t> slot;  // a name's place in names
  for (size_t i = 0; i < names.size(); ++i) slot.emplace(names[i], i);
  std::unordered_map<int64_t, std::vector<int64_t>> steps;
  int64_t current = 0;
  std::vector<std::optional<double>>* values = nullptr;
  std::vector<int64_t>* at_steps = nullptr;
  while (st.step()) {
    const int64_t trial = st.get_int(0);
    const std::string_view name = st.get_text_view(1);
    const auto found = slot.find(name);
    if (found == slot.end()) continue;
    const size_t k = found->second;
    const int64_t at = st.get_int(2);
    if (values == nullptr || trial != current) {
      current = trial;
      values = &out[trial];
      at_steps = &steps[trial];
      if (values->empty()) {
        values->resize(names.size());
        at_steps->assign(names.size(), INT64_MIN);
      }
    }
    if (at < (*at_steps)[k]) continue;
    (*at_steps)[k] = at;
    (*values)[k] = st.get_double(3);
  }
  return out;
}

}  // namespace gpusweep::db
