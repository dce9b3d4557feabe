// `gpusweep compare`'s page in the table format: the run and its baseline,
// the comparison, the times to target, the knob table, the scaling table,
// the claims and the legend, in that order.
#pragma once

#include <gpusweep/db/store.hpp>
#include "analysis/claims.hpp"
#include "analysis/compare.hpp"
#include "report/output.hpp"

#include <string>
#include <vector>

namespace gpusweep::host {

struct ComparePage {
  const db::SweepRecord* sweep = nullptr;
  const SweepSpec* spec = nullptr;
  const CompareOptions* options = nullptr;
  Rounds rounds = Rounds::all;
  const std::vector<ConfigSamples>* configs = nullptr;
  const std::vector<ComparisonRow>* rows = nullptr;  // compare_configs(*configs, *options)
  std::vector<std::string> keys;                     // the settings that vary
  std::vector<AblationRow> knobs;                    // ablation(*configs, grid, *options)
  std::vector<ClaimResult> claims;                   // the spec's claims, evaluated
};

// The page's first lines: the run, its baseline, and which rounds count.
std::string compare_header(const ComparePage& page);

// Under the tables: how their numbers are made, and what a family of
// intervals means.
std::string compare_footer(const ComparePage& page);

// compare --knobs, --scaling or --target (`which`): that table alone, in
// any format; UsageError when the run has nothing for it.
std::string compare_one_table(const ComparePage& page, const std::string& which,
                              OutputFormat format);

// The whole page.
std::string compare_page(const ComparePage& page);

}  // namespace gpusweep::host
