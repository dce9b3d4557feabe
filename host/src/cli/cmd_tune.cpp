// `gpusweep tune`: the best config of a sweep's space without running the
// whole grid, by racing candidates and dropping them on evidence
// (analysis/race.hpp, run/tune_run.hpp).
#include "cli/cli.hpp"
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

po::options_description tune_options() {
  po::options_description o;
  o.add_options()("sweep", po::value<std::string>()->required(), "sweep file (JSON)");
  add_db_option(o);
  o.add_options()("budget", po::value<std::string>(),
                  "wall time for the whole tune, confirmation included: 20m, 90s, 1h30m "
                  "(default: the file's tune.budget, else 20m)")(
      "objective", po::value<std::string>(),
      "throughput (highest), step_time (lowest), peak_memory (lowest) or time_to_target "
      "(lowest, training to measure.target); default time_to_target when the sweep has a "
      "measure.target, else throughput")(
      "constraint", po::value<std::vector<std::string>>()->composing(),
      "NAME OP VALUE as `best` takes it, e.g. peak_memory<8GiB, "
      "quality>=0.99*baseline (repeatable; replaces the file's)")(
      "seed", po::value<uint64_t>(), "seed of the model's draws in large spaces")(
      "resume", po::bool_switch(),
      "continue the latest tune of this sweep (after a kill or Ctrl-C): nothing that "
      "finished runs again")("set", po::value<std::vector<std::string>>()->composing(),
                             "override a setting: key=value (base), measure.key=value");
  add_plugin_path_option(o);
  add_allow_plugin_change_option(o);
  add_format_option(o, {OutputFormat::table, OutputFormat::json});
  return o;
}

TuneOverrides tune_overrides(const po::variables_map& vm) {
  TuneOverrides o;
  if (vm.count("objective") != 0U) o.objective = vm["objective"].as<std::string>();
  if (vm.count("constraint") != 0U) o.constraints = strings_of(vm, "constraint");
  if (vm.count("budget") != 0U)
    o.budget_s = parse_duration("--budget", vm["budget"].as<std::string>());
  if (vm.count("seed") != 0U) o.seed = vm["seed"].as<uint64_t>();
  return o;
}

}  // namespace

// Long by design: options, the run, its progress and the answer, in order.
int cmd_tune(const Args& args) {
  po::options_description o = tune_options();
  po::positional_options_description pos;
  pos.add("sweep", 1);
  auto p = parse_command(
      "tune",
      "SWEEP.json [--budget 20m] [--objective throughput|step_time|peak_memory|time_to_target]\n"
      "       [--constraint EXPR ...] [--db FILE] [--resume] [--format table|json]",
      "Searches the sweep's space (its grid; a numeric knob may be a range such as\n"
      "{\"min\": 16, \"max\": 1024, \"scale\": \"pow2\"}) for the best config without running\n"
      "the whole grid. Candidates race in rounds, one trial each per round, each round in\n"
      "its own seeded order (taking turns block by block on the CPU); after each round a\n"
      "candidate that a one-sided test shows worse than the leader is dropped, and so is\n"
      "one that a test shows to break a constraint on a noisy metric (quality, throughput,\n"
      "step_time, cv, input_wait): the chance that a test ever drops the true best is held\n"
      "to 5% (tune.alpha) over all rounds. Outside that bound: a config the plugin fails,\n"
      "or that runs out of memory, or breaks a constraint on a setting or on peak_memory,\n"
      "is written off on its first trial (out-of-memory also rules out larger batches at\n"
      "the same settings); a timeout or crash is retried once, in the next round. A model\n"
      "of the knobs' effects (main effects and pairwise interactions, fitted to every\n"
      "trial so far) proposes the configs to try next. When one candidate is left (or the\n"
      "budget is nearly spent) the winner, the runner-up and the baseline run fresh\n"
      "rounds, and the winner's ratios come from those alone. Every trial is an ordinary\n"
      "trial in the database: `compare`, `best` and `report` read the run's confirmation\n"
      "rounds (--selection-data adds the racing rounds), `export` every trial.\n\n"
      "With measure.target in the sweep the race is on time to that target: each trial\n"
      "trains until an evaluation reaches it, adaptively capped (measure.target.cap, on\n"
      "by default here: a trial stops, censored, at 1.5x its round's best time), and a\n"
      "candidate is dropped by a paired sign test over the rounds (seeds) that counts a\n"
      "censored round as slower only when it is known to be. Such a test needs 6 rounds\n"
      "before it can drop anything at 5%; the confirmation runs 6 rounds and gives the\n"
      "winner's speed to the target over the baseline's with the sign test's interval.",
      o, pos, args);
  if (p.help) return 0;
  const auto& vm = p.vm;
  const std::string file = vm["sweep"].as<std::string>();
  SweepSpec spec = load_sweep_file(file);
  apply_overrides(spec, strings_of(vm, "set"));
  const TuneSpec tune = tune_settings(spec, tune_overrides(vm));
  const OutputFormat format = format_of(vm, {OutputFormat::table, OutputFormat::json});
  Registry registry(plugin_paths(vm));
  const PluginInfo info = registry.describe_sweep(spec);
  validate_sweep(spec, info.manifest);

  RunRequest request;
  request.db_path = vm["db"].as<std::string>();
  request.resume = vm["resume"].as<bool>();
  request.allow_plugin_change = vm["allow-plugin-change"].as<bool>();
  request.file_path = std::filesystem::absolute(file).string();
  request.file_hash = hash_file(file);
  TuneRun run(spec, info, request, tune);
  std::ostream& log = format == OutputFormat::json ? std::cerr : std::cout;
  log << "tune '" << spec.name << "' (run " << run.run().record().id << ") into " << request.db_path
      << ": " << run.space().size() << " configs (" << run.space().knobs() << " knobs), objective "
      << tune.objective << ", budget " << fixed(tune.budget_s / 60, 1) << " min\n"
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

}  // namespace gpusweep::host
