// Constraints for `gpusweep best`: "peak_memory<8GiB", "quality>=0.99*baseline",
// "step_time<=2ms", "batch_size<=256" (a setting).
#pragma once

#include "spec/units.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>

namespace gpusweep::host {

enum class CompareOp { lt, le, gt, ge, eq, ne };
// "<", "<=", ">", ">=", "==", "!=".
const char* op_text(CompareOp op);

struct Constraint {
  std::string text;  // as written
  std::string
      name;  // a metric (throughput, peak_memory, step_time, quality, cv, input_wait) or a setting
  CompareOp op = CompareOp::lt;
  double value = 0;                       // in base units (bytes, seconds, fraction)
  bool relative_to_baseline = false;      // value is a factor of the baseline's
  std::optional<std::string> text_value;  // a string setting: precision==bf16
};

// The metrics a constraint or objective can name.
bool is_metric(const std::string& name);

// Parses one constraint; throws UsageError naming the text and the fix.
Constraint parse_constraint(const std::string& text);

// Whether a config with these metric values and settings meets c. A metric
// the config lacks (no quality reported) fails the constraint.
bool satisfies(const Constraint& c, const std::map<std::string, double>& metrics,
               const nlohmann::json& config, const std::map<std::string, double>& baseline);

}  // namespace gpusweep::host
