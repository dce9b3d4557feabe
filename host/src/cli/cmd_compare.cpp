// `gpusweep compare`: configs against the baseline, with statistics.
#include "analysis/claims.hpp"
#include "analysis/compare.hpp"
#include "cli/cli.hpp"
#include "report/compare_page.hpp"
#include "report/compare_view.hpp"
#include "report/results.hpp"
#include "spec/tune.hpp"
#include "support/error.hpp"

#include <future>
#include <iostream>

namespace gpusweep::host {

namespace {

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
  opt.baseline = vm.count("baseline") != 0U ? key_values(vm, "baseline", "replay_on_device=false")
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
                       "file; see docs/sweep-file.md)");
    }
    std::cout << render_claims(evaluate_claims(store, *sweep, spec), format);
    return 0;
  }
  note_unfinished(run, vm, format);
  const Rounds rounds = rounds_for(spec, vm.count("selection-data") != 0U);
  const auto configs = gather_configs(store, sweep->id, true, rounds);
  // The full table's knob effects, on a thread of their own while the main
  // table is computed and printed (on 10,000 configs each took a third of a
  // second); none for the other formats and the one-table options.
  const bool one_table = vm.count("knobs") + vm.count("scaling") + vm.count("target") != 0U;
  auto knobs = format != OutputFormat::table || one_table
                   ? std::future<std::vector<AblationRow>>()
                   : std::async(std::launch::async, [&configs, &spec, &opt] {
                       return ablation(configs, spec.grid, opt);
                     });
  const auto rows = compare_configs(configs, opt);
  std::vector<std::string> keys = varying_keys(spec);
  ComparePage page{sweep, &spec, &opt, rounds, &configs, &rows, keys, {}, {}};
  for (const char* one : {"knobs", "scaling", "target"}) {
    if (vm.count(one) == 0U) continue;
    std::cout << compare_one_table(page, one, format);
    return 0;
  }
  if (format != OutputFormat::table) {
    std::cout << render_comparison(rows, keys, format);
    return 0;
  }
  page.knobs = knobs.get();
  if (!spec.claims.empty()) page.claims = evaluate_claims(store, *sweep, spec);
  std::cout << compare_page(page);
  return 0;
}

}  // namespace gpusweep::host
