// `gpusweep tune-batch`'s output: a progress line per probe, then the
// throughput curve and the verdict; or all of it as one JSON document.
#pragma once

#include "analysis/batch_search.hpp"
#include "model/sweep.hpp"

#include <nlohmann/json.hpp>

#include <optional>
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

}  // namespace gpusweep::host
