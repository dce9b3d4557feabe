// `gpusweep compare`'s tables: the comparison of every config with the
// baseline, the knob ablation and the claims, in every output format.
#pragma once

#include "analysis/claims.hpp"
#include "analysis/compare.hpp"
#include "report/output.hpp"

#include <string>
#include <vector>

namespace gpusweep::host {

// One record per config: its varying settings (keys), throughput, ratio and
// interval, U-test p, verdict, quality change, peak memory, noise.
std::vector<Json> comparison_records(const std::vector<ComparisonRow>& rows,
                                     const std::vector<std::string>& keys);
std::string render_comparison(const std::vector<Json>& records,
                              const std::vector<std::string>& keys, OutputFormat format);

// "which knob matters" as a text table ("" when there are no knobs).
// The lines under compare's table: how the ratio, its interval and the
// quality change are made.
std::string comparison_legend(double max_quality_loss);

std::string render_ablation(const std::vector<AblationRow>& knobs,
                            OutputFormat format = OutputFormat::table);

// Each claim, what was measured, and the verdict.
// A target run's times to target (compare_targets), in any format; the
// table with its heading.
std::string render_targets(const std::vector<TargetRow>& rows, const std::vector<std::string>& keys,
                           OutputFormat format);

std::string render_claims(const std::vector<ClaimResult>& results, OutputFormat format);

}  // namespace gpusweep::host
