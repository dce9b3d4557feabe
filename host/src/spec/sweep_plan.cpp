// A sweep's plan: its configs (expand_configs) and the baseline among them,
// the order each round runs them in (round_order), the trials of the first
// grid (plan_trials), each repeat's seed (repeat_seed), and the labels of
// the keys that vary.
#include "spec/sweep.hpp"

#include "spec/hashing.hpp"

#include <gpusweep/random.hpp>

#include <algorithm>
#include <numeric>

namespace gpusweep::host {

uint64_t repeat_seed(uint64_t seed, int64_t repeat, uint64_t low, uint64_t high) {
  if (repeat == 0 || high <= low) return seed;
  random::SplitMix64 rng(seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(repeat));
  return low + random::uniform_below(rng, high - low + 1);
}

std::vector<Json> expand_configs(const SweepSpec& spec, const PluginManifest& manifest) {
  Json base = manifest.defaults();
  for (const auto& [key, value] : spec.base.items()) base[key] = value;
  std::vector<Json> out{base};
  for (const auto& [key, values] : spec.grid.items()) {
    std::vector<Json> next;
    next.reserve(out.size() * values.size());
    for (const auto& partial : out) {
      for (const auto& v : values) {
        Json c = partial;
        c[key] = v;
        next.push_back(std::move(c));
      }
    }
    out = std::move(next);
  }
  // A float written as 1 or 1.0 is the same setting: one identity, one hash.
  for (auto& c : out) {
    for (const auto& p : manifest.params) {
      if (p.type == ParamType::real && c[p.name].is_number()) c[p.name] = c[p.name].get<double>();
    }
  }
  return out;
}

bool matches(const Json& config, const Json& partial) {
  for (const auto& [key, value] : partial.items()) {
    auto it = config.find(key);
    if (it == config.end() || *it != value) return false;
  }
  return true;
}

bool is_baseline(const Json& baseline, int64_t config_index, const Json& config) {
  return baseline.empty() ? config_index == 0 : matches(config, baseline);
}

namespace {

// The shift of the w-th pair of a block of k configs' rounds (see
// round_order). Even k: the even shifts, the one nearest k / 2 second (half
// a round on: the ends of the first pair run in the middle), then the rest.
// Odd k: multiples of (k - 1) / 2, coprime with k, so that every shift comes
// once a block, each about half a round from the one before.
int64_t block_shift(int64_t k, int64_t w) {
  if (k <= 2) return 0;
  if (k % 2 == 1) return (w * ((k - 1) / 2)) % k;
  const int64_t half = (k / 2) % 2 == 0 ? k / 2 : k / 2 - 1;  // the even shift nearest k / 2
  if (w == 0) return 0;
  if (w == 1) return half;
  int64_t s = 2 * (w - 1);  // 2, 4, ... skipping half
  if (s >= half) s += 2;
  return s % k;
}

}  // namespace

std::vector<uint64_t> round_order(std::vector<uint64_t> configs, uint64_t order_seed,
                                  int64_t round) {
  // Rounds come in pairs, a seeded order then its mirror image, and pairs in
  // blocks: a block's pairs share one seeded order, each pair's shifted so
  // that over the block every config takes every place (a cyclic Latin
  // square of mirrored pairs). k configs take k / 2 pairs a block (shifts
  // 0, 2, 4, ...: a place p then visits p + s and its mirror k - 1 - p - s
  // for every even s, all k places), an odd k takes k pairs (every shift,
  // each place twice).
  const int64_t pair = round >= 0 ? round / 2 : (round - 1) / 2;
  const bool mirror = round - 2 * pair == 1;
  const auto k = static_cast<int64_t>(configs.size());
  const int64_t pairs_a_block = k <= 1 ? 1 : (k % 2 == 0 ? k / 2 : k);
  const int64_t block = pair >= 0 ? pair / pairs_a_block : (pair + 1) / pairs_a_block - 1;
  const int64_t within = pair - block * pairs_a_block;
  const int64_t shift = block_shift(k, within);
  // Each config's key, drawn once a block: the block's order.
  std::vector<std::pair<uint64_t, uint64_t>> keyed;  // (key, config)
  keyed.reserve(configs.size());
  for (uint64_t c : configs) {
    random::SplitMix64 rng(order_seed * 1000003ULL + static_cast<uint64_t>(block) +
                           c * 0x9E3779B97F4A7C15ULL);
    keyed.push_back({random::bits64(rng), c});
  }
  std::sort(keyed.begin(), keyed.end());
  for (int64_t i = 0; i < k; ++i) {
    const int64_t place = (i + shift) % k;
    configs[static_cast<size_t>(mirror ? k - 1 - place : place)] =
        keyed[static_cast<size_t>(i)].second;
  }
  return configs;
}

std::vector<PlannedTrial> plan_trials(const SweepSpec& spec, const PluginManifest& manifest) {
  const auto configs = expand_configs(spec, manifest);
  std::vector<PlannedTrial> out;
  out.reserve(configs.size() * static_cast<size_t>(spec.measure.repeats));
  std::vector<uint64_t> all(configs.size());
  std::iota(all.begin(), all.end(), 0);
  int64_t ordinal = 0;
  for (int64_t r = 0; r < spec.measure.repeats; ++r) {
    for (uint64_t idx : round_order(all, spec.measure.order_seed, r)) {
      PlannedTrial t;
      t.ordinal = ordinal++;
      t.config_index = static_cast<int64_t>(idx);
      t.repeat = r;
      t.config = configs[idx];
      t.config_hash = config_hash(manifest.name, manifest.version, t.config);
      out.push_back(std::move(t));
    }
  }
  return out;
}

std::vector<std::string> varying_keys(const SweepSpec& spec) {
  std::vector<std::string> keys;
  for (const auto& [key, values] : spec.grid.items()) {
    if (values.size() > 1) keys.push_back(key);
  }
  return keys;
}

std::string config_label(const Json& config, const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) {
    if (!out.empty()) out += " ";
    out += k + "=" + value_text(config.contains(k) ? config.at(k) : Json());
  }
  return out;
}

std::string config_label(const Json& config) {
  std::string out;
  for (const auto& [k, v] : config.items())
    out += (out.empty() ? "" : " ") + k + "=" + value_text(v);
  return out;
}

}  // namespace gpusweep::host
