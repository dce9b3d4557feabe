// compare's tables; see compare_view.hpp.
#include "report/compare_view.hpp"

#include "report/output.hpp"
#include "spec/stats.hpp"
#include "spec/sweep.hpp"
#include "support/descriptive.hpp"
#include "support/format.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace gpusweep::host {

// compare_view.hpp
std::string flops_text(const Json& r) {
  if (!r.contains("achieved_flops") || r["achieved_flops"].is_null()) return "-";
  std::string text = human_rate(r["achieved_flops"].get<double>(), "FLOP");
  if (r.contains("mfu") && !r["mfu"].is_null())
    text += " (" + fixed(100 * r["mfu"].get<double>(), 0) + "% MFU)";
  return text;
}

namespace {

std::string signed_percent(double v) { return (v >= 0 ? "+" : "") + fixed(100 * v, 1) + "%"; }

// A row's first fields: the config's number, its varying settings, and
// whether it is the baseline.
Json config_record(const ConfigSamples& c, const std::vector<std::string>& keys, bool baseline) {
  Json rec;
  rec["config"] = c.config_index + 1;
  for (const auto& k : keys) rec[k] = c.config.contains(k) ? c.config.at(k) : Json();
  rec["baseline"] = baseline;
  return rec;
}

}  // namespace

std::vector<Json> comparison_records(const std::vector<ComparisonRow>& rows,
                                     const std::vector<std::string>& keys, size_t begin,
                                     size_t end) {
  std::vector<Json> records;
  end = std::min(end, rows.size());
  for (size_t i = begin; i < end; ++i) {
    const ComparisonRow& r = rows[i];
    const auto& c = *r.config;
    Json rec = config_record(c, keys, r.baseline);
    rec["trials_ok"] = c.ok;
    rec["blocks"] = c.throughput.size();
    rec["unit"] = c.unit;
    const auto throughput = config_throughput(c);
    rec["throughput_median"] = json_or_null(throughput);
    rec["ratio"] = r.ratio ? Json(r.ratio->ratio) : Json();
    rec["ci_low"] = r.ratio ? Json(r.ratio->low) : Json();
    rec["ci_high"] = r.ratio ? Json(r.ratio->high) : Json();
    rec["p_value"] = r.ratio ? Json(r.ratio->p) : Json();
    // How the interval was made, and what it cannot know.
    rec["design"] = r.ratio ? Json(design_name(r.ratio->design)) : Json();
    rec["repeats_paired"] = r.ratio ? Json(r.ratio->repeats) : Json();
    rec["blocks_paired"] = r.ratio ? Json(r.ratio->paired_blocks) : Json();
    rec["design_note"] = r.ratio ? design_note(*r.ratio) : std::string();
    rec["verdict"] = r.baseline && c.ok == 0 ? "baseline failed: " + c.problem
                     : r.baseline            ? "baseline"
                     : r.verdict             ? to_string(*r.verdict)
                     : !r.withheld.empty()   ? r.withheld
                     : c.ok == 0             ? c.problem
                                             : "too few samples";
    rec["quality_change"] = r.quality ? Json(r.quality->change) : Json();
    rec["quality_low"] = r.quality && std::isfinite(r.quality->low) ? Json(r.quality->low) : Json();
    rec["quality_high"] =
        r.quality && std::isfinite(r.quality->high) ? Json(r.quality->high) : Json();
    rec["quality_verdict"] = r.quality ? Json(to_string(r.quality->verdict)) : Json();
    rec["quality_note"] = r.quality ? r.quality->note : std::string();
    rec["non_inferior"] =
        r.quality ? Json(r.quality->verdict == QualityVerdict::non_inferior) : Json();
    rec["peak_memory_bytes"] = json_or_null(c.peak_memory_bytes);
    // The step in the workload's own terms, where it said: tokens/s beside
    // samples/s, the FLOP/s it achieved and their share of the measured
    // matmul peak, and torch.compile's seconds (spent in the warmup).
    const StepFigures step = step_figures(c, throughput);
    rec["secondary_unit"] = c.secondary_unit;
    rec["secondary_throughput"] = json_or_null(step.secondary_throughput);
    rec["achieved_flops"] = json_or_null(step.achieved_flops);
    rec["mfu"] = json_or_null(step.mfu);
    rec["compile_s"] = c.compile_s.empty() ? Json() : Json(quantile(c.compile_s, 0.5));
    // Noise is reported, not hidden: a config whose blocks vary by more than 10%.
    const double cv = cv_of(c.throughput);
    rec["cv"] = cv;
    rec["noisy"] = cv > kNoisyCv;
    rec[host_stat::overlap_fraction] = c.overlap_fraction;
    rec["notes"] = comparison_notes(r, cv);
    records.push_back(rec);
  }
  return records;
}

namespace {

// Which of compare's optional columns a table shows: those some row has.
struct Extras {
  bool secondary = false;
  bool flops = false;
  bool compile = false;
};

// What the rows' step figures are made of, without the medians: a config
// that has them has a throughput (they come from its ok trials' blocks).
Extras extras_of(const std::vector<ComparisonRow>& rows) {
  Extras e;
  for (const auto& r : rows) {
    const ConfigSamples& c = *r.config;
    e.compile = e.compile || !c.compile_s.empty();
    if (c.throughput.empty()) continue;
    e.secondary = e.secondary || !c.secondary_per_sample.empty();
    e.flops = e.flops || (!c.flops_per_step.empty() && c.samples_per_step.value_or(0) > 0);
  }
  return e;
}

Extras extras_of(const std::vector<Json>& records) {
  Extras e;
  for (const auto& r : records) {
    e.secondary = e.secondary || !r.value("secondary_throughput", Json()).is_null();
    e.flops = e.flops || !r.value("achieved_flops", Json()).is_null();
    e.compile = e.compile || !r.value("compile_s", Json()).is_null();
  }
  return e;
}

// The second throughput's and achieved FLOP/s's columns, where extras has
// them; named by their keys in the machine formats.
void step_columns(std::vector<Column>& cols, Extras extras, bool machine) {
  if (extras.secondary) {
    cols.push_back({"secondary_throughput", machine ? "secondary_throughput" : "also", true,
                    [](const Json& r) {
                      return r["secondary_throughput"].is_null()
                                 ? std::string("-")
                                 : human_rate(r["secondary_throughput"].get<double>(),
                                              r["secondary_unit"].get<std::string>());
                    }});
  }
  if (extras.flops) {
    cols.push_back({"achieved_flops", machine ? "achieved_flops" : "FLOP/s", true, flops_text});
  }
}

Column compile_column(bool machine) {
  return {"compile_s", machine ? "compile_s" : "compile", true, [](const Json& r) {
            return r["compile_s"].is_null() ? std::string("-")
                                            : fixed(r["compile_s"].get<double>(), 1) + " s";
          }};
}

// Compare's columns, one entry each. shared: notes that hold
// for every compared row, said once under the table instead of on each.
// The machine formats carry every column; a table, the step figures some
// row has (extras).
std::vector<Column> comparison_columns(const std::vector<std::string>& keys, OutputFormat format,
                                       const std::set<std::string>& shared = {},
                                       Extras extras = {}) {
  std::vector<Column> cols = {{"config", "config", true, {}}};
  for (const auto& k : keys) cols.push_back({k, k, false, {}});
  cols.push_back({"throughput_median", "throughput", true, [](const Json& r) {
                    return r["throughput_median"].is_null()
                               ? std::string("-")
                               : human_rate(r["throughput_median"].get<double>(),
                                            r["unit"].get<std::string>());
                  }});
  // A table shows the step figures some row has, beside the throughput; the
  // machine formats carry them all, after the columns they had before them
  // (a consumer reading columns by position keeps reading the same ones).
  const bool machine = format == OutputFormat::csv || format == OutputFormat::json;
  if (!machine) step_columns(cols, extras, false);
  cols.push_back({"ratio", "ratio", true, [](const Json& r) {
                    const bool yardstick =
                        r["baseline"].get<bool>() && r["trials_ok"].get<int64_t>() > 0;
                    return r["ratio"].is_null() ? std::string(yardstick ? "1.00x" : "-")
                                                : fixed(r["ratio"].get<double>(), 3) + "x";
                  }});
  cols.push_back(interval_column("ci_low", "ci_high"));
  if (machine) cols.push_back({"ci_high", "ci_high", true, {}});
  cols.push_back({"p_value", "p", true, [](const Json& r) {
                    if (r["p_value"].is_null()) return std::string("-");
                    const double pv = r["p_value"].get<double>();
                    return pv < 0.001 ? std::string("<0.001") : fixed(pv, 3);
                  }});
  cols.push_back(verdict_column("verdict", format, "faster", "slower"));
  cols.push_back({"quality_change", "quality", true, [](const Json& r) {
                    if (r["quality_change"].is_null()) return std::string("-");
                    std::string text = signed_percent(r["quality_change"].get<double>());
                    if (!r["quality_low"].is_null()) {
                      text += " [" + signed_percent(r["quality_low"].get<double>()) + ", " +
                              signed_percent(r["quality_high"].get<double>()) + "]";
                    }
                    const std::string verdict = r["quality_verdict"].get<std::string>();
                    if (verdict == "inferior") text += " (worse)";
                    if (verdict == "inconclusive") text += " (unsure)";
                    return text;
                  }});
  cols.push_back({"peak_memory_bytes", "peak mem", true, [](const Json& r) {
                    return r["peak_memory_bytes"].is_null()
                               ? std::string("-")
                               : human_bytes(r["peak_memory_bytes"].get<double>());
                  }});
  if (!machine && extras.compile) cols.push_back(compile_column(false));
  cols.push_back({"notes", "note", false, [shared](const Json& r) {
                    std::string note;
                    for (const auto& n : r.value("notes", Json::array())) {
                      if (shared.count(n.get<std::string>()) != 0U) continue;
                      note += (note.empty() ? "" : "; ") + n.get<std::string>();
                    }
                    return note.empty() ? note : colour(note, "33");
                  }});
  if (machine) {
    cols.push_back({"blocks", "blocks", true, {}});
    cols.push_back({"trials_ok", "trials ok", true, {}});
    cols.push_back({"baseline", "baseline", false, {}});
    cols.push_back({"quality_low", "quality low", true, {}});
    cols.push_back({"quality_high", "quality high", true, {}});
    cols.push_back({"quality_verdict", "quality verdict", false, {}});
    cols.push_back({"non_inferior", "non-inferior", false, {}});
    cols.push_back({"unit", "unit", false, {}});
    cols.push_back({"cv", "cv", true, {}});
    cols.push_back({"noisy", "noisy", false, {}});
    cols.push_back({host_stat::overlap_fraction, "overlap", true, {}});
    cols.push_back({"design", "design", false, {}});
    cols.push_back({"repeats_paired", "repeats paired", true, {}});
    cols.push_back({"blocks_paired", "blocks paired", true, {}});
    step_columns(cols, Extras{true, true, false}, true);
    cols.push_back({"mfu", "mfu", true, {}});
    cols.push_back(compile_column(true));
  }
  return cols;
}

}  // namespace

std::string render_comparison(const std::vector<Json>& records,
                              const std::vector<std::string>& keys, OutputFormat format) {
  return render(records, comparison_columns(keys, format, {}, extras_of(records)), format);
}

namespace {

std::set<std::string> shared_notes(const std::vector<ComparisonRow>& rows) {
  std::set<std::string> shared;
  bool first = true;
  for (const auto& r : rows) {
    if (r.baseline) continue;
    const auto notes = comparison_notes(r);
    const std::set<std::string> mine(notes.begin(), notes.end());
    if (first) {
      shared = mine;
      first = false;
      continue;
    }
    std::set<std::string> both;
    for (const auto& n : shared) {
      if (mine.count(n) != 0U) both.insert(n);
    }
    shared.swap(both);
  }
  return shared;
}

}  // namespace

TextTable comparison_cells(const std::vector<ComparisonRow>& rows,
                           const std::vector<std::string>& keys) {
  const std::set<std::string> shared =
      rows.size() > 2 ? shared_notes(rows) : std::set<std::string>();
  TextTable t = table_cells(comparison_records(rows, keys),
                            comparison_columns(keys, OutputFormat::table, shared, extras_of(rows)));
  for (const auto& n : shared) t.footer.push_back("note (every config): " + n);
  return t;
}

std::string render_comparison(const std::vector<ComparisonRow>& rows,
                              const std::vector<std::string>& keys, OutputFormat format) {
  const bool text = format == OutputFormat::table || format == OutputFormat::md;
  // Said once under the table when two or more rows share it.
  const std::set<std::string> shared =
      text && rows.size() > 2 ? shared_notes(rows) : std::set<std::string>();
  std::string out = render_chunks(
      rows.size(),
      [&](size_t begin, size_t end) { return comparison_records(rows, keys, begin, end); },
      comparison_columns(keys, format, shared, extras_of(rows)), format);
  for (const auto& n : shared) out += "note (every config): " + n + "\n";
  return out;
}

namespace {

// A time or bound in seconds for the table; "inf" where unbounded.
std::string seconds_text(double s) { return std::isinf(s) ? "inf" : human_seconds(s); }

Json finite_or_null(double v) { return std::isfinite(v) ? Json(v) : Json(); }

std::vector<Json> target_records(const std::vector<TargetRow>& rows,
                                 const std::vector<std::string>& keys) {
  std::vector<Json> records;
  for (const auto& t : rows) {
    Json rec = config_record(*t.config, keys, t.baseline);
    rec["trials"] = t.times.n;
    rec["reached"] = t.times.reached;
    rec["median_s"] = t.times.median ? Json(*t.times.median) : Json();
    rec["beyond_budget"] = !t.times.median && t.times.n > 0;
    rec["budget_s"] = t.times.budget > 0 ? Json(t.times.budget) : Json();
    // The median's lower end (censored trials at their bounds): "> it" when
    // beyond; null when over half diverged (never).
    rec["median_lower_end_s"] = t.times.n > 0 ? finite_or_null(t.times.median_low) : Json();
    rec["diverged"] = t.times.diverged;
    rec["median_text"] = median_text(t.times);
    rec["median_low_s"] = t.times.interval ? finite_or_null(t.times.low) : Json();
    rec["median_high_s"] = t.times.interval ? finite_or_null(t.times.high) : Json();
    rec["olympic_mean_s"] = t.times.olympic_mean ? Json(*t.times.olympic_mean) : Json();
    rec["time_ratio"] = t.ratio ? Json(t.ratio->ratio) : Json();
    rec["time_ratio_low"] = t.ratio && t.ratio->interval ? finite_or_null(t.ratio->low) : Json();
    rec["time_ratio_high"] = t.ratio && t.ratio->interval ? finite_or_null(t.ratio->high) : Json();
    rec["seeds_paired"] = t.ratio ? Json(t.ratio->pairs) : Json();
    rec["verdict"] = t.verdict;
    rec["inversion"] = t.inversion;
    rec["note"] = t.ratio ? t.ratio->note : std::string();
    records.push_back(rec);
  }
  return records;
}

}  // namespace

std::string render_targets(const std::vector<TargetRow>& rows, const std::vector<std::string>& keys,
                           OutputFormat format) {
  const std::vector<Json> records = target_records(rows, keys);
  std::vector<Column> cols = {{"config", "config", true, {}}};
  for (const auto& k : keys) cols.push_back({k, k, false, {}});
  if (format == OutputFormat::csv || format == OutputFormat::json) {
    for (const char* k : {"trials", "reached", "diverged", "median_s", "median_lower_end_s",
                          "beyond_budget", "budget_s", "median_low_s", "median_high_s",
                          "olympic_mean_s", "time_ratio", "time_ratio_low", "time_ratio_high",
                          "seeds_paired", "verdict", "inversion", "note", "baseline"}) {
      cols.push_back({k, k, false, {}});
    }
    return render(records, cols, format);
  }
  cols.push_back({"reached", "reached", true, [](const Json& r) {
                    return std::to_string(r["reached"].get<int>()) + "/" +
                           std::to_string(r["trials"].get<int>());
                  }});
  cols.push_back({"median_s", "time to target", true,
                  [](const Json& r) { return r["median_text"].get<std::string>(); }});
  cols.push_back(
      {"median_low_s", "95% CI", true, [](const Json& r) {
         if (r["trials"].get<int>() == 0) return std::string("-");
         const Json& lo = r["median_low_s"];
         const Json& hi = r["median_high_s"];
         if (lo.is_null() && hi.is_null()) return std::string("-");
         return "[" + (lo.is_null() ? std::string("0") : human_seconds(lo.get<double>())) + ", " +
                (hi.is_null() ? seconds_text(INFINITY) : human_seconds(hi.get<double>())) + "]";
       }});
  cols.push_back({"olympic_mean_s", "olympic mean", true, [](const Json& r) {
                    const Json& v = r["olympic_mean_s"];
                    return v.is_null() ? std::string("-") : human_seconds(v.get<double>());
                  }});
  cols.push_back({"time_ratio", "time ratio", true, [](const Json& r) {
                    if (r["baseline"].get<bool>()) return std::string("1.00x");
                    if (r["time_ratio"].is_null()) return std::string("-");
                    const double ratio = r["time_ratio"].get<double>();
                    // Over half the seeds' ratios infinite: it diverged where
                    // the baseline reached the target.
                    if (std::isinf(ratio)) return std::string(ratio > 0 ? "never reached" : "0x");
                    return fixed(ratio, 3) + "x";
                  }});
  cols.push_back({"time_ratio_low", "95% CI", true, [](const Json& r) {
                    if (r["time_ratio"].is_null() || r["seeds_paired"].is_null())
                      return std::string("-");
                    const Json& lo = r["time_ratio_low"];
                    const Json& hi = r["time_ratio_high"];
                    if (lo.is_null() && hi.is_null() && r["verdict"] == "no interval")
                      return std::string("-");
                    return "[" + (lo.is_null() ? std::string("0") : fixed(lo.get<double>(), 3)) +
                           ", " + (hi.is_null() ? std::string("inf") : fixed(hi.get<double>(), 3)) +
                           "]";
                  }});
  cols.push_back(verdict_column("verdict", format, "faster to target", "slower to target"));
  cols.push_back({"note", "note", false, [](const Json& r) {
                    std::string note = r["note"].get<std::string>();
                    if (r["inversion"].get<bool>()) {
                      note = "INVERSION: the throughput verdict says the opposite" +
                             std::string(note.empty() ? "" : "; ") + note;
                    }
                    return note.empty() ? note : colour(note, "33");
                  }});
  return "\ntime to target (measure.target; the median over seeds, Kaplan-Meier with the "
         "censored as lower bounds; olympic mean: MLPerf's, the fastest and slowest dropped, "
         "shown when at most one seed never reached it; time ratio: the median of the per-seed "
         "ratios to the baseline, sign-test interval, censored seeds as bounds):\n" +
         render(records, cols, format);
}

std::string comparison_legend(double max_quality_loss) {
  return "ratio: throughput over the baseline's, blocks paired by cycle within each repeat, "
         "repeats averaged; 95% CI and p: t over repeats; quality: relative change (+ better) "
         "with its one-sided 95% bounds, (worse) below -" +
         fixed(100 * max_quality_loss, 1) +
         "% (--max-quality-loss), (unsure) when the interval reaches past it; compare --help "
         "says more\n";
}

std::string render_ablation(const std::vector<AblationRow>& knobs, OutputFormat format) {
  if (format != OutputFormat::table) {
    std::vector<Json> records;
    for (const auto& k : knobs) {
      Json rec;
      rec["knob"] = k.knob;
      rec["from"] = k.from;
      rec["to"] = k.to;
      rec["pairs"] = k.pairs;
      rec["repeats"] = k.repeats;
      rec["df"] = k.df;
      auto number = [](double v) { return std::isfinite(v) ? Json(v) : Json(); };
      rec["ratio"] = k.pairs > 0 ? Json(k.ratio) : Json();
      rec["ci_low"] = number(k.low);
      rec["ci_high"] = number(k.high);
      rec["pairs_min"] = number(k.pair_min);
      rec["pairs_max"] = number(k.pair_max);
      rec["note"] = k.note;
      records.push_back(rec);
    }
    std::vector<Column> cols;
    for (const char* key : {"knob", "from", "to", "pairs", "repeats", "df", "ratio", "ci_low",
                            "ci_high", "pairs_min", "pairs_max", "note"}) {
      cols.push_back({key, key, false, {}});
    }
    return render(records, cols, format);
  }
  if (knobs.empty()) return "";
  Table t({"knob", "from", "to", "pairs", "repeats", "ratio", "95% CI", "pairs range", "note"});
  for (size_t c = 3; c <= 7; ++c) t.right_align(c);
  for (const auto& k : knobs) {
    const bool range = k.pairs > 1 && std::isfinite(k.pair_min);
    t.add_row({k.knob, value_text(k.from), value_text(k.to), std::to_string(k.pairs),
               k.repeats > 0 ? std::to_string(k.repeats) : "-",
               k.pairs > 0 ? fixed(k.ratio, 3) + "x" : "-", interval_text(k.low, k.high),
               range ? fixed(k.pair_min, 3) + "-" + fixed(k.pair_max, 3) + "x" : "-",
               k.note.empty() ? k.note : colour(k.note, "33")});
  }
  return "\nwhich knob matters (each value against the knob's first, the others held at each "
         "of their values; ratio: the geometric mean over those pairs, 95% CI over the repeats "
         "they all ran; pairs range: apart when the effect depends on the other knobs):\n" +
         t.render();
}

std::string render_claims(const std::vector<ClaimResult>& results, OutputFormat format) {
  std::vector<Json> records;
  for (const auto& r : results) {
    const Claim& c = *r.claim;
    Json rec;
    rec["claim"] = c.text;
    rec["change"] = config_label(c.change);
    rec["metric"] = c.metric;
    rec["expected"] = expected_text(c);
    rec["expected_low"] = c.low;
    rec["expected_high"] = c.high;
    rec["ratio"] = json_or_null(r.ratio);
    rec["ci_low"] = std::isnan(r.low) ? Json() : Json(r.low);
    rec["ci_high"] = std::isnan(r.high) ? Json() : Json(r.high);
    rec["verdict"] = verdict_name(r.verdict);
    // The verdict's reason, then what its interval cannot know.
    rec["reason"] = r.reason + (r.reason.empty() || r.design.empty() ? "" : "; ") + r.design;
    rec["source"] = c.source;
    records.push_back(rec);
  }
  const bool machine = format == OutputFormat::csv || format == OutputFormat::json;
  std::vector<Column> cols = {{"claim", "claim", false, {}},
                              {"change", "change", false, {}},
                              {"metric", "metric", false, {}},
                              {"expected", "expected", true, {}}};
  if (machine) {
    cols.push_back({"expected_low", "expected_low", true, {}});
    cols.push_back({"expected_high", "expected_high", true, {}});
  }
  cols.push_back(ratio_column("ratio", "measured"));
  cols.push_back(interval_column("ci_low", "ci_high"));
  if (machine) cols.push_back({"ci_high", "ci_high", true, {}});
  cols.push_back(verdict_column("verdict", format, "confirmed", "refuted"));
  cols.push_back({"reason", "why", false, {}});
  cols.push_back({"source", "source", false, {}});
  return render(records, cols, format);
}

}  // namespace gpusweep::host

namespace gpusweep::host {

std::string render_scaling(const std::vector<ScalingRow>& rows,
                           const std::vector<std::string>& keys, OutputFormat format) {
  auto number = [](double v) { return std::isfinite(v) ? Json(v) : Json(); };
  if (format != OutputFormat::table) {
    std::vector<Json> records;
    for (const auto& r : rows) {
      Json rec = config_record(*r.config, keys, false);
      rec.erase("baseline");
      rec["world_size"] = r.world_size;
      rec["kind"] = r.kind;
      rec["single_config"] = r.single != nullptr ? Json(r.single->config_index + 1) : Json();
      rec["speedup"] = r.speedup ? Json(r.speedup->ratio) : Json();
      rec["speedup_low"] = r.speedup ? Json(r.speedup->low) : Json();
      rec["speedup_high"] = r.speedup ? Json(r.speedup->high) : Json();
      rec["efficiency"] = number(r.efficiency);
      rec["efficiency_low"] = number(r.low);
      rec["efficiency_high"] = number(r.high);
      rec["repeats_paired"] = r.speedup ? Json(r.speedup->repeats) : Json();
      rec["comm_share"] = r.comm_share ? Json(*r.comm_share) : Json();
      rec["allreduce_bytes_per_step"] =
          r.allreduce_bytes_per_step ? Json(*r.allreduce_bytes_per_step) : Json();
      rec["note"] = r.note;
      records.push_back(rec);
    }
    std::vector<Column> cols = {{"config", "config", false, {}}};
    for (const auto& k : keys) cols.push_back({k, k, false, {}});
    for (const char* key : {"world_size", "kind", "single_config", "speedup", "speedup_low",
                            "speedup_high", "efficiency", "efficiency_low", "efficiency_high",
                            "repeats_paired", "comm_share", "allreduce_bytes_per_step", "note"}) {
      cols.push_back({key, key, false, {}});
    }
    return render(records, cols, format);
  }
  if (rows.empty()) return "";
  std::vector<std::string> head = {"config"};
  for (const auto& k : keys) head.push_back(k);
  for (const char* h : {"scaling", "vs config", "speed-up", "95% CI", "efficiency", "95% CI",
                        "comm exposed", "all-reduce/step", "note"}) {
    head.emplace_back(h);
  }
  Table t(head);
  for (size_t c = keys.size() + 2; c + 1 < head.size(); ++c) t.right_align(c);
  for (const auto& r : rows) {
    std::vector<std::string> cells = {std::to_string(r.config->config_index + 1)};
    for (const auto& k : keys) {
      const Json v = r.config->config.contains(k) ? r.config->config.at(k) : Json();
      cells.push_back(value_text(v));
    }
    cells.push_back(r.kind);
    cells.push_back(r.single != nullptr ? std::to_string(r.single->config_index + 1) : "-");
    cells.push_back(r.speedup ? fixed(r.speedup->ratio, 2) + "x" : "-");
    cells.push_back(r.speedup ? interval_text(r.speedup->low, r.speedup->high) : "-");
    cells.push_back(std::isfinite(r.efficiency) ? fixed(100 * r.efficiency, 0) + "%" : "-");
    cells.push_back(std::isfinite(r.low)
                        ? "[" + fixed(100 * r.low, 0) + "%, " + fixed(100 * r.high, 0) + "%]"
                        : "-");
    cells.push_back(r.comm_share ? fixed(100 * *r.comm_share, 1) + "%" : "-");
    cells.push_back(r.allreduce_bytes_per_step ? human_bytes(*r.allreduce_bytes_per_step) : "-");
    cells.push_back(r.note);
    t.add_row(cells);
  }
  return "\ndata-parallel scaling (each config against the same settings at world_size 1, "
         "vs #: weak, the same batch_size a rank as the single process had, so the global batch "
         "grows; strong, the single process with world_size x batch_size, the same global "
         "batch; speed-up: global throughput over the single process's, paired by repeat as "
         "compare's ratios, 95% CI; efficiency: speed-up / world_size, 100% is perfect; comm "
         "exposed: the median share of block time in all-reduce that backward did not hide, "
         "step by step the least any rank waited, the rest of the ranks' waits being "
         "imbalance; the single process ran as many threads as each rank):\n" +
         t.render();
}

}  // namespace gpusweep::host
