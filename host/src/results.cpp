// The results table; see results.hpp.
#include "results.hpp"

#include "format.hpp"
#include "stats.hpp"

#include <map>

namespace gpusweep::host {

SweepSpec stored_spec(const db::SweepRecord& sweep) {
  SweepSpec spec = parse_sweep(sweep.spec_json, "sweep '" + sweep.name + "' in the database");
  return spec;
}

std::string config_label(const Json& config, const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) {
    if (!out.empty()) out += " ";
    const Json& v = config.contains(k) ? config.at(k) : Json();
    out += k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

std::optional<double> baseline_throughput(const SweepSpec& spec,
                                          const std::vector<db::TrialRecord>& trials) {
  std::vector<double> values;
  for (const auto& t : trials) {
    if (t.status != "ok" || !t.summary) continue;
    const Json config = Json::parse(t.plan.config_json);
    const bool is_baseline =
        spec.baseline.empty() ? t.plan.config_index == 0 : matches(config, spec.baseline);
    if (is_baseline) values.push_back(t.summary->throughput_median);
  }
  if (values.empty()) return std::nullopt;
  return quantile(values, 0.5);
}

std::string results_table(const db::SweepRecord& sweep, const std::vector<db::TrialRecord>& trials) {
  const SweepSpec spec = stored_spec(sweep);
  const auto keys = varying_keys(spec);
  const auto base = baseline_throughput(spec, trials);
  const bool repeats = spec.measure.repeats > 1;

  std::vector<std::string> headers = {"#"};
  for (const auto& k : keys) headers.push_back(k);
  if (repeats) headers.push_back("rep");
  for (const char* h : {"status", "throughput", "cv", "step time", "peak mem", "quality",
                        "vs base", "note"}) {
    headers.push_back(h);
  }
  Table table(headers);
  table.right_align(0);
  const size_t first_metric = 1 + keys.size() + (repeats ? 1 : 0) + 1;
  for (size_t c = first_metric; c < first_metric + 6; ++c) table.right_align(c);

  std::string unit;
  // Rows in config order, repeats together, so that a grid reads naturally.
  std::vector<const db::TrialRecord*> sorted;
  for (const auto& t : trials) sorted.push_back(&t);
  std::stable_sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) {
    return std::make_pair(a->plan.config_index, a->plan.repeat) <
           std::make_pair(b->plan.config_index, b->plan.repeat);
  });
  for (const auto* t : sorted) {
    const Json config = Json::parse(t->plan.config_json);
    std::vector<std::string> row = {std::to_string(t->plan.config_index + 1)};
    for (const auto& k : keys) {
      const Json& v = config.contains(k) ? config.at(k) : Json();
      row.push_back(v.is_string() ? v.get<std::string>() : v.dump());
    }
    if (repeats) row.push_back(std::to_string(t->plan.repeat + 1));
    row.push_back(t->status);
    if (t->summary) {
      const auto& s = *t->summary;
      unit = s.unit;
      row.push_back(human_rate(s.throughput_median, s.unit));
      row.push_back(fixed(100 * s.throughput_cv, 1) + "%");
      row.push_back(human_seconds(s.step_time_median_s));
      row.push_back(s.peak_memory_bytes ? human_bytes(*s.peak_memory_bytes) : "-");
      std::string q = "-";
      if (s.quality) {
        q = human_count(*s.quality);
        if (s.quality_reference) q += " (ref " + human_count(*s.quality_reference) + ")";
      }
      row.push_back(q);
      row.push_back(base && *base > 0 ? fixed(s.throughput_median / *base, 2) + "x" : "-");
      std::string note;
      if (s.throughput_cv > 0.10) note = "noisy: cv > 10%";
      row.push_back(note);
    } else {
      for (int i = 0; i < 6; ++i) row.push_back("-");
      row.push_back(t->error ? truncate(*t->error, 70) : "");
    }
    table.add_row(std::move(row));
  }
  std::string out = "sweep '" + sweep.name + "' (run " + std::to_string(sweep.id) + ", " +
                    sweep.workload + ", " + sweep.status + ", " + sweep.created_at + ")\n";
  out += table.render();
  if (spec.baseline.empty()) {
    out += "baseline: config #1 (the sweep names no baseline)\n";
  } else {
    out += "baseline: " + config_label(spec.baseline, [&] {
      std::vector<std::string> k;
      for (const auto& [key, v] : spec.baseline.items()) k.push_back(key);
      return k;
    }()) + (base ? "" : " (no ok trial: ratios unavailable)") + "\n";
  }
  (void)unit;
  return out;
}

}  // namespace gpusweep::host
