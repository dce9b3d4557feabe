// `gpusweep tune-batch`: the largest batch size that fits (under an optional
// memory cap) and the one with the best throughput, each probe a trial of its
// own worker, recorded in the database (run/batch_tuner.hpp runs the search).
#include "cli/cli.hpp"
#include "model/units.hpp"
#include "plugins/registry.hpp"
#include "report/batch_view.hpp"
#include "run/batch_tuner.hpp"

#include <iostream>

namespace gpusweep::host {

int cmd_tune_batch(const Args& args) {
  po::options_description o;
  o.add_options()("workload", po::value<std::string>()->required(), "workload (plugin) name")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "a setting for every probe: key=value; measure.key=value sets the final verification's "
      "protocol (repeatable)")(
      "mode", po::value<std::string>()->default_value("power"),
      "power: double until a size does not fit; binsearch: then bisect between the last fit "
      "and the first failure")(
      "max-memory", po::value<std::string>(),
      "cap on what each probe may allocate, such as 2GiB: on a CUDA device the caching "
      "allocator's (its per-process memory fraction), on the CPU the worker's address space "
      "beyond the loaded plugin; allocations past it fail as out-of-memory")(
      "margin", po::value<double>()->default_value(0.05, "0.05"),
      "fraction taken off the largest fit before it is re-verified (0 to 0.9)")(
      "min", po::value<int64_t>()->default_value(1), "first batch size probed")(
      "max", po::value<int64_t>(), "largest batch size probed (default: the setting's maximum)");
  add_db_option(o);
  const std::vector<OutputFormat> formats = {OutputFormat::table, OutputFormat::json};
  add_format_option(o, formats);
  add_plugin_path_option(o);
  po::positional_options_description pos;
  pos.add("workload", 1);
  auto p = parse_command(
      "tune-batch",
      "WORKLOAD [--set key=value ...] [--mode power|binsearch] [--max-memory SIZE] "
      "[--margin 0.05] [--min B] [--max B] [--db FILE] [--format table|json]",
      "Finds the largest batch size that fits and the one with the best throughput. Each\n"
      "probe is a short trial in its own worker: batch sizes double from --min until one\n"
      "runs out of memory (or reaches --max); --mode binsearch then bisects between the last\n"
      "fit and the first failure. The largest fit less --margin is re-verified with a full\n"
      "measurement. Every probe is a trial in the database (status oom for those that did\n"
      "not fit), in a sweep named tune-batch-WORKLOAD.",
      o, pos, args);
  if (p.help) return 0;
  const auto& vm = p.vm;
  const bool json = format_of(vm, formats) == OutputFormat::json;
  SearchOptions search;
  search.mode = parse_search_mode(vm["mode"].as<std::string>());
  search.margin = vm["margin"].as<double>();
  search.min = vm["min"].as<int64_t>();
  if (vm.count("max") != 0U) search.max = vm["max"].as<int64_t>();
  const double max_memory = vm.count("max-memory") != 0U
                                ? parse_size(vm["max-memory"].as<std::string>(), "--max-memory")
                                : 0;
  // The final verification's protocol; probes use a shorter one.
  const SweepSpec spec = command_sweep("tune-batch", vm["workload"].as<std::string>(),
                                       "gpusweep tune-batch probes", 5, 5, strings_of(vm, "set"));
  if (spec.measure.target) {
    throw UsageError(
        "tune-batch: --set measure.target: the batch search judges throughput and memory; "
        "the batch that reaches a target first is not built yet: sweep batch_size with "
        "measure.target in a sweep file, `gpusweep run` it, and read `compare --target`");
  }
  const PluginInfo info = Registry(plugin_paths(vm)).describe(spec.workload);
  const BatchTuneRequest request = batch_tune_request(spec, info.manifest, search, max_memory);
  const std::string db_path = vm["db"].as<std::string>();
  ProbeSession session(db_path, spec, info);
  // Progress goes to stderr when stdout carries the JSON document.
  std::ostream& progress = json ? std::cerr : std::cout;
  progress << tune_batch_header(spec.workload, request.search, max_memory, spec.name,
                                session.sweep_id(), db_path);
  const BatchTuneResult r = tune_batch(session, request, [&](const BatchProbe& probe) {
    progress << probe_line(probe) << "\n" << std::flush;
  });
  if (json) {
    std::cout << tune_batch_json(r, request.search).dump(2) << "\n";
  } else {
    std::cout << render_tune_batch(r, request.search, request.verify_measure);
  }
  if (r.interrupted) return 130;
  return r.recommended ? 0 : 1;
}

}  // namespace gpusweep::host
