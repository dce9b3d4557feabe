// `gpusweep tune-batch`'s output: a progress line per probe, then the
// throughput curve and the verdict; or all of it as one JSON document.
#pragma once

#include <gpusweep/db/store.hpp>
#include "analysis/batch_search.hpp"
#include "analysis/compare.hpp"
#include "spec/sweep.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <ostream>
#include <string>

namespace gpusweep::host {

// The line tune-batch starts with: the search, the cap, where probes go.
std::string tune_batch_header(const std::string& workload, const SearchOptions& search,
                              double max_memory_bytes, const std::string& sweep_name,
                              int64_t sweep_id, const std::string& db_path);

// "  probe  batch 64: ok, 1.20k samples/s, peak 1.50 GiB"
std::string probe_line(const BatchProbe& p);

// The curve table and the verdict lines.
std::string render_tune_batch(const BatchTuneResult& r, const SearchOptions& search,
                              const MeasureSpec& verify_measure);

nlohmann::json tune_batch_json(const BatchTuneResult& r, const SearchOptions& search);

// tune-batch with measure.target: the batch sizes' times to target (the
// target sweep's rows, its baseline the batch with the most samples/s), and
// which reached the target first against the samples/s winner, with the
// paired time ratio and an inversion flagged.
std::string render_batch_target(const std::vector<TargetRow>& rows, const std::string& sweep);
nlohmann::json batch_target_json(const std::vector<TargetRow>& rows, const std::string& sweep);

// The target stage's latest run in `store` (sweep `name`) against its
// baseline: into out["time_to_target"] (json), else as text, labelled as
// selection data. Nothing when the run is not there.
void report_batch_target(db::Store& store, const std::string& name, const Json& baseline, bool json,
                         nlohmann::json& out, std::ostream& text);

}  // namespace gpusweep::host
