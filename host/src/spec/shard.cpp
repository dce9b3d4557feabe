// Shard parsing and naming; see shard.hpp.
#include "spec/shard.hpp"

#include "support/error.hpp"

#include <cctype>

namespace gpusweep::host {

namespace {

// A positive decimal integer, or -1.
int64_t parse_count(const std::string& s) {
  if (s.empty() || s.size() > 7) return -1;
  int64_t v = 0;
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

Shard parse_shard(const std::string& text, const std::string& flag) {
  const std::string what = flag + " '" + text + "': ";
  const auto slash = text.find('/');
  if (slash == std::string::npos) {
    throw UsageError(what + "expected i/n, the 1-based shard i of n (for example " + flag +
                     " 1/4 ... " + flag + " 4/4)");
  }
  const int64_t i = parse_count(text.substr(0, slash));
  const int64_t n = parse_count(text.substr(slash + 1));
  if (i < 0 || n < 0) {
    throw UsageError(what + "i and n must be whole numbers, as in " + flag + " 2/8");
  }
  if (n < 1 || n > kMaxShards) {
    throw UsageError(what + "the number of shards must be 1 to " + std::to_string(kMaxShards));
  }
  if (i < 1 || i > n) {
    throw UsageError(what + "shards are numbered from 1 to n: use " + flag + " 1/" +
                     std::to_string(n) + " ... " + flag + " " + std::to_string(n) + "/" +
                     std::to_string(n));
  }
  return Shard{i, n};
}

std::string default_run_key(const std::string& spec_hash, int64_t count) {
  return "sweep:" + spec_hash + "/" + std::to_string(count);
}

std::string default_shard_db(const Shard& shard) {
  return "gpusweep-shard-" + std::to_string(shard.index) + "-of-" + std::to_string(shard.count) +
         ".db";
}

}  // namespace gpusweep::host
