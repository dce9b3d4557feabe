// Block series; see series.hpp.
#include "series.hpp"

#include <cstring>
#include <limits>

namespace gpusweep::db {

namespace {

constexpr int64_t kNoCycle = std::numeric_limits<int64_t>::min();

// The blobs' 8-byte values, little-endian whatever the host (a plain copy on
// one that is little-endian too).
template <class T>
void put_le(std::string& out, T v) {
  static_assert(sizeof(T) == 8);
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  if constexpr (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__) bits = __builtin_bswap64(bits);
  out.append(reinterpret_cast<const char*>(&bits), sizeof bits);
}

template <class T>
T get_le(std::string_view in, size_t i) {
  static_assert(sizeof(T) == 8);
  uint64_t bits = 0;
  std::memcpy(&bits, in.data() + 8 * i, sizeof bits);
  if constexpr (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__) bits = __builtin_bswap64(bits);
  T v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// The blobs of a series (see 006_block_series.sql); cycles empty when no
// block has one.
std::string pack_throughput(const BlockSeries& s) {
  std::string out;
  out.reserve(8 * s.throughput.size());
  for (double v : s.throughput) put_le(out, v);
  return out;
}

std::string pack_cycles(const BlockSeries& s) {
  bool any = false;
  for (const auto& c : s.cycles) any = any || c.has_value();
  std::string out;
  if (!any) return out;
  out.reserve(8 * s.cycles.size());
  for (const auto& c : s.cycles) put_le(out, c.value_or(kNoCycle));
  return out;
}

}  // namespace

std::optional<double> block_throughput(const BlockSample& b) {
  if (b.seconds <= 0 || b.steps <= 0) return std::nullopt;
  return b.samples / b.seconds;
}

std::optional<double> block_step_time(const BlockSample& b) {
  if (b.seconds <= 0 || b.steps <= 0) return std::nullopt;
  return b.seconds / static_cast<double>(b.steps);
}

BlockSeries series_of(const std::vector<BlockSample>& blocks) {
  BlockSeries s;
  for (const auto& b : blocks) {
    const auto throughput = block_throughput(b);
    if (!throughput) continue;
    s.throughput.push_back(*throughput);
    s.cycles.push_back(b.cycle);
  }
  return s;
}

void unpack_series(int64_t trial_id, int64_t blocks, std::string_view throughput,
                   std::string_view cycles, BlockSeries& s) {
  const auto n = static_cast<size_t>(blocks);
  if (blocks < 0 || throughput.size() != 8 * n || (!cycles.empty() && cycles.size() != 8 * n)) {
    throw DbError("block_series of trial " + std::to_string(trial_id) + " is damaged (" +
                      std::to_string(blocks) + " blocks, " + std::to_string(throughput.size()) +
                      " and " + std::to_string(cycles.size()) +
                      " bytes); delete the row (sqlite3 FILE 'DELETE FROM block_series WHERE "
                      "trial_id = " +
                      std::to_string(trial_id) + "') and the trial's blocks are read instead",
                  SQLITE_CORRUPT);
  }
  s.throughput.resize(n);
  s.cycles.assign(n, std::nullopt);
  for (size_t i = 0; i < n; ++i) {
    s.throughput[i] = get_le<double>(throughput, i);
    if (cycles.empty()) continue;
    if (const auto c = get_le<int64_t>(cycles, i); c != kNoCycle) s.cycles[i] = c;
  }
}

void insert_series(Connection& db, int64_t trial_id, const BlockSeries& s) {
  auto st = db.prepare(
      "INSERT OR REPLACE INTO block_series (trial_id, blocks, throughput, cycles) VALUES (?, ?, "
      "?, ?)");
  st.bind(1, trial_id).bind(2, static_cast<int64_t>(s.throughput.size()));
  st.bind_blob(3, pack_throughput(s));
  const std::string cycles = pack_cycles(s);
  if (cycles.empty()) {
    st.bind_null(4);
  } else {
    st.bind_blob(4, cycles);
  }
  st.run();
}

void backfill_series(Connection& db) {
  // The blocks table's key is (trial_id, idx): read in that order, one pass.
  auto st = db.prepare(
      "SELECT trial_id, samples, seconds, cycle, steps FROM blocks ORDER BY trial_id, idx");
  int64_t current = -1;
  std::vector<BlockSample> blocks;
  const auto flush = [&] {
    if (current >= 0) insert_series(db, current, series_of(blocks));
    blocks.clear();
  };
  while (st.step()) {
    const int64_t trial = st.get_int(0);
    if (trial != current) {
      flush();
      current = trial;
    }
    BlockSample& b = blocks.emplace_back();
    b.samples = st.get_double(1);
    b.seconds = st.get_double(2);
    if (!st.is_null(3)) b.cycle = st.get_int(3);
    b.steps = st.get_int(4);
  }
  flush();
}

}  // namespace gpusweep::db
