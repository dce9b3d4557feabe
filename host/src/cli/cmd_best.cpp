// `gpusweep best`: the best config of a sweep under constraints, printed as a
// sweep-file `base` snippet ready to reuse (analysis/best.hpp chooses it).
#include "analysis/best.hpp"
#include "analysis/compare.hpp"
#include "analysis/stored.hpp"
#include "cli/cli.hpp"
#include "report/best_view.hpp"

#include <iostream>
#include <map>

namespace gpusweep::host {

namespace {

const std::vector<OutputFormat> kBestFormats = {OutputFormat::table, OutputFormat::json};

int run_best(const po::variables_map& vm) {
  const OutputFormat format = format_of(vm, kBestFormats);
  std::vector<Constraint> constraints;
  for (const auto& c : strings_of(vm, "constraint")) constraints.push_back(parse_constraint(c));
  const OpenedSweep run = open_sweep(vm);
  const SweepSpec spec = stored_spec(run.sweep);
  const Objective objective = vm.count("objective") != 0U
                                  ? objective_option(vm["objective"].as<std::string>())
                              : spec.measure.target ? Objective::time_to_target
                                                    : Objective::throughput;
  if (objective == Objective::time_to_target && !spec.measure.target) {
    throw UsageError("--objective time_to_target: sweep '" + run.sweep.name +
                     "' has no measure.target (see docs/time-to-target.md)");
  }
  const Rounds rounds = rounds_for(spec, vm["selection-data"].as<bool>());
  const auto configs = gather_configs(*run.store, run.sweep.id, true, rounds);
  const BestChoice best =
      best_of_run(*run.store, run.sweep, spec, configs, rounds, objective, constraints);
  if (format == OutputFormat::json) {
    std::cout << best_json(best, run.sweep.name).dump(2) << "\n";
  } else {
    std::cout << render_best(best, run.sweep.name);
  }
  return best.config_index ? 0 : 1;
}

}  // namespace

CommandDef cmd_best() {
  return {"best",
          "the best config under constraints, as a sweep snippet",
          "Picks the best config of a sweep under constraints and prints its settings as a\n"
          "sweep-file \"base\" snippet. Metrics: throughput, peak_memory, step_time, quality,\n"
          "cv, input_wait (medians over a config's ok repeats); any setting by name. Values\n"
          "take units (KiB MiB GiB = powers of 1024, kB MB GB = powers of 1000, ns us ms s, %)\n"
          "or a factor of the baseline's value. On a tune run only the confirmation rounds\n"
          "count (the winner, the runner-up and the baseline), unless --selection-data.",
          "",
          {sweep_name_option(), db_option(),
           text("objective", "OBJECTIVE",
                "throughput (highest), peak_memory (lowest; memory is an older spelling), "
                "step_time (lowest; time) or time_to_target (lowest median time to "
                "measure.target); default: time_to_target on a run with a target, else "
                "throughput"),
           texts("constraint", "EXPR",
                 "NAME OP VALUE, e.g. peak_memory<8GiB, quality>=0.99*baseline, step_time<=2ms, "
                 "batch_size<=256, precision==bf16"),
           flag("selection-data",
                "a tune run: choose among every round's trials, the racing rounds included (by "
                "default only its fresh confirmation rounds count: the racing rounds flatter "
                "what they picked)"),
           format_option(kBestFormats)},
          {"sweep"},
          {},
          run_best};
}

}  // namespace gpusweep::host
