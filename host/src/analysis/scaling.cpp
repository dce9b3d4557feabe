// Data-parallel scaling; see scaling.hpp.
#include "analysis/scaling.hpp"

#include "analysis/precision.hpp"
#include "spec/gpus.hpp"
#include "support/descriptive.hpp"

#include <cmath>

namespace gpusweep::host {

namespace {

// What pairs a config with its single-process twin: its settings without
// world_size and the dp_ settings, and batch_size times `batch_factor`.
Json pairing_key(const Json& config, int64_t batch_factor = 1) {
  Json key = Json::object();
  for (const auto& [k, v] : config.items()) {
    if (k == "world_size" || k.rfind("dp_", 0) == 0) continue;
    key[k] = v;
  }
  if (batch_factor != 1 && key.contains("batch_size") && key["batch_size"].is_number_integer()) {
    key["batch_size"] = key["batch_size"].get<int64_t>() * batch_factor;
  }
  return key;
}

const ConfigSamples* single_process(const std::vector<ConfigSamples>& configs, const Json& key) {
  for (const auto& s : configs) {
    if (world_size_of(s.config) == 1 && s.ok > 0 && pairing_key(s.config) == key) return &s;
  }
  return nullptr;
}

// Why a single process is no twin for N ranks on the CPU ("" when it is):
// it ran another number of intra-op threads than each rank, so the speed-up
// would measure thread scaling too (with threads 0 the single process takes
// every core and a rank one thread).
std::string threads_mismatch(const ConfigSamples& ranks, const ConfigSamples& single) {
  if (!ranks.threads || !single.threads || *ranks.threads == *single.threads) return "";
  const auto count = [](double t) { return std::to_string(static_cast<int64_t>(t)); };
  return "not compared: the single process ran " + count(*single.threads) +
         " threads and each rank " + count(*ranks.threads) +
         "; set threads (threads: 1, say) so that N ranks compare with N times one process of "
         "the same threads";
}

ScalingRow scaled(ScalingRow row, const ConfigSamples* single, double level) {
  row.single = single;
  const ConfigSamples& c = *row.config;
  const std::string mismatch = threads_mismatch(c, *single);
  if (c.ok == 0) {
    row.note = c.problem;
  } else if (!mismatch.empty()) {
    row.note = mismatch;
  } else if ((row.speedup = estimate_ratio(single->runs, c.runs, level))) {
    const auto n = static_cast<double>(row.world_size);
    row.efficiency = row.speedup->ratio / n;
    row.low = row.speedup->low / n;
    row.high = row.speedup->high / n;
    row.note = design_note(*row.speedup);
  } else {
    row.note = "too few blocks for an interval";
  }
  return row;
}

}  // namespace

std::vector<ScalingRow> scaling(const std::vector<ConfigSamples>& configs,
                                const CompareOptions& options) {
  std::vector<ScalingRow> rows;
  const double level = interval_level(options);
  for (const auto& c : configs) {
    const int64_t world = world_size_of(c.config);
    if (world <= 1) continue;
    ScalingRow row;
    row.config = &c;
    row.world_size = world;
    if (!c.comm_share.empty()) row.comm_share = quantile(c.comm_share, 0.5);
    row.allreduce_bytes_per_step = c.allreduce_bytes_per_step;
    const ConfigSamples* weak = single_process(configs, pairing_key(c.config));
    const ConfigSamples* strong = c.config.contains("batch_size")
                                      ? single_process(configs, pairing_key(c.config, world))
                                      : nullptr;
    if (weak != nullptr) rows.push_back(scaled(row, weak, level));
    if (strong != nullptr) {
      row.kind = "strong";
      rows.push_back(scaled(row, strong, level));
    }
    if (weak != nullptr || strong != nullptr) continue;
    row.note =
        "no config with these settings at world_size 1 ran ok: add 1 to world_size (and "
        "world_size x batch_size to batch_size for the same global batch)";
    rows.push_back(row);
  }
  return rows;
}

}  // namespace gpusweep::host
