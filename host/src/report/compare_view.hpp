// `gpusweep compare`'s tables: the comparison of every config with the
// baseline, the knob ablation and the claims, in every output format.
#pragma once

#include "analysis/claims.hpp"
#include "analysis/compare.hpp"
#include "analysis/scaling.hpp"
#include "report/output.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gpusweep::host {

// One record per config: its varying settings (keys), throughput, ratio and
// interval, U-test p, verdict, quality change, peak memory, noise.
// rows[begin, end) only, when given.
std::vector<Json> comparison_records(const std::vector<ComparisonRow>& rows,
                                     const std::vector<std::string>& keys, size_t begin = 0,
                                     size_t end = SIZE_MAX);
std::string render_comparison(const std::vector<Json>& records,
                              const std::vector<std::string>& keys, OutputFormat format);
// The same listing made from the rows a chunk of records at a time
// (render_chunks): 10,000 configs' records never held at once.
std::string render_comparison(const std::vector<ComparisonRow>& rows,
                              const std::vector<std::string>& keys, OutputFormat format);

// compare's table as text cells, each as the table format shows it, with the
// notes every config shares (said once under compare's table) as its footer.
TextTable comparison_cells(const std::vector<ComparisonRow>& rows,
                           const std::vector<std::string>& keys);

// "which knob matters" as a text table ("" when there are no knobs).
// The lines under compare's table: how the ratio, its interval and the
// quality change are made.
std::string comparison_legend(double max_quality_loss);

// A record's achieved_flops and mfu as "1.23 TFLOP/s (41% MFU)", or "-".
std::string flops_text(const Json& record);

std::string render_ablation(const std::vector<AblationRow>& knobs,
                            OutputFormat format = OutputFormat::table);

// Each claim, what was measured, and the verdict.
// A target run's times to target (compare_targets), in any format; the
// table with its heading.
std::string render_targets(const std::vector<TargetRow>& rows, const std::vector<std::string>& keys,
                           OutputFormat format);

std::string render_claims(const std::vector<ClaimResult>& results, OutputFormat format);

// Data-parallel scaling (analysis/scaling.hpp), in any format; the table
// with its heading, "" when no config has world_size > 1.
std::string render_scaling(const std::vector<ScalingRow>& rows,
                           const std::vector<std::string>& keys, OutputFormat format);

}  // namespace gpusweep::host
