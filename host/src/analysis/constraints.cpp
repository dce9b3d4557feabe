// Constraint parsing and checking; see constraints.hpp.
#include "analysis/constraints.hpp"

#include "spec/manifest.hpp"
#include "spec/metrics.hpp"
#include "support/error.hpp"
#include "support/format.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace gpusweep::host {

bool is_metric(const std::string& name) {
  const Metric* m = find_metric(name);
  return m != nullptr && m->in_summary;
}

namespace {

struct OpName {
  CompareOp op;
  const char* text;
};
// Two-character operators first, so that "<=" is not read as "<".
constexpr OpName kOps[] = {{CompareOp::le, "<="}, {CompareOp::ge, ">="}, {CompareOp::eq, "=="},
                           {CompareOp::ne, "!="}, {CompareOp::lt, "<"},  {CompareOp::gt, ">"}};

}  // namespace

const char* op_text(CompareOp op) {
  for (const OpName& o : kOps) {
    if (o.op == op) return o.text;
  }
  return "?";
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
  const OpName* found = nullptr;
  for (const OpName& o : kOps) {
    if (text.compare(pos, std::char_traits<char>::length(o.text), o.text) == 0) {
      found = &o;
      break;
    }
  }
  if (found == nullptr) throw UsageError(ctx + ": unknown operator (use <, <=, >, >=, == or !=)");
  c.op = found->op;
  std::string rhs = trim(text.substr(pos + std::char_traits<char>::length(found->text)));
  if (rhs.empty()) throw UsageError(ctx + ": missing the value after " + found->text);
  const std::string suffix = "*baseline";
  if (rhs == "baseline") {
    c.relative_to_baseline = true;
    c.value = 1;
  } else if (rhs.size() > suffix.size() &&
             rhs.compare(rhs.size() - suffix.size(), suffix.size(), suffix) == 0) {
    c.relative_to_baseline = true;
    c.value = parse_quantity(trim(rhs.substr(0, rhs.size() - suffix.size())), ctx);
  } else if (!is_metric(c.name) && (c.op == CompareOp::eq || c.op == CompareOp::ne) &&
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
      const std::string have = value_text(*it);
      return (have == *c.text_value) == (c.op == CompareOp::eq);
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
  switch (c.op) {
    case CompareOp::lt:
      return lhs < rhs;
    case CompareOp::le:
      return lhs <= rhs;
    case CompareOp::gt:
      return lhs > rhs;
    case CompareOp::ge:
      return lhs >= rhs;
    case CompareOp::eq:
      return lhs == rhs;
    default:
      return lhs != rhs;
  }
}

}  // namespace gpusweep::host
