// `gpusweep diagnose`: one instrumented trial that splits the step time into
// phases (torchkit's timers, switched on in that worker only), names the
// bottleneck and writes a sweep of the settings worth trying about it.
#include "analysis/diagnose.hpp"
#include "cli/cli.hpp"
#include "plugins/registry.hpp"
#include "report/diagnose_view.hpp"
#include "run/probe_session.hpp"
#include "support/error.hpp"
#include "support/format.hpp"

#include <fstream>
#include <iostream>

namespace gpusweep::host {

namespace {

std::string protocol_text(const SweepSpec& spec) {
  return std::to_string(spec.measure.warmup_steps) + " warmup steps, " +
         std::to_string(spec.measure.blocks) + " blocks of " +
         std::to_string(spec.measure.steps_per_block) + " steps";
}

void write_sweep_file(const std::string& path, const Json& sweep, std::ostream& progress) {
  std::ofstream f(path);
  if (!(f << sweep.dump(2) << "\n")) throw Error("cannot write " + path);
  progress << "written to " << path << "; run it with: gpusweep run " << path << "\n";
}

}  // namespace

int cmd_diagnose(const Args& args) {
  po::options_description o;
  o.add_options()("workload", po::value<std::string>()->required(), "workload (plugin) name")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "a setting of the diagnosed trial: key=value, or measure.key=value for its protocol "
      "(repeatable)")(
      "matmul-seconds", po::value<double>()->default_value(1.0, "1"),
      "length of the matmul peak measurement the FLOP/s are compared with (0: skip)")(
      "sweep-out", po::value<std::string>(), "also write the suggested sweep file here");
  add_db_option(o);
  const std::vector<OutputFormat> formats = {OutputFormat::table, OutputFormat::json};
  add_format_option(o, formats);
  add_plugin_path_option(o);
  po::positional_options_description pos;
  pos.add("workload", 1);
  auto p = parse_command(
      "diagnose",
      "WORKLOAD [--set key=value ...] [--matmul-seconds S] [--sweep-out FILE] [--db FILE] "
      "[--format table|json]",
      "Runs one instrumented trial and splits its step time into input wait, host-to-device\n"
      "copies, forward, backward, optimiser, host syncs (reads of device values) and the\n"
      "rest; names the bottleneck (input-bound, sync-bound, launch/overhead-bound,\n"
      "compute-bound, memory-bound) and prints a ready-to-run sweep of the settings worth\n"
      "trying. With FLOPs per step from the plugin, compares the achieved FLOP/s with the\n"
      "machine's measured matmul peak. The phases are timed with a device sync at each edge,\n"
      "so the diagnosed step is slower than a swept one on a GPU. The trial is recorded in\n"
      "the database as sweep diagnose-WORKLOAD.",
      o, pos, args);
  if (p.help) return 0;
  const auto& vm = p.vm;
  const bool json = format_of(vm, formats) == OutputFormat::json;
  const double matmul_s = vm["matmul-seconds"].as<double>();
  if (matmul_s < 0 || matmul_s > 60) {
    throw UsageError("--matmul-seconds " + fixed(matmul_s, 1) + ": use 0 to 60");
  }
  SweepSpec spec = command_sweep("diagnose", vm["workload"].as<std::string>(), "gpusweep diagnose",
                                 10, 10, strings_of(vm, "set"));
  const PluginInfo info = Registry(plugin_paths(vm)).describe_sweep(spec);
  const Json config = resolve_single_config(spec, info.manifest);

  WorkerArgs worker;
  worker.diagnose = true;
  worker.probe_matmul_s = matmul_s;
  const std::string db_path = vm["db"].as<std::string>();
  ProbeSession session(db_path, spec, info);
  // Progress goes to stderr when stdout carries the JSON document.
  std::ostream& progress = json ? std::cerr : std::cout;
  progress << "diagnose " << spec.workload << ": one instrumented trial (" << protocol_text(spec)
           << "), trial recorded as sweep '" << spec.name << "' (run " << session.sweep_id()
           << ") in " << db_path << "\n"
           << std::flush;
  const ProbeResult r = session.run(config, spec.measure, worker);
  session.close(!r.interrupted);
  if (r.interrupted) return 130;
  if (r.outcome.status != db::TrialStatus::ok) {
    progress << "the trial ended " << db::status_name(r.outcome.status) << ": "
             << r.outcome.error.value_or("") << "\n";
    return r.outcome.status == db::TrialStatus::skipped ? 2 : 1;
  }
  std::string why;
  const auto report = diagnose_trial(spec, info.manifest, config, r.outcome, r.readings(), &why);
  if (!report) {
    progress << why << "\n";
    return 1;
  }
  if (json) {
    std::cout << diagnosis_json(*report).dump(2) << "\n";
  } else {
    std::cout << render_diagnosis(*report, spec.workload);
  }
  if (vm.count("sweep-out") != 0U && !report->suggested_sweep.is_null()) {
    write_sweep_file(vm["sweep-out"].as<std::string>(), report->suggested_sweep, progress);
  }
  return 0;
}

}  // namespace gpusweep::host
