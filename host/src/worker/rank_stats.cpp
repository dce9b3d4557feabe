// A data-parallel trial's statistics over its ranks: the slowest rank's
// blocks, each rank's exposed all-reduce, and the communication and
// imbalance they add up to.
#include "worker/trial.hpp"

#include "worker/ranks.hpp"

#include <gpusweep/stat_names.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace gpusweep::host::detail {

// Per rank: in how many measured blocks it was the slowest, and the
// others' memory and input wait (each rank's own figures; the trial's are
// rank 0's). The ranks wait for each other in every all-reduce: a rank's
// exposed all-reduce in a step is communication plus its wait for slower
// ranks, so the least of the ranks' figures step by step is the
// communication (dp_comm_exposed_measured_s) and the rest the imbalance
// (dp_imbalance_s: each step's mean over the ranks less that least;
// per_step_comm). A plugin that reports no per-step series gets the least
// of the ranks' totals since warmup, which keeps the waits of a straggler
// that changes from step to step (dp_comm_from_totals 1).
void Trial::add_rank_stats(Json& stats) {
  ranks_->set_phase(Phase::stats, steps_done_);
  std::vector<Json> others = ranks_->stats();
  if (!stats.is_object()) stats = Json::object();
  for (size_t r = 0; r < slowest_.size(); ++r) {
    stats["dp_rank" + std::to_string(r) + "_slowest_blocks"] = slowest_[r];
  }
  std::vector<double> measured = {exposed_of(stats)};
  for (const Json& other : others) measured.push_back(exposed_of(other));
  for (size_t r = 0; r < measured.size(); ++r) {
    measured[r] -= r < comm_before_.size() ? comm_before_[r] : 0.0;
    stats["dp_rank" + std::to_string(r) + "_comm_exposed_s"] = measured[r];
  }
  std::vector<std::vector<double>> series = {take_series(stats)};
  for (Json& other : others) series.push_back(take_series(other));
  if (const auto per_step = per_step_comm(series)) {
    stats[stat::dp_comm_exposed_measured_s] = per_step->comm_s;
    stats[stat::dp_imbalance_s] = per_step->imbalance_s;
    stats["dp_comm_steps"] = per_step->steps;
  } else {
    const auto [low, high] = std::minmax_element(measured.begin(), measured.end());
    stats[stat::dp_comm_exposed_measured_s] = *low;
    stats[stat::dp_imbalance_s] = *high - *low;
    stats["dp_comm_from_totals"] = 1;
  }
  for (size_t i = 0; i < others.size(); ++i) {
    const std::string prefix = "dp_rank" + std::to_string(i + 1) + "_";
    for (const std::string key : {stat::peak_memory_bytes, stat::input_wait_s}) {
      if (others[i].contains(key)) stats[prefix + key] = others[i][key];
    }
  }
}

double Trial::exposed_of(const Json& stats) {
  return stats.is_object() ? stats.value(stat::dp_comm_exposed_s, 0.0) : 0.0;
}
// A rank's exposed all-reduce per measured step (stats_series'
// dp_comm_exposed_steps_s), taken out of its stats: the host needs the
// combined figures, not the series.
std::vector<double> Trial::take_series(Json& stats) {
  std::vector<double> out;
  if (!stats.is_object()) return out;
  const auto it = stats.find("dp_comm_exposed_steps_s");
  if (it == stats.end()) return out;
  if (it->is_array()) {
    for (const auto& v : *it) out.push_back(v.is_number() ? v.get<double>() : 0.0);
  }
  stats.erase(it);
  return out;
}

}  // namespace gpusweep::host::detail
