// `gpusweep best`'s views; see best_view.hpp.
#include "report/best_view.hpp"

#include "report/output.hpp"
#include "support/format.hpp"

#include <sstream>

namespace gpusweep::host {

namespace {

std::string config_list(const std::vector<int64_t>& indices) {
  std::string out;
  for (size_t i = 0; i < indices.size(); ++i) {
    out += (i == 0                    ? ""
            : i + 1 == indices.size() ? " and "
                                      : ", ") +
           std::to_string(indices[i] + 1);
  }
  return out;
}

// Why nothing was picked, in words.
std::string nothing_text(const BestChoice& b, const std::string& sweep_name) {
  if (b.ran_ok == 0) {
    return "nothing of sweep '" + sweep_name + "' ran ok: none of its " +
           std::to_string(b.configs) +
           " configs has an ok trial (gpusweep results shows each trial's status; gpusweep "
           "results --trial ID its error)\n";
  }
  if (b.constraints == 0) {
    return "no config of sweep '" + sweep_name + "' has a " + objective_name(b.objective) +
           " figure (" + std::to_string(b.ran_ok) + " of " + std::to_string(b.configs) +
           " configs ran ok)\n";
  }
  return "no config of sweep '" + sweep_name + "' meets the constraints (" +
         std::to_string(b.ran_ok) + " of " + std::to_string(b.configs) + " configs ran ok)\n";
}

}  // namespace

std::string render_best(const BestChoice& b, const std::string& sweep_name) {
  if (!b.config_index) return nothing_text(b, sweep_name);
  std::ostringstream out;
  auto metric = [&](const char* name) { return b.metrics.count(name) ? b.metrics.at(name) : 0.0; };
  out << "best of " << b.eligible << " eligible configs (of " << b.configs << ") by "
      << objective_name(b.objective) << ": config " << *b.config_index + 1 << "\n";
  out << "  throughput " << human_rate(metric("throughput"), b.unit);
  if (b.ratio) {
    out << ", " << fixed(b.ratio->ratio, 3) << "x the baseline "
        << interval_text(b.ratio->low, b.ratio->high);
    if (b.verdict) out << " (" << to_string(*b.verdict) << ")";
  } else if (b.config_index == b.baseline_index) {
    out << " (the baseline)";
  }
  if (b.metrics.count("secondary_throughput")) {
    out << " (" << human_rate(metric("secondary_throughput"), b.secondary_unit) << ")";
  }
  out << ", step time " << human_seconds(metric("step_time"));
  if (b.metrics.count("achieved_flops")) {
    out << ", " << human_rate(metric("achieved_flops"), "FLOP");
    if (b.metrics.count("mfu")) out << " (" << fixed(100 * metric("mfu"), 0) << "% MFU)";
  }
  if (b.metrics.count("compile_s")) {
    out << ", compile " << fixed(metric("compile_s"), 1) << " s (in the warmup)";
  }
  if (b.metrics.count("peak_memory")) out << ", peak memory " << human_bytes(metric("peak_memory"));
  if (b.metrics.count("quality")) out << ", quality " << human_count(metric("quality"));
  if (b.metrics.count("time_to_target")) {
    out << ", time to target " << human_seconds(metric("time_to_target")) << " (median)";
  }
  out << "\n";
  if (b.tied.size() > 1) {
    out << "  tie: configs " << config_list(b.tied)
        << " cannot be told apart from the fastest, config " << *b.leader + 1
        << " (in compare, their ratios lie inside its interval, or within --min-effect of "
           "its ratio); picked "
        << *b.config_index + 1 << ": " << b.rule << "\n";
  }
  if (!b.baseline_problem.empty()) {
    out << "  note: the baseline has no ok trial (" << truncate(b.baseline_problem, 120)
        << "): no ratio to it\n";
  }
  for (const auto& n : b.notes) out << "  note: " << n << "\n";
  out << "\nsweep-file snippet:\n" << nlohmann::json{{"base", b.base}}.dump(2) << "\n";
  return out.str();
}

nlohmann::json best_json(const BestChoice& b, const std::string& sweep_name) {
  nlohmann::json doc = {{"sweep", sweep_name},    {"objective", objective_name(b.objective)},
                        {"configs", b.configs},   {"configs_ok", b.ran_ok},
                        {"eligible", b.eligible}, {"best", nullptr}};
  if (!b.config_index) {
    std::string why = nothing_text(b, sweep_name);
    why.pop_back();
    doc["why"] = why;
    return doc;
  }
  auto number = [](const std::optional<RatioEstimate>& r, double RatioEstimate::*field) {
    return r ? nlohmann::json(*r.*field) : nlohmann::json();
  };
  std::vector<int64_t> tied;
  for (const int64_t t : b.tied) tied.push_back(t + 1);
  doc["best"] = {{"config", *b.config_index + 1},
                 {"settings", b.config},
                 {"unit", b.unit},
                 {"metrics", b.metrics},
                 {"baseline_metrics", b.baseline},
                 {"throughput_ratio", number(b.ratio, &RatioEstimate::ratio)},
                 {"ci_low", number(b.ratio, &RatioEstimate::low)},
                 {"ci_high", number(b.ratio, &RatioEstimate::high)},
                 {"p_value", number(b.ratio, &RatioEstimate::p)},
                 {"verdict", b.verdict ? nlohmann::json(to_string(*b.verdict)) : nlohmann::json()},
                 {"notes", b.notes},
                 {"fastest", b.leader ? nlohmann::json(*b.leader + 1) : nlohmann::json()},
                 {"tied", tied},
                 {"tie_rule", b.rule},
                 {"snippet", {{"base", b.base}}}};
  return doc;
}

}  // namespace gpusweep::host
