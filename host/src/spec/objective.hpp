// What `best` picks by and `tune` races on: one vocabulary for both.
#pragma once

#include <optional>
#include <string>

namespace gpusweep::host {

enum class Objective { throughput, step_time, peak_memory, time_to_target };

// "throughput", "step_time", "peak_memory" or "time_to_target"; "memory" and
// "time" are the older spellings `best` took. Nothing for any other text.
std::optional<Objective> parse_objective(const std::string& text);
// The canonical name (what outputs and stored records say).
const char* objective_name(Objective o);
// The names parse_objective takes, for an error message.
const char* objective_names();

}  // namespace gpusweep::host
