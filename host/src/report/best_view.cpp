// `gpusweep best`'s views; see best_view.hpp.
#include "report/best_view.hpp"

#include "report/output.hpp"
#include "support/format.hpp"

#include <sstream>

namespace gpusweep::host {

namespace {

std::optional<double> ratio_to_baseline(const BestChoice& b) {
  const auto base = b.baseline.find("throughput");
  const auto mine = b.metrics.find("throughput");
  if (base == b.baseline.end() || mine == b.metrics.end() || base->second <= 0) return std::nullopt;
  return mine->second / base->second;
}

}  // namespace

std::string render_best(const BestChoice& b, const std::string& sweep_name) {
  std::ostringstream out;
  if (!b.config_index) {
    out << "no config of sweep '" << sweep_name << "' meets the constraints (" << b.configs
        << " configs)\n";
    return out.str();
  }
  auto metric = [&](const char* name) { return b.metrics.count(name) ? b.metrics.at(name) : 0.0; };
  out << "best of " << b.eligible << " eligible configs (of " << b.configs << ") by "
      << objective_name(b.objective) << ": config #" << *b.config_index + 1 << "\n";
  out << "  throughput " << human_rate(metric("throughput"), b.unit) << ", step time "
      << human_seconds(metric("step_time"));
  if (b.metrics.count("peak_memory")) out << ", peak memory " << human_bytes(metric("peak_memory"));
  if (b.metrics.count("quality")) out << ", quality " << human_count(metric("quality"));
  if (b.metrics.count("time_to_target")) {
    out << ", time to target " << human_seconds(metric("time_to_target")) << " (median)";
  }
  if (auto r = ratio_to_baseline(b)) out << ", " << fixed(*r, 2) << "x the baseline";
  out << "\n\nsweep-file snippet:\n" << nlohmann::json{{"base", b.base}}.dump(2) << "\n";
  return out.str();
}

nlohmann::json best_json(const BestChoice& b, const std::string& sweep_name) {
  nlohmann::json doc = {{"sweep", sweep_name},
                        {"objective", objective_name(b.objective)},
                        {"configs", b.configs},
                        {"eligible", b.eligible},
                        {"best", nullptr}};
  if (b.config_index) {
    const auto r = ratio_to_baseline(b);
    doc["best"] = {{"config", *b.config_index + 1},
                   {"settings", b.config},
                   {"unit", b.unit},
                   {"metrics", b.metrics},
                   {"baseline_metrics", b.baseline},
                   {"throughput_ratio", json_or_null(r)},
                   {"snippet", {{"base", b.base}}}};
  }
  return doc;
}

}  // namespace gpusweep::host
