// Constraint parsing and checking; see constraints.hpp.
#include "analysis/constraints.hpp"

#include "model/metrics.hpp"
#include "support/error.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace gpusweep::host {

bool is_metric(const std::string& name) {
  const Metric* m = find_metric(name);
  return m != nullptr && m->in_summary;
}

Constraint parse_constraint(const std::string& text) {
  Constraint c;
  c.text = text;
  const std::string ctx = "--constraint '" + text + "'";
  size_t pos = text.find_first_of("<>=!");
  if (pos == std::string::npos || pos == 0) {
    throw UsageError(ctx +
                     ": expected NAME OP VALUE, for example peak_memory<8GiB or "
                     "quality>=0.99*baseline");
  }
  auto trim = [](std::string s) {
    const auto b = s.find_first_not_of(" \t");
    const auto e = s.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  c.name = trim(text.substr(0, pos));
  for (const char* op : {"<=", ">=", "==", "!=", "<", ">"}) {
    if (text.compare(pos, std::char_traits<char>::length(op), op) == 0) {
      c.op = op;
      break;
    }
  }
  if (c.op.empty()) throw UsageError(ctx + ": unknown operator (use <, <=, >, >=, == or !=)");
  std::string rhs = trim(text.substr(pos + c.op.size()));
  if (rhs.empty()) throw UsageError(ctx + ": missing the value after " + c.op);
  const std::string suffix = "*baseline";
  if (rhs == "baseline") {
    c.relative_to_baseline = true;
    c.value = 1;
  } else if (rhs.size() > suffix.size() &&
             rhs.compare(rhs.size() - suffix.size(), suffix.size(), suffix) == 0) {
    c.relative_to_baseline = true;
    c.value = parse_quantity(trim(rhs.substr(0, rhs.size() - suffix.size())), ctx);
  } else if (!is_metric(c.name) && (c.op == "==" || c.op == "!=") &&
             !std::isdigit(static_cast<unsigned char>(rhs[0])) && rhs[0] != '-' && rhs[0] != '.') {
    c.text_value = rhs;  // a string or boolean setting
  } else {
    c.value = parse_quantity(rhs, ctx);
  }
  if (c.relative_to_baseline && !is_metric(c.name)) {
    throw UsageError(ctx + ": only metrics (" + name_list(summary_metric_names()) +
                     ") can be relative to the baseline");
  }
  return c;
}

bool satisfies(const Constraint& c, const std::map<std::string, double>& metrics,
               const nlohmann::json& config, const std::map<std::string, double>& baseline) {
  double lhs = 0;
  if (is_metric(c.name)) {
    auto it = metrics.find(c.name);
    if (it == metrics.end()) return false;
    lhs = it->second;
  } else {
    auto it = config.find(c.name);
    if (it == config.end()) return false;
    if (c.text_value) {
      const std::string have = it->is_string() ? it->get<std::string>() : it->dump();
      return (have == *c.text_value) == (c.op == "==");
    }
    if (it->is_boolean()) {
      lhs = it->get<bool>() ? 1 : 0;
    } else if (it->is_number()) {
      lhs = it->get<double>();
    } else {
      return false;
    }
  }
  double rhs = c.value;
  if (c.relative_to_baseline) {
    auto it = baseline.find(c.name);
    if (it == baseline.end()) return false;
    rhs = c.value * it->second;
  }
  if (c.op == "<") return lhs < rhs;
  if (c.op == "<=") return lhs <= rhs;
  if (c.op == ">") return lhs > rhs;
  if (c.op == ">=") return lhs >= rhs;
  if (c.op == "==") return lhs == rhs;
  return lhs != rhs;
}

}  // namespace gpusweep::host
