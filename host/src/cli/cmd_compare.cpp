// `gpusweep compare`: configs against the baseline, with statistics.
#include "analysis/claims.hpp"
#include "analysis/compare.hpp"
#include "cli/cli.hpp"
#include "model/tune.hpp"
#include "report/compare_view.hpp"
#include "report/results.hpp"
#include "support/error.hpp"
#include "support/format.hpp"

#include <filesystem>
#include <future>
#include <iostream>

namespace gpusweep::host {

namespace {

Json parse_partial(const std::vector<std::string>& sets) {
  Json j = Json::object();
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError("--baseline " + s +
                       ": expected key=value (for example replay_on_device=false)");
    }
    j[s.substr(0, eq)] = parse_cli_value(s.substr(eq + 1));
  }
  return j;
}

po::options_description compare_options() {
  po::options_description o;
  o.add_options()("sweep", po::value<std::string>(), "sweep name (default: the latest run)");
  add_db_option(o);
  o.add_options()("baseline", po::value<std::vector<std::string>>()->composing(),
                  "key=value settings of the baseline config (default: the sweep's baseline)")(
      "max-quality-loss", po::value<double>()->default_value(0.01, "0.01"),
      "largest relative quality loss still called non-inferior")(
      "alpha", po::value<double>()->default_value(0.05, "0.05"),
      "1 - the intervals' level (0.05: 95% intervals)")(
      "min-effect", po::value<double>()->default_value(kMinEffect, "0.01"),
      "smallest relative throughput change called faster or slower; a smaller one the "
      "interval shows is called negligible (0: any)")(
      "format", po::value<std::string>()->default_value("table"), "table, csv, json or md")(
      "claims", "only the sweep's claims: each against its measured ratio, with a verdict")(
      "target",
      "a run with measure.target: only the times to target (each config's median over its "
      "seeds, the ratio to the baseline paired by seed, censoring counted)")(
      "knobs",
      "only the knob table (which knob matters: each knob value's effect over the pairs of "
      "configs that differ in it alone, with its interval)")(
      "scaling",
      "only the data-parallel scaling table: each config with world_size > 1 against the "
      "same settings at world_size 1, its speed-up and scaling efficiency with intervals, and "
      "the communication backward did not hide")(
      "across-machines",
      "give verdicts for configs whose trials ran on different machines than the baseline's "
      "(a merged cluster run); without it their ratio is shown and the verdict withheld")(
      "selection-data",
      "a tune run: add the racing rounds that selected the winner to its fresh confirmation "
      "rounds (they flatter the winner: it was picked because it looked best in them)");
  return o;
}

// The comparison's options from the command line and the run's spec.
CompareOptions options_of(const po::variables_map& vm, const SweepSpec& spec) {
  CompareOptions opt;
  opt.baseline = vm.count("baseline") != 0U
                     ? parse_partial(vm["baseline"].as<std::vector<std::string>>())
                     : spec.baseline;
  opt.alpha = vm["alpha"].as<double>();
  opt.sequential = stops_when_precise(spec);
  opt.across_machines = vm.count("across-machines") != 0U;
  opt.max_quality_loss = vm["max-quality-loss"].as<double>();
  opt.min_effect = vm["min-effect"].as<double>();
  if (opt.min_effect < 0 || opt.min_effect >= 1) {
    throw UsageError("--min-effect " + std::to_string(opt.min_effect) +
                     ": give a fraction in [0, 1), e.g. 0.01 for 1%");
  }
  return opt;
}

// The table's first lines: the run, its baseline, and which rounds count.
void print_header(const db::SweepRecord& sweep, const SweepSpec& spec, const CompareOptions& opt,
                  Rounds rounds) {
  std::vector<std::string> keys;
  for (const auto& [key, v] : opt.baseline.items()) keys.push_back(key);
  std::cout << "sweep '" << sweep.name << "' (run " << sweep.id << "), baseline "
            << (opt.baseline.empty() ? std::string("config #1") : config_label(opt.baseline, keys))
            << "\n";
  if (rounds == Rounds::confirmation) {
    std::cout << "a tune run: ratios from its fresh confirmation rounds only (--selection-data "
                 "adds the racing rounds, which flatter the winner)\n";
  } else if (is_tune_run(spec)) {
    std::cout << "a tune run, with its racing rounds (selection data: they picked the winner "
                 "because it looked best in them, so its ratios are flattered)\n";
  }
}

// Under the table: how its numbers are made, and what a family of
// intervals means.
void print_legend(const std::vector<ComparisonRow>& rows, const CompareOptions& opt) {
  std::cout << comparison_legend(opt.max_quality_loss);
  // Each interval is at its own level: a family of them is not (audit L9).
  const size_t compared = rows.empty() ? 0 : rows.size() - 1;
  if (compared >= 5) {
    std::cout << "multiplicity: " << compared << " configs, each at "
              << fixed(100 * (1 - opt.alpha), 0) << "%: were none different, about "
              << fixed(static_cast<double>(compared) * opt.alpha, 1)
              << " would still be called faster or slower by chance (no family-wise "
                 "correction; --alpha "
              << fixed(opt.alpha / static_cast<double>(compared), 4) << " gives Bonferroni's)\n";
  }
}

// --knobs or --target: that table alone, in the asked format; false when
// neither was asked.
bool print_one_table(const po::variables_map& vm, const db::SweepRecord& sweep,
                     const SweepSpec& spec, const std::vector<ConfigSamples>& configs,
                     const std::vector<ComparisonRow>& rows, const CompareOptions& opt,
                     const std::vector<std::string>& keys, OutputFormat format) {
  if (vm.count("knobs") != 0U) {
    std::cout << render_ablation(ablation(configs, spec.grid, opt), format);
    return true;
  }
  if (vm.count("scaling") != 0U) {
    const auto scaled = scaling(configs, opt);
    if (scaled.empty() && format == OutputFormat::table) {
      throw UsageError("sweep '" + sweep.name +
                       "' has no config with world_size > 1: sweep world_size (for example "
                       "[1, 2]) to measure data-parallel scaling");
    }
    std::cout << render_scaling(scaled, keys, format);
    return true;
  }
  if (vm.count("target") == 0U) return false;
  if (!spec.measure.target) {
    throw UsageError("sweep '" + sweep.name +
                     "' has no measure.target: its trials ran a fixed number of blocks, not "
                     "to a quality target (see README.md, measure.target)");
  }
  std::cout << render_targets(compare_targets(rows, opt), keys, format);
  return true;
}

// The full table's knob effects, on a thread of their own while the main
// table is computed and printed (on 10,000 configs each took a third of a
// second); none for the other formats and the one-table options.
std::future<std::vector<AblationRow>> knobs_ahead(const po::variables_map& vm,
                                                  const std::vector<ConfigSamples>& configs,
                                                  const SweepSpec& spec, const CompareOptions& opt,
                                                  OutputFormat format) {
  if (format != OutputFormat::table || vm.count("knobs") != 0U || vm.count("target") != 0U ||
      vm.count("scaling") != 0U) {
    return {};
  }
  return std::async(std::launch::async,
                    [&configs, &spec, &opt] { return ablation(configs, spec.grid, opt); });
}

}  // namespace

int cmd_compare(const Args& args) {
  const po::options_description o = compare_options();
  po::positional_options_description pos;
  pos.add("sweep", 1);
  auto p = parse_command(
      "compare",
      "[--sweep NAME] [--baseline key=value ...] [--max-quality-loss 0.01] [--claims] [--knobs] "
      "[--target] [--scaling] [--format F]",
      "Compares every config of a sweep with its baseline: the throughput ratio (each\n"
      "repeat's blocks paired with the baseline's that ran in the same cycle, the repeats'\n"
      "ratios averaged) with a 95% confidence interval (t over repeats, so that\n"
      "differences between processes count; over one process's blocks when there is one\n"
      "repeat, and the note says so), its p-value, and a verdict (faster or slower when\n"
      "the interval lies above or below 1 and the ratio moved by more than --min-effect,\n"
      "negligible when it moved by less, else no significant difference). Runs with\n"
      "measure.precision looked after every round: their intervals are widened to keep\n"
      "95% coverage. Quality change is shown\n"
      "next to speed, with a non-inferiority check. A sweep file's claims (a guide's\n"
      "promised ratio for a change) are shown against the measured ratio and its\n"
      "interval: confirmed, refuted, inconclusive, or not measurable here (and why).\n"
      "On a tune run only the confirmation rounds count (fresh data: the winner, the\n"
      "runner-up and the baseline), unless --selection-data. On a run with\n"
      "measure.target, each config's time to the target follows: its median over the\n"
      "seeds (censored trials as lower bounds) and its ratio to the baseline paired by\n"
      "seed, with a sign-test interval, an inversion (faster per sample, slower to the\n"
      "target, or the reverse) flagged. A sweep of world_size (data-parallel trials) adds\n"
      "each config's speed-up over the same settings at world_size 1 and its scaling\n"
      "efficiency (speed-up / world_size), with intervals, and the share of step time in\n"
      "all-reduce that backward did not hide.",
      o, pos, args);
  if (p.help) return 0;
  const auto& vm = p.vm;
  const OutputFormat format = parse_output_format(vm["format"].as<std::string>());
  const OpenedSweep run = open_sweep(vm);
  db::Store& store = *run.store;
  const db::SweepRecord* sweep = &run.sweep;
  const SweepSpec spec = stored_spec(*sweep);
  const CompareOptions opt = options_of(vm, spec);
  if (vm.count("claims") != 0U) {
    if (spec.claims.empty()) {
      throw UsageError("sweep '" + sweep->name +
                       "' carries no claims (add \"claims\" to its sweep "
                       "file; see README.md)");
    }
    std::cout << render_claims(evaluate_claims(store, *sweep, spec), format);
    return 0;
  }
  const Rounds rounds = rounds_for(spec, vm.count("selection-data") != 0U);
  const auto configs = gather_configs(store, sweep->id, true, rounds);
  auto knobs = knobs_ahead(vm, configs, spec, opt, format);
  const auto rows = compare_configs(configs, opt);
  std::vector<std::string> keys = varying_keys(spec);
  if (print_one_table(vm, *sweep, spec, configs, rows, opt, keys, format)) return 0;

  if (format == OutputFormat::table) print_header(*sweep, spec, opt, rounds);
  std::cout << render_comparison(rows, keys, format);
  if (format == OutputFormat::table && spec.measure.target) {
    std::cout << render_targets(compare_targets(rows, opt), keys, format);
  }
  if (format == OutputFormat::table) std::cout << render_ablation(knobs.get());
  if (format == OutputFormat::table)
    std::cout << render_scaling(scaling(configs, opt), keys, format);
  if (format == OutputFormat::table && !spec.claims.empty()) {
    std::cout << "\nclaims (the ratio each promises for its change, against the measured one):\n"
              << render_claims(evaluate_claims(store, *sweep, spec), format);
  }
  if (format == OutputFormat::table) print_legend(rows, opt);
  return 0;
}

}  // namespace gpusweep::host
