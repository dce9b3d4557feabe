// `gpusweep compare`: configs against the baseline, with statistics.
#include "analysis/claims.hpp"
#include "analysis/compare.hpp"
#include "cli/cli.hpp"
#include "cli/requests.hpp"
#include "report/compare_page.hpp"
#include "report/compare_view.hpp"
#include "report/results.hpp"
#include "spec/tune.hpp"
#include "support/error.hpp"

#include <future>
#include <iostream>

namespace gpusweep::host {

namespace {

std::vector<Option> compare_options() {
  return {
      sweep_name_option(),
      db_option(),
      texts("baseline", "KEY=VALUE",
            "settings of the baseline config (default: the sweep's baseline)"),
      number("max-quality-loss", "FRACTION",
             "largest relative quality loss still called non-inferior", kDefaultMaxQualityLoss),
      number("alpha", "A", "1 - the intervals' level (0.05: 95% intervals)", kDefaultAlpha),
      number("min-effect", "FRACTION",
             "smallest relative throughput change called faster or slower; a smaller one the "
             "interval shows is called negligible (0: any)",
             kMinEffect),
      format_option({OutputFormat::table, OutputFormat::csv, OutputFormat::json, OutputFormat::md}),
      flag("claims", "only the sweep's claims: each against its measured ratio, with a verdict"),
      flag("target",
           "a run with measure.target: only the times to target (each config's median over "
           "its seeds, the ratio to the baseline paired by seed, censoring counted)"),
      flag("knobs",
           "only the knob table (which knob matters: each knob value's effect over the pairs "
           "of configs that differ in it alone, with its interval)"),
      flag("scaling",
           "only the data-parallel scaling table: each config with world_size > 1 against "
           "the same settings at world_size 1, its speed-up and scaling efficiency with "
           "intervals, and the communication backward did not hide"),
      flag("across-machines",
           "give verdicts for configs whose trials ran on different machines than the "
           "baseline's (a merged cluster run); without it their ratio is shown and the "
           "verdict withheld"),
      flag("selection-data",
           "a tune run: add the racing rounds that selected the winner to its fresh "
           "confirmation rounds (they flatter the winner: it was picked because it looked "
           "best in them)")};
}

int run_compare(const po::variables_map& vm) {
  const OutputFormat format = parse_output_format(vm["format"].as<std::string>());
  const OpenedSweep run = open_sweep(vm);
  db::Store& store = *run.store;
  const db::SweepRecord* sweep = &run.sweep;
  const SweepSpec spec = stored_spec(*sweep);
  const CompareOptions opt = compare_options_of(vm, spec);
  if (vm["claims"].as<bool>()) {
    if (spec.claims.empty()) {
      throw UsageError("sweep '" + sweep->name +
                       "' carries no claims (add \"claims\" to its sweep "
                       "file; see docs/sweep-file.md)");
    }
    std::cout << render_claims(evaluate_claims(store, *sweep, spec), format);
    return 0;
  }
  note_unfinished(run, vm, format);
  const Rounds rounds = rounds_for(spec, vm["selection-data"].as<bool>());
  const auto configs = gather_configs(store, sweep->id, true, rounds);
  // The full table's knob effects, on a thread of their own while the main
  // table is computed and printed (on 10,000 configs each took a third of a
  // second); none for the other formats and the one-table options.
  const bool one_table =
      vm["knobs"].as<bool>() || vm["scaling"].as<bool>() || vm["target"].as<bool>();
  auto knobs = format != OutputFormat::table || one_table
                   ? std::future<std::vector<AblationRow>>()
                   : std::async(std::launch::async, [&configs, &spec, &opt] {
                       return ablation(configs, spec.grid, opt);
                     });
  const auto rows = compare_configs(configs, opt);
  std::vector<std::string> keys = varying_keys(spec);
  ComparePage page{sweep, &spec, &opt, rounds, &configs, &rows, keys, {}, {}};
  for (const char* one : {"knobs", "scaling", "target"}) {
    if (!vm[one].as<bool>()) continue;
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

}  // namespace

// The comparison's options from the command line and the run's spec.
CompareOptions compare_options_of(const po::variables_map& vm, const SweepSpec& spec) {
  CompareOptions opt;
  opt.baseline = vm.count("baseline") != 0U ? key_values(vm, "baseline", "replay_on_device=false")
                                            : spec.baseline;
  opt.alpha = vm["alpha"].as<double>();
  opt.sequential = stops_when_precise(spec);
  opt.across_machines = vm["across-machines"].as<bool>();
  opt.max_quality_loss = vm["max-quality-loss"].as<double>();
  opt.min_effect = vm["min-effect"].as<double>();
  if (opt.min_effect < 0 || opt.min_effect >= 1) {
    throw UsageError("--min-effect " + std::to_string(opt.min_effect) +
                     ": give a fraction in [0, 1), e.g. 0.01 for 1%");
  }
  return opt;
}

CommandDef cmd_compare() {
  return {"compare",
          "compare configs with the baseline: ratio, CI, verdict",
          "Compares every config of a sweep with its baseline: the throughput ratio (blocks\n"
          "paired by cycle, t over repeats) with a 95% interval, its p-value and a verdict\n"
          "(faster, slower, negligible difference, no significant difference), the quality\n"
          "change with a non-inferiority check, the sweep's claims against what was measured,\n"
          "on a run with measure.target the times to target, on a world_size sweep the\n"
          "scaling, then which knob matters. On a tune run only the confirmation rounds count\n"
          "unless --selection-data.",
          "commands.md#reading-compare",
          compare_options(),
          {"sweep"},
          {},
          run_compare};
}

}  // namespace gpusweep::host
