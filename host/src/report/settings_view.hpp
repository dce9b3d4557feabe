// `gpusweep settings`: the common settings' table (sdk/include/gpusweep/
// common_settings.hpp) as people and programs read it, and docs/settings.md.
#pragma once

#include "report/output.hpp"

#include <string>

namespace gpusweep::host {

// One row per setting: name, type, default, allowed values, the devices its
// values need, what it acts on, what the workload must have; table or csv.
std::string settings_list(OutputFormat format);

// docs/settings.md: the table, how a LibTorch plugin applies each setting,
// and the Support flags (a test compares it with the file).
std::string settings_markdown();

}  // namespace gpusweep::host
