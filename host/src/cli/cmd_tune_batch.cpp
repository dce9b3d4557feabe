// `gpusweep tune-batch`: the largest batch size that fits (under an optional
// memory cap) and the one with the best throughput, each probe a trial of its
// own worker, recorded in the database (run/batch_tuner.hpp runs the search).
#include "analysis/compare.hpp"
#include "cli/cli.hpp"
#include "cli/requests.hpp"
#include "cli/run_commands.hpp"
#include "plugin_host/registry.hpp"
#include "report/batch_view.hpp"
#include "run/batch_tuner.hpp"
#include "spec/units.hpp"
#include "support/exit_code.hpp"

#include <algorithm>
#include <iostream>

namespace gpusweep::host {

namespace {

// Runs the target sweep over the sizes that ran ok, its baseline the size
// with the most samples/s, and reports which reached the target first:
// into out under time_to_target (json), else printed. Returns run_sweep's code.
int target_stage(SweepSpec& target, const PluginInfo& info, const BatchTuneResult& r,
                 const std::string& db_path, bool json, std::ostream& progress, Json& out) {
  const BatchCurve curve = throughput_curve(r.probes);
  std::vector<int64_t> sizes;
  // Every size that ran ok (the verified one among them).
  for (size_t i : curve.points) sizes.push_back(r.probes[i].batch);
  target.grid["batch_size"] = sizes;
  target.baseline = {{"batch_size", curve.best_batch}};
  validate_sweep(target, info.manifest);
  RunRequest run;
  run.db_path = db_path;
  run.fork_server = true;
  run.kind = db::RunKind::tune_batch;
  progress << "\ntime to target: " << sizes.size() << " batch sizes x " << target.measure.repeats
           << " seeds, the baseline batch " << curve.best_batch << " (the most samples/s)\n"
           << std::flush;
  // Its lines go where the probes' did: with --format json, stdout carries
  // the one JSON document.
  const int code = run_sweep(target, info, run, json);
  db::Store store(db_path, db::Connection::Mode::read_only);
  report_batch_target(store, target.name, target.baseline, json, out, std::cout);
  return code;
}

const std::vector<OutputFormat> kTuneBatchFormats = {OutputFormat::table, OutputFormat::json};

std::vector<Option> tune_batch_options() {
  return {text("workload", "WORKLOAD", "workload (plugin) name").required(),
          texts("set", "KEY=VALUE",
                "a setting for every probe: key=value; measure.key=value sets the final "
                "verification's protocol"),
          text("mode", "MODE",
               "power: double until a size does not fit; binsearch: then bisect between the last "
               "fit and the first failure",
               "power"),
          text("max-memory", "SIZE",
               "cap on what each probe may allocate, such as 2GiB: on a CUDA device the caching "
               "allocator's (its per-process memory fraction), on the CPU the worker's address "
               "space beyond the loaded plugin; allocations past it fail as out-of-memory"),
          number("margin", "FRACTION",
                 "fraction taken off the largest fit: the recommendation is at most that (0 to "
                 "0.9)",
                 SearchOptions{}.margin),
          integer("min", "B", "first batch size probed", SearchOptions{}.min),
          integer("max", "B", "largest batch size probed (default: the setting's maximum)"),
          text("objective", "OBJECTIVE",
               "throughput (the most samples/s) or time_to_target (first to measure.target, "
               "given with --set; then the default)"),
          db_option(),
          format_option(kTuneBatchFormats),
          plugin_path_option()};
}

int run_tune_batch(const po::variables_map& vm) {
  const bool json = format_of(vm, kTuneBatchFormats) == OutputFormat::json;
  const SearchOptions search = search_options_of(vm);
  const double max_memory = vm.count("max-memory") != 0U
                                ? parse_size(vm["max-memory"].as<std::string>(), "--max-memory")
                                : 0;
  // The final verification's protocol; probes use a shorter one. A
  // measure.target is for the second stage only (target_sweep).
  const std::vector<std::string> sets = strings_of(vm, "set");
  std::vector<std::string> search_sets;
  for (const auto& s : sets) {
    if (s.rfind("measure.target=", 0) != 0) search_sets.push_back(s);
  }
  const std::string workload = vm["workload"].as<std::string>();
  check_batch_objective(vm.count("objective") != 0U ? vm["objective"].as<std::string>() : "",
                        search_sets.size() != sets.size());
  SweepSpec spec =
      command_sweep("tune-batch", workload, "gpusweep tune-batch probes", 5, 5, search_sets);
  const PluginInfo info = Registry(plugin_paths(vm)).describe_sweep(spec);
  std::optional<SweepSpec> target;
  if (search_sets.size() != sets.size()) target = target_sweep(workload, sets, info.manifest);
  const BatchTuneRequest request = batch_tune_request(spec, info.manifest, search, max_memory);
  const std::string db_path = vm["db"].as<std::string>();
  ProbeSession session(db_path, spec, info, db::RunKind::tune_batch);
  // Progress goes to stderr when stdout carries the JSON document.
  std::ostream& progress = json ? std::cerr : std::cout;
  progress << tune_batch_header(spec.workload, request.search, max_memory, spec.name,
                                session.sweep_id(), db_path);
  const BatchTuneResult r = tune_batch(session, request, [&](const BatchProbe& probe) {
    progress << probe_line(probe) << "\n" << std::flush;
  });
  Json out = json ? tune_batch_json(r, request.search) : Json();
  if (!json) std::cout << render_tune_batch(r, request.search, request.verify_measure);
  int code = r.interrupted ? kExitInterrupted : r.recommended ? kExitOk : kExitFailed;
  if (target && code == 0) code = target_stage(*target, info, r, db_path, json, progress, out);
  if (json) std::cout << out.dump(2) << "\n";
  return code;
}

}  // namespace

SearchOptions search_options_of(const po::variables_map& vm) {
  SearchOptions search;
  search.mode = parse_search_mode(vm["mode"].as<std::string>());
  search.margin = vm["margin"].as<double>();
  search.min = vm["min"].as<int64_t>();
  if (vm.count("max") != 0U) search.max = vm["max"].as<int64_t>();
  return search;
}

CommandDef cmd_tune_batch() {
  return {"tune-batch",
          "find the largest and the fastest batch size",
          "Finds the largest batch size that fits and the one with the best throughput: each\n"
          "probe a short trial in its own worker, batch sizes doubling from --min until one runs\n"
          "out of memory (--mode binsearch then bisects). The recommendation, the fastest size\n"
          "that fits with --margin, is re-verified with a full measurement. With --set\n"
          "measure.target=... a second stage trains every size that fit to the target and\n"
          "names the size first to it. Every probe is a trial in the database.",
          "tune.md",
          tune_batch_options(),
          {"workload"},
          {},
          run_tune_batch};
}

}  // namespace gpusweep::host
