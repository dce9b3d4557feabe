// `gpusweep tune`: the best config of a sweep's space without running the
// whole grid, by racing candidates and dropping them on evidence
// (analysis/race.hpp, run/tune_run.hpp).
#include "cli/cli.hpp"
#include "cli/requests.hpp"
#include "report/tune_view.hpp"
#include "run/live_blocks.hpp"
#include "run/progress.hpp"
#include "run/run_session.hpp"
#include "run/tune_run.hpp"
#include "spec/hashing.hpp"
#include "support/exit_code.hpp"

#include <filesystem>
#include <iostream>

namespace gpusweep::host {

namespace {

const std::vector<OutputFormat> kTuneFormats = {OutputFormat::table, OutputFormat::json};

std::vector<Option> tune_options() {
  return with_run_options(
      {text("sweep", "SWEEP.json", "sweep file (JSON)").required(),
       text("budget", "DURATION",
            "wall time for the whole tune, confirmation included: 20m, 90s, 1h30m (default: the "
            "file's tune.budget, else 20m)"),
       text("objective", "OBJECTIVE",
            "throughput (highest), step_time (lowest), peak_memory (lowest) or time_to_target "
            "(lowest, training to measure.target); default time_to_target when the sweep has a "
            "measure.target, else throughput"),
       texts("constraint", "EXPR",
             "NAME OP VALUE as `best` takes it, e.g. peak_memory<8GiB, quality>=0.99*baseline "
             "(replaces the file's)"),
       integer("seed", "N", "seed of the model's draws in large spaces"),
       allow_plugin_change_option(), format_option(kTuneFormats)},
      "continue the latest tune of this sweep (after a kill or Ctrl-C): nothing that finished "
      "runs again");
}

int run_tune(const po::variables_map& vm) {
  const std::string file = vm["sweep"].as<std::string>();
  SweepSpec spec = load_sweep_file(file);
  apply_overrides(spec, strings_of(vm, "set"));
  const TuneSpec tune = tune_settings(spec, tune_overrides_of(vm));
  const OutputFormat format = format_of(vm, kTuneFormats);
  Registry registry(plugin_paths(vm));
  const PluginInfo info = registry.describe_sweep(spec);
  validate_sweep(spec, info.manifest);

  RunRequest request;
  request.db_path = vm["db"].as<std::string>();
  request.resume = vm["resume"].as<bool>();
  request.fork_server = !vm["fresh-workers"].as<bool>();
  request.allow_plugin_change = vm["allow-plugin-change"].as<bool>();
  request.file_path = std::filesystem::absolute(file).string();
  request.file_hash = hash_file(file);
  TuneRun run(spec, info, request, tune);
  std::ostream& log = format == OutputFormat::json ? std::cerr : std::cout;
  log << "tune '" << spec.name << "' (run " << run.run().record().id << ") into " << request.db_path
      << ": " << run.space().size() << " configs (" << run.space().knobs() << " knobs), objective "
      << objective_name(tune.objective) << ", budget " << fixed(tune.budget_s / 60, 1) << " min\n"
      << std::flush;

  Progress progress(0, 1, stdout_is_terminal() && format != OutputFormat::json,
                    format == OutputFormat::json ? stderr : stdout);
  LiveBlocks live(request.db_path, run.run().record().id);
  RunnerCallbacks cb = progress_callbacks(progress, &live);
  cb.on_start = [&progress, started = cb.on_start](const TrialJob& j) {
    progress.grow(1);  // a race's trials are known a round at a time
    started(j);
  };
  size_t shown = 0;
  auto on_look = [&](const TuneRun::Look& look) {
    progress.note(race_progress(run.space(), look.status, run.baseline(), shown, look.spent_s,
                                look.budget_s, tune.to_target()));
    shown = look.status.events.size();
  };
  const bool complete = run.execute(cb, on_look);
  progress.done();
  const RaceStatus status = run.status();
  if (format == OutputFormat::json) {
    std::cout << tune_json(run.space(), status, run.baseline(), spec, tune).dump(2) << "\n";
  } else {
    std::cout << "\n" << render_tune(run.space(), status, run.baseline(), spec, tune);
  }
  if (!complete) {
    std::cerr << "interrupted: `gpusweep tune " << file << " --resume` continues it\n";
    return kExitInterrupted;
  }
  return status.winner ? 0 : 1;
}

}  // namespace

TuneOverrides tune_overrides_of(const po::variables_map& vm) {
  TuneOverrides o;
  if (vm.count("objective") != 0U) o.objective = vm["objective"].as<std::string>();
  if (vm.count("constraint") != 0U) o.constraints = strings_of(vm, "constraint");
  if (vm.count("budget") != 0U)
    o.budget_s = parse_duration("--budget", vm["budget"].as<std::string>());
  if (vm.count("seed") != 0U) o.seed = static_cast<uint64_t>(vm["seed"].as<int64_t>());
  return o;
}

CommandDef cmd_tune() {
  return {"tune",
          "race a sweep's space to its best config, with the evidence",
          "Searches the sweep's space (its grid; a numeric knob may be a range) for the best\n"
          "config without running the whole grid: candidates race in rounds and one that a\n"
          "test shows worse than the leader, or breaking a constraint, is dropped, the chance\n"
          "of ever dropping the true best held to tune.alpha (5%). The winner, the runner-up\n"
          "and the baseline then run fresh confirmation rounds. With measure.target the race\n"
          "is on time to the target. Every trial is an ordinary trial in the database.",
          "tune.md",
          tune_options(),
          {"sweep"},
          {},
          run_tune};
}

}  // namespace gpusweep::host
