// The objectives' names; see objective.hpp.
#include "spec/objective.hpp"

namespace gpusweep::host {

std::optional<Objective> parse_objective(const std::string& text) {
  if (text == "throughput") return Objective::throughput;
  if (text == "step_time" || text == "time") return Objective::step_time;
  if (text == "peak_memory" || text == "memory") return Objective::peak_memory;
  if (text == "time_to_target") return Objective::time_to_target;
  return std::nullopt;
}

const char* objective_name(Objective o) {
  switch (o) {
    case Objective::step_time:
      return "step_time";
    case Objective::peak_memory:
      return "peak_memory";
    case Objective::time_to_target:
      return "time_to_target";
    case Objective::throughput:
      break;
  }
  return "throughput";
}

const char* objective_names() {
  return "throughput, step_time, peak_memory or time_to_target (memory and time are older "
         "spellings of peak_memory and step_time)";
}

}  // namespace gpusweep::host
