// The model read back from the database: a run's sweep as it ran, and its
// trials as one typed record each (the row, the host's own stats, where it
// ran, its time to target), which every view reads instead of looking up
// stats by name trial by trial.
#pragma once

#include "analysis/time_to_target.hpp"
#include "spec/stats.hpp"
#include "spec/sweep.hpp"

#include <gpusweep/db/store.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

// The sweep spec stored with a sweep row.
SweepSpec stored_spec(const db::SweepRecord& sweep);

// Where a trial ran, for telling comparisons across machines: host, CPU and
// the GPUs it could see ("" when the database does not say).
std::string machine_key(const db::EnvironmentInfo& e);

// machine_key of each environment, by its id.
using Machines = std::map<int64_t, std::string>;
Machines machines_of(const std::vector<db::EnvironmentInfo>& environments);

// One trial of a run, as every view reads it.
struct StoredTrial {
  db::TrialRecord row;   // plan, status, error, summary, ...
  HostStatValues stats;  // the host's own stats, each its last value
  // torchkit's own stats that views read (the SDK's names, not the host's).
  std::optional<double> dp_allreduce_bytes_per_step;
  std::optional<double> intra_op_threads;
  // torch.compile's seconds (in the warmup), and the FLOPs of one step where
  // the workload counted them (the script workload: PyTorch's FLOP counter).
  std::optional<double> compile_s;
  std::optional<double> flops_per_step;
  // The training clock at its last evaluation (the curve gpusweep.train_s).
  std::optional<double> last_eval_train_s;
  std::string machine;  // machine_key of its environment; "" when unknown

  // Its time to measure.target with its censoring: from its stats when it
  // finished; when timeout_s killed it after an evaluation, censored at
  // that evaluation's clock; nothing otherwise.
  std::optional<TargetTime> target() const;
  // The matmul peak (FLOP/s) it measured on its device (a probe): a GPU
  // trial's GPU; a CPU trial's CPU, even where a GPU was probed too.
  std::optional<double> peak_flops() const;
  // Its step's FLOPs at its median throughput (FLOP/s), where it counted them.
  std::optional<double> achieved_flops() const;
};

// Every trial of a run in ordinal order, in at most four reads whatever
// their number (the trials, the stats, the environments, and where a trial
// timed out the evaluations' clocks). Blocks
// are not read: a view needing them reads the run's series
// (db::Store::for_each_series) or one trial's blocks.
std::vector<StoredTrial> stored_trials(db::Store& store, int64_t sweep_id,
                                       db::TrialFields fields = db::TrialFields::brief);

// A time to target from its three stats, however they were read: censored
// when `censored` > 0, never reaching it (and censored) when `diverged` > 0.
std::optional<TargetTime> target_time(int64_t repeat, std::optional<double> time,
                                      std::optional<double> censored,
                                      std::optional<double> diverged = std::nullopt);

}  // namespace gpusweep::host
