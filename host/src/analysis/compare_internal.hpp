// What compare's parts share (compare.hpp): the baseline a comparison reads,
// found by compare_configs (compare.cpp) and ablation (compare_ablation.cpp).
// Internal to the analysis layer.
#pragma once

#include "analysis/compare.hpp"

#include <vector>

namespace gpusweep::host::detail {

// The config options.baseline picks; throws UsageError when it picks none or
// several.
const ConfigSamples* find_baseline(const std::vector<ConfigSamples>& configs,
                                   const CompareOptions& options);

}  // namespace gpusweep::host::detail
