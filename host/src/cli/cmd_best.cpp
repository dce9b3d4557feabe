// `gpusweep best`: the best config of a sweep under constraints, printed as a
// sweep-file `base` snippet ready to reuse.
#include "cli/cli.hpp"
#include "analysis/compare.hpp"
#include "analysis/constraints.hpp"
#include "support/error.hpp"
#include "support/format.hpp"
#include "report/results.hpp"
#include "support/stats.hpp"

#include <filesystem>
#include <iostream>

namespace gpusweep::host {

namespace {

// Every config's metrics: medians over its ok repeats, in one pass.
std::map<int64_t, std::map<std::string, double>> metrics_by_config(db::Store& store,
                                                                  int64_t sweep_id) {
  std::map<int64_t, std::map<std::string, std::vector<double>>> values;
  for (const auto& t : store.trials(sweep_id)) {
    if (t.status != "ok" || !t.summary) continue;
    auto& v = values[t.plan.config_index];
    const auto& s = *t.summary;
    v["throughput"].push_back(s.throughput_median);
    v["step_time"].push_back(s.step_time_median_s);
    v["cv"].push_back(s.throughput_cv);
    if (s.peak_memory_bytes) v["peak_memory"].push_back(*s.peak_memory_bytes);
    if (s.quality) v["quality"].push_back(*s.quality);
    if (s.input_wait_fraction) v["input_wait"].push_back(*s.input_wait_fraction);
  }
  std::map<int64_t, std::map<std::string, double>> out;
  for (const auto& [config, metrics] : values) {
    for (const auto& [k, v] : metrics) out[config][k] = quantile(v, 0.5);
  }
  return out;
}

}  // namespace

int cmd_best(const Args& args) {
  po::options_description o;
  o.add_options()("sweep", po::value<std::string>(), "sweep name (default: the latest run)");
  add_db_option(o);
  o.add_options()("objective", po::value<std::string>()->default_value("throughput"),
                  "throughput (highest), memory (lowest peak) or time (lowest step time)")(
      "constraint", po::value<std::vector<std::string>>()->composing(),
      "NAME OP VALUE, e.g. peak_memory<8GiB, quality>=0.99*baseline, step_time<=2ms, "
      "batch_size<=256, precision==bf16 (repeatable)");
  po::positional_options_description pos;
  pos.add("sweep", 1);
  auto p = parse_command(
      "best", "[--sweep NAME] [--objective throughput|memory|time] [--constraint EXPR ...]",
      "Picks the best config of a sweep under constraints and prints its settings as a\n"
      "sweep-file \"base\" snippet. Metrics: throughput, peak_memory, step_time, quality,\n"
      "cv, input_wait (medians over a config's ok repeats); any setting by name. Values\n"
      "take units (KiB MiB GiB, ns us ms s, %) or a factor of the baseline's value.",
      o, pos, args);
  if (p.help) return 0;
  const auto& vm = p.vm;
  const std::string objective = vm["objective"].as<std::string>();
  if (objective != "throughput" && objective != "memory" && objective != "time") {
    throw UsageError("--objective " + objective + ": use throughput, memory or time");
  }
  std::vector<Constraint> constraints;
  if (vm.count("constraint") != 0U) {
    for (const auto& c : vm["constraint"].as<std::vector<std::string>>()) {
      constraints.push_back(parse_constraint(c));
    }
  }
  const std::string db_path = vm["db"].as<std::string>();
  if (!std::filesystem::exists(db_path)) {
    throw UsageError("no database at '" + db_path + "'; pass --db or run a sweep first");
  }
  db::Store store(db_path, db::Connection::Mode::read_only);
  auto sweep = vm.count("sweep") != 0U ? store.latest_sweep(vm["sweep"].as<std::string>())
                                       : store.latest_sweep();
  if (!sweep) throw UsageError("no such sweep in " + db_path + " (list them: gpusweep results --list)");
  const SweepSpec spec = stored_spec(*sweep);
  const auto configs = gather_configs(store, sweep->id, /*with_blocks=*/false);
  const auto all_metrics = metrics_by_config(store, sweep->id);
  auto metrics_of = [&](int64_t config_index) {
    auto it = all_metrics.find(config_index);
    return it == all_metrics.end() ? std::map<std::string, double>() : it->second;
  };
  std::map<std::string, double> baseline;
  for (const auto& c : configs) {
    const bool is_base = spec.baseline.empty() ? c.config_index == 0 : matches(c.config, spec.baseline);
    if (is_base) baseline = metrics_of(c.config_index);
  }
  const std::string metric_key = objective == "throughput" ? "throughput"
                           : objective == "memory"   ? "peak_memory"
                                                     : "step_time";
  const bool maximise = objective == "throughput";
  const ConfigSamples* best = nullptr;
  std::map<std::string, double> best_metrics;
  int eligible = 0;
  for (const auto& c : configs) {
    if (c.ok == 0) continue;
    const auto m = metrics_of(c.config_index);
    bool ok = m.count(metric_key) > 0;
    for (const auto& k : constraints) ok = ok && satisfies(k, m, c.config, baseline);
    if (!ok) continue;
    ++eligible;
    const double v = m.at(metric_key);
    if (best == nullptr || (maximise ? v > best_metrics.at(metric_key) : v < best_metrics.at(metric_key))) {
      best = &c;
      best_metrics = m;
    }
  }
  if (best == nullptr) {
    std::cout << "no config of sweep '" << sweep->name << "' meets the constraints ("
              << configs.size() << " configs)\n";
    return 1;
  }
  std::cout << "best of " << eligible << " eligible configs (of " << configs.size()
            << ") by " << objective << ": config #" << best->config_index + 1 << "\n";
  std::cout << "  throughput " << human_rate(best_metrics["throughput"], best->unit)
            << ", step time " << human_seconds(best_metrics["step_time"]);
  if (best_metrics.count("peak_memory")) std::cout << ", peak memory " << human_bytes(best_metrics["peak_memory"]);
  if (best_metrics.count("quality")) std::cout << ", quality " << human_count(best_metrics["quality"]);
  if (baseline.count("throughput") && baseline["throughput"] > 0) {
    std::cout << ", " << fixed(best_metrics["throughput"] / baseline["throughput"], 2) << "x the baseline";
  }
  std::cout << "\n\nsweep-file snippet:\n";
  Json base = spec.base;
  for (const auto& [key, values] : spec.grid.items()) base[key] = best->config.at(key);
  std::cout << Json{{"base", base}}.dump(2) << "\n";
  return 0;
}

}  // namespace gpusweep::host
