// Comparing configs against a baseline (compare.hpp): the throughput and
// quality rows with their verdicts (compare_configs), and on a target run the
// times to target (compare_targets, first_to_target).
#include "analysis/compare_internal.hpp"

#include "analysis/precision.hpp"
#include "support/descriptive.hpp"
#include "support/error.hpp"
#include "support/format.hpp"

#include <map>

namespace gpusweep::host {

namespace detail {

const ConfigSamples* find_baseline(const std::vector<ConfigSamples>& configs,
                                   const CompareOptions& options) {
  const ConfigSamples* base = nullptr;
  int matches_found = 0;
  for (const auto& c : configs) {
    const bool is_base = is_baseline(options.baseline, c.config_index, c.config);
    if (is_base) {
      ++matches_found;
      if (base == nullptr) base = &c;
    }
  }
  if (matches_found == 0) {
    throw UsageError("baseline " + options.baseline.dump() +
                     " matches none of the sweep's configs; use settings that appear in it");
  }
  if (matches_found > 1) {
    throw UsageError("baseline " + options.baseline.dump() + " matches " +
                     std::to_string(matches_found) +
                     " configs; add settings to --baseline to pick one");
  }
  return base;
}

}  // namespace detail

using detail::find_baseline;

CompareOptions options_for(const SweepSpec& spec) {
  CompareOptions options;
  options.baseline = spec.baseline;
  options.sequential = stops_when_precise(spec);
  return options;
}

double interval_level(const CompareOptions& options) {
  return options.sequential ? sequential_level(options.alpha) : 1 - options.alpha;
}

std::optional<double> config_throughput(const ConfigSamples& c) {
  if (c.throughput.empty()) return std::nullopt;
  return quantile(c.throughput, 0.5);
}

StepFigures step_figures(const ConfigSamples& c, std::optional<double> throughput) {
  StepFigures f;
  if (!throughput) return f;
  if (!c.secondary_per_sample.empty()) {
    f.secondary_throughput = *throughput * quantile(c.secondary_per_sample, 0.5);
  }
  if (!c.flops_per_step.empty() && c.samples_per_step && *c.samples_per_step > 0) {
    f.achieved_flops = quantile(c.flops_per_step, 0.5) * *throughput / *c.samples_per_step;
    if (c.peak_flops && *c.peak_flops > 0) f.mfu = *f.achieved_flops / *c.peak_flops;
  }
  return f;
}

std::vector<std::string> comparison_notes(const ComparisonRow& r) {
  return comparison_notes(r, cv_of(r.config->throughput));
}

std::vector<std::string> comparison_notes(const ComparisonRow& r, double cv) {
  std::vector<std::string> notes;
  const ConfigSamples& c = *r.config;
  if (r.baseline && c.ok == 0) {
    notes.push_back("the baseline has no ok trial (" + c.problem +
                    "): no ratios; name another with --baseline");
  }
  if (!r.baseline && !r.withheld.empty()) notes.push_back(r.withheld);
  if (cv > kNoisyCv) notes.push_back("noisy: cv " + fixed(100 * cv, 0) + "%");
  if (r.ratio) {
    if (const std::string design = design_note(*r.ratio); !design.empty()) {
      notes.push_back(design);
    }
    if (r.ratio->design == RatioDesign::repeats && r.ratio->repeats < kFewRepeats) {
      notes.push_back("only " + std::to_string(r.ratio->repeats) +
                      " repeats: a wide interval; set measure.repeats to 3 or more, or "
                      "measure.precision");
    }
  }
  if (r.quality && !r.quality->note.empty()) notes.push_back("quality: " + r.quality->note);
  if (c.overlap_fraction > kOverlapFlag) {
    notes.push_back("ran alongside other trials " + fixed(100 * c.overlap_fraction, 0) +
                    "% of the time (--jobs > 1)");
  }
  return notes;
}

std::vector<ComparisonRow> compare_configs(const std::vector<ConfigSamples>& configs,
                                           const CompareOptions& options) {
  const ConfigSamples* base = find_baseline(configs, options);
  std::vector<ComparisonRow> rows;
  for (const auto& c : configs) {
    ComparisonRow r;
    r.config = &c;
    r.baseline = &c == base;
    if (!r.baseline && base->ok == 0) {
      // A failed baseline is no yardstick: no ratio is shown against it.
      r.withheld = "not compared: the baseline failed";
    } else if (!r.baseline) {
      r.ratio = estimate_ratio(base->runs, c.runs, interval_level(options));
      if (r.ratio && r.ratio->across_machines && !options.across_machines) {
        r.withheld =
            "not compared: its trials and the baseline's ran on different machines "
            "(--across-machines to compare them anyway)";
      } else if (r.ratio) {
        r.verdict = verdict(*r.ratio, options.min_effect);
      }
    }
    // On a target run each trial stops at the target or at its budget (or
    // its cap): a slow config's quality is read lower, where it stopped, not
    // worse (it was called a quality loss). Its quality is not compared there.
    const bool to_target = !base->target_times.empty() || !c.target_times.empty();
    if (!r.baseline && !to_target && base->ok > 0) {
      r.quality = compare_quality(base->quality, c.quality, c.higher_is_better.value_or(true),
                                  options.max_quality_loss, options.alpha);
    }
    rows.push_back(r);
  }
  return rows;
}

std::optional<size_t> first_to_target(const std::vector<TargetRow>& rows) {
  std::optional<size_t> first;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].times.median) continue;
    if (!first || *rows[i].times.median < *rows[*first].times.median) first = i;
  }
  return first;
}

namespace {

// Whether a seed's trials of the two configs ran on different machines
// (both known).
bool seeds_across_machines(const std::vector<TargetTime>& base,
                           const std::vector<TargetTime>& config) {
  for (const auto& a : base) {
    for (const auto& b : config) {
      if (a.repeat == b.repeat && !a.machine.empty() && !b.machine.empty() &&
          a.machine != b.machine) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

std::vector<TargetRow> compare_targets(const std::vector<ComparisonRow>& rows,
                                       const CompareOptions& options) {
  const ConfigSamples* base = nullptr;
  for (const auto& r : rows) {
    if (r.baseline) base = r.config;
  }
  std::vector<TargetRow> out;
  for (const auto& r : rows) {
    TargetRow t;
    t.config = r.config;
    t.baseline = r.baseline;
    t.times = summarise_times(r.config->target_times, 1 - options.alpha);
    if (r.baseline) {
      t.verdict = "baseline";
    } else if (base != nullptr) {
      t.ratio = paired_time_ratio(base->target_times, r.config->target_times, 1 - options.alpha);
    }
    if (t.ratio && !options.across_machines && base != nullptr &&
        seeds_across_machines(base->target_times, r.config->target_times)) {
      // As the throughput table withholds it (merged shards or --jobs on mixed
      // GPUs pair them): a seed's two trials on different hosts or GPUs differ
      // by the machine too.
      t.verdict =
          "not compared: a seed's trials ran on different machines (--across-machines to "
          "compare them anyway)";
    } else if (t.ratio && t.ratio->interval) {
      // The throughput verdicts' rule (verdict()): a change the interval
      // shows but within min_effect is negligible. Batch sizes that learn in
      // the same steps differ to the target by a few hundredths of a percent
      // (the larger batch's slightly longer step), consistently enough over
      // six seeds for the sign test's [min, max] to exclude 1. A time ratio
      // above 1 is a longer time: "faster" of a ratio is slower to target.
      const Verdict v = verdict(*t.ratio, options.min_effect);
      const bool faster = v == Verdict::slower, slower = v == Verdict::faster;
      t.verdict = faster                     ? "faster to target"
                  : slower                   ? "slower to target"
                  : v == Verdict::negligible ? "negligible difference"
                                             : "no significant difference";
      const bool more_per_second = r.verdict && *r.verdict == Verdict::faster;
      const bool fewer_per_second = r.verdict && *r.verdict == Verdict::slower;
      t.inversion = (more_per_second && slower) || (fewer_per_second && faster);
    } else if (!r.baseline) {
      t.verdict = "no interval";
    }
    out.push_back(t);
  }
  return out;
}

}  // namespace gpusweep::host
