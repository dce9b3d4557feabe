// run's views; see run_view.hpp.
#include "report/run_view.hpp"

#include "support/format.hpp"

#include <sstream>

namespace gpusweep::host {

std::string plan_text(const SweepSpec& spec, const PluginManifest& manifest,
                      const std::vector<PlannedTrial>& plan, const std::optional<Shard>& shard) {
  std::ostringstream out;
  const auto keys = varying_keys(spec);
  const auto configs = expand_configs(spec, manifest);
  out << "sweep '" << spec.name << "': workload " << manifest.name << " " << manifest.version
      << ", " << configs.size() << " configs x " << spec.measure.repeats
      << " repeats = " << plan.size() << " trials\n"
      << "protocol: " << spec.measure.warmup_steps << " warmup steps, ";
  if (const auto& target = spec.measure.target) {
    out << "blocks of " << spec.measure.steps_per_block << " steps until "
        << (target->metric.empty() ? manifest.quality_metric : target->metric) << " reaches "
        << number_text(target->value) << " (censored after "
        << (target->max_s > 0 ? human_seconds(target->max_s) + " of training"
                              : std::to_string(target->max_steps) + " steps");
    if (target->cap > 0) {
      out << ", or capped at " << number_text(target->cap)
          << "x the best time to target of its round";
    }
    out << ")";
  } else {
    out << spec.measure.blocks << " " << spec.measure.block_text();
  }
  out << ", timeout " << spec.measure.timeout_s << " s per trial\n";
  Table t({"#", "config", "baseline"});
  t.right_align(0);
  for (size_t i = 0; i < configs.size(); ++i) {
    t.add_row({std::to_string(i + 1), keys.empty() ? "(base)" : config_label(configs[i], keys),
               !spec.baseline.empty() && matches(configs[i], spec.baseline) ? "yes" : ""});
  }
  out << t.render();
  if (shard) {
    out << "shard " << shard->label() << ": " << shard_slice(plan, *shard).size() << " of the "
        << plan.size() << " trials\n";
  }
  return out.str();
}

std::string outcome_detail(const db::TrialOutcome& o) {
  if (o.summary) {
    std::string d = human_rate(o.summary->throughput_median, o.summary->unit) + ", cv " +
                    fixed(100 * o.summary->throughput_cv, 1) + "%";
    if (o.summary->quality) {
      d += ", " + o.summary->quality_metric.value_or("quality") + " " +
           human_count(*o.summary->quality);
    }
    return d;
  }
  return o.error ? truncate(*o.error, 120) : "";
}

}  // namespace gpusweep::host
