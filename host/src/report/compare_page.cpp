// compare's page in the table format; see compare_page.hpp.
#include "report/compare_page.hpp"

#include "analysis/scaling.hpp"
#include "report/compare_view.hpp"
#include "spec/tune.hpp"
#include "support/error.hpp"
#include "support/format.hpp"

#include <sstream>

namespace gpusweep::host {

namespace {

// With measure.vary_seed false the "seeds" of a target run repeat one
// seed, and the sign test's interval covers the machine's noise alone: the
// page says so.
std::string seed_note(const SweepSpec& spec) {
  if (spec.measure.vary_seed) return "";
  return "note: measure.vary_seed is false: each config's seeds are repeats of one seed, so "
         "the times' intervals cover the machine's noise only, not another seed's\n";
}

}  // namespace

std::string compare_header(const ComparePage& page) {
  const CompareOptions& opt = *page.options;
  std::ostringstream os;
  std::vector<std::string> keys;
  for (const auto& [key, v] : opt.baseline.items()) keys.push_back(key);
  os << "sweep '" << page.sweep->name << "' (run " << page.sweep->id << "), baseline "
     << (opt.baseline.empty() ? std::string("config 1") : config_label(opt.baseline, keys)) << "\n";
  for (const auto& r : *page.rows) {
    if (r.baseline && r.config->ok == 0) {
      os << "the baseline, config " << r.config->config_index + 1
         << ", has no ok trial: no ratio is shown against it (" << truncate(r.config->problem, 200)
         << "); gpusweep results --trial ID prints a trial's error and log; --baseline "
            "key=value compares against another config\n";
    }
  }
  if (page.rounds == Rounds::confirmation) {
    os << "a tune run: ratios from its fresh confirmation rounds only (--selection-data "
          "adds the racing rounds, which flatter the winner)\n";
  } else if (is_tune_run(*page.spec)) {
    os << "a tune run, with its racing rounds (selection data: they picked the winner "
          "because it looked best in them, so its ratios are flattered)\n";
  }
  return os.str();
}

std::string compare_footer(const ComparePage& page) {
  const CompareOptions& opt = *page.options;
  std::ostringstream os;
  os << comparison_legend(opt.max_quality_loss);
  // Each interval is at its own level: a family of them is not, and among
  // many configs some verdicts are chance.
  const size_t compared = page.rows->empty() ? 0 : page.rows->size() - 1;
  if (compared >= 5) {
    os << "multiplicity: " << compared << " configs, each at " << fixed(100 * (1 - opt.alpha), 0)
       << "%: were none different, about " << fixed(static_cast<double>(compared) * opt.alpha, 1)
       << " would still be called faster or slower by chance (no family-wise "
          "correction; --alpha "
       << fixed(opt.alpha / static_cast<double>(compared), 4) << " gives Bonferroni's)\n";
  }
  return os.str();
}

std::string compare_one_table(const ComparePage& page, const std::string& which,
                              OutputFormat format) {
  const CompareOptions& opt = *page.options;
  if (which == "knobs")
    return render_ablation(ablation(*page.configs, page.spec->grid, opt), format);
  if (which == "scaling") {
    const auto scaled = scaling(*page.configs, opt);
    if (scaled.empty() && format == OutputFormat::table) {
      throw UsageError("sweep '" + page.sweep->name +
                       "' has no config with world_size > 1: sweep world_size (for example "
                       "[1, 2]) to measure data-parallel scaling");
    }
    return render_scaling(scaled, page.keys, format);
  }
  if (!page.spec->measure.target) {
    throw UsageError("sweep '" + page.sweep->name +
                     "' has no measure.target: its trials ran a fixed number of blocks, not "
                     "to a quality target (see docs/time-to-target.md)");
  }
  return render_targets(compare_targets(*page.rows, opt), page.keys, format) +
         (format == OutputFormat::table ? seed_note(*page.spec) : "");
}

std::string compare_page(const ComparePage& page) {
  const auto format = OutputFormat::table;
  std::string out = compare_header(page);
  out += render_comparison(*page.rows, page.keys, format);
  if (page.spec->measure.target) {
    out += render_targets(compare_targets(*page.rows, *page.options), page.keys, format) +
           seed_note(*page.spec);
  }
  out += render_ablation(page.knobs);
  out += render_scaling(scaling(*page.configs, *page.options), page.keys, format);
  if (!page.claims.empty()) {
    out += "\nclaims (the ratio each promises for its change, against the measured one):\n" +
           render_claims(page.claims, format);
  }
  return out + compare_footer(page);
}

}  // namespace gpusweep::host
