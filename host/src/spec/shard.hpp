// `--shard i/n`: the slice of a sweep's planned trials that one host runs,
// so that a sweep can be split across machines (by hand or as a Slurm job
// array) and merged back. Shards are 1-based, like Slurm array task ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpusweep::host {

struct Shard {
  int64_t index = 1;  // 1..count
  int64_t count = 1;

  std::string label() const { return std::to_string(index) + "/" + std::to_string(count); }
};

// The most shards a run can be split into.
constexpr int64_t kMaxShards = 1000000;

// Parses "i/n" (1 <= i <= n). Throws UsageError naming `flag` and the fix.
Shard parse_shard(const std::string& text, const std::string& flag = "--shard");

// Whether the trial at `position` (0-based, in plan order) belongs to the
// shard. Round robin: position p goes to shard (p mod n) + 1, so every trial
// is in exactly one shard for any n, shards differ by at most one trial, and
// each shard keeps the plan's interleaving of repeats (round r before r+1).
inline bool in_shard(size_t position, const Shard& shard) {
  return static_cast<int64_t>(position % static_cast<uint64_t>(shard.count)) == shard.index - 1;
}

// The shard's trials, in plan order.
template <class T>
std::vector<T> shard_slice(const std::vector<T>& plan, const Shard& shard) {
  std::vector<T> out;
  for (size_t p = 0; p < plan.size(); ++p) {
    if (in_shard(p, shard)) out.push_back(plan[p]);
  }
  return out;
}

// The run key shards of the same sweep share when none is given: the sweep's
// hash and the shard count, so that `run --shard i/n` of one sweep file on
// several machines merges into one run.
std::string default_run_key(const std::string& spec_hash, int64_t count);

// The database a shard writes when no --db is given: gpusweep-shard-I-of-N.db.
std::string default_shard_db(const Shard& shard);

}  // namespace gpusweep::host
