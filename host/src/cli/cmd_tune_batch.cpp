// `gpusweep tune-batch`: the largest batch size that fits (under an optional
// memory cap) and the one with the best throughput, each probe a trial of its
// own worker, recorded in the database (run/batch_tuner.hpp runs the search).
#include "cli/cli.hpp"
#include "model/units.hpp"
#include "plugins/registry.hpp"
#include "report/batch_view.hpp"
#include "run/batch_tuner.hpp"
#include "support/error.hpp"
#include "support/format.hpp"

#include <cmath>
#include <iostream>

namespace gpusweep::host {

namespace {

// The search's bounds from the options and the workload's batch_size range.
SearchOptions search_options(const po::variables_map& vm, const PluginInfo& info) {
  SearchOptions search;
  search.mode = parse_search_mode(vm["mode"].as<std::string>());
  search.margin = vm["margin"].as<double>();
  if (!(search.margin >= 0 && search.margin <= 0.9)) {
    throw UsageError("--margin " + fixed(search.margin, 3) + ": use a fraction from 0 to 0.9");
  }
  search.min = vm["min"].as<int64_t>();
  if (search.min < 1) throw UsageError("--min " + std::to_string(search.min) + ": use 1 or more");
  const ParamSpec* batch_param = info.manifest.find("batch_size");
  if (batch_param == nullptr || batch_param->type != ParamType::integer) {
    throw UsageError("workload '" + info.manifest.name +
                     "' has no integer batch_size setting to tune");
  }
  const auto param_max = static_cast<int64_t>(batch_param->max.value_or(1 << 30));
  search.max = vm.count("max") != 0U ? vm["max"].as<int64_t>() : param_max;
  if (*search.max < search.min) {
    throw UsageError("--max " + std::to_string(*search.max) + " is below --min " +
                     std::to_string(search.min));
  }
  if (*search.max > param_max) {
    throw UsageError("--max " + std::to_string(*search.max) + ": " + info.manifest.name +
                     " accepts batch_size up to " + std::to_string(param_max));
  }
  return search;
}

}  // namespace

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
      "cap on what each probe may allocate beyond the loaded plugin, such as 2GiB (an "
      "address-space limit on the worker: allocations past it fail as out-of-memory)")(
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
  double max_memory = 0;
  if (vm.count("max-memory") != 0U) {
    max_memory = parse_size(vm["max-memory"].as<std::string>(), "--max-memory");
  }
  // The final verification's protocol; probes use a shorter one.
  const SweepSpec spec = command_sweep("tune-batch", vm["workload"].as<std::string>(),
                                       "gpusweep tune-batch probes", 5, 5, strings_of(vm, "set"));
  if (spec.base.contains("batch_size")) {
    throw UsageError("--set batch_size: tune-batch chooses the batch size; use --min and --max");
  }
  const PluginInfo info = Registry(plugin_paths(vm)).describe(spec.workload);
  BatchTuneRequest request;
  request.search = search_options(vm, info);
  request.base_config = resolve_single_config(spec, info.manifest);
  request.verify_measure = spec.measure;
  request.probe_measure = spec.measure;
  request.probe_measure.warmup_steps = std::min<int64_t>(spec.measure.warmup_steps, 2);
  request.probe_measure.steps_per_block = std::min<int64_t>(spec.measure.steps_per_block, 2);
  request.probe_measure.blocks = 5;
  request.worker.max_memory_bytes = std::floor(max_memory);

  const std::string db_path = vm["db"].as<std::string>();
  ProbeSession session(db_path, spec, info);
  // Progress goes to stderr when stdout carries the JSON document.
  std::ostream& progress = json ? std::cerr : std::cout;
  progress << "tune-batch " << spec.workload << ": batch sizes doubling from " << request.search.min
           << (request.search.mode == SearchMode::binsearch ? ", then bisection" : "") << ", up to "
           << *request.search.max
           << (max_memory > 0 ? ", each probe capped at " + human_bytes(max_memory) : "")
           << "; probes are sweep '" << spec.name << "' (run " << session.sweep_id() << ") in "
           << db_path << "\n";
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
