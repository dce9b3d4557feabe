// `gpusweep diagnose`: one instrumented trial that splits the step time into
// phases (torchkit's timers, switched on in that worker only), names the
// bottleneck and writes a sweep of the settings worth trying about it.
#include "protocol/worker_args.hpp"
#include "protocol/events.hpp"
#include "cli/cli.hpp"
#include "analysis/diagnose.hpp"
#include "support/error.hpp"
#include "support/format.hpp"
#include "run/probe_session.hpp"
#include "plugins/registry.hpp"

#include <fstream>
#include <iostream>

namespace gpusweep::host {

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
  add_plugin_path_option(o);
  po::positional_options_description pos;
  pos.add("workload", 1);
  auto p = parse_command(
      "diagnose", "WORKLOAD [--set key=value ...] [--matmul-seconds S] [--sweep-out FILE] [--db FILE]",
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
  const double matmul_s = vm["matmul-seconds"].as<double>();
  if (matmul_s < 0 || matmul_s > 60) {
    throw UsageError("--matmul-seconds " + fixed(matmul_s, 1) + ": use 0 to 60");
  }
  const SweepSpec spec = command_sweep("diagnose", vm["workload"].as<std::string>(),
                                       "gpusweep diagnose", 10, 10, vm.count("set") != 0U ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{});
  Registry registry(plugin_paths(vm));
  const PluginInfo info = registry.describe(spec.workload);
  const Json config = resolve_single_config(spec, info.manifest);

  WorkerArgs worker;
  worker.diagnose = true;
  worker.probe_matmul_s = matmul_s;
  const std::string db_path = vm["db"].as<std::string>();
  ProbeSession session(db_path, spec, info);
  std::cout << "diagnose " << spec.workload << ": one instrumented trial ("
            << spec.measure.warmup_steps << " warmup steps, " << spec.measure.blocks
            << " blocks of " << spec.measure.steps_per_block << " steps), trial recorded as sweep '"
            << spec.name << "' (run " << session.sweep_id() << ") in " << db_path << "\n"
            << std::flush;
  ProbeResult r = session.run(config, spec.measure, worker);
  session.close(!r.interrupted);
  if (r.interrupted) return 130;
  if (r.outcome.status != "ok") {
    std::cout << "the trial ended " << r.outcome.status << ": " << r.outcome.error.value_or("")
              << "\n";
    return r.outcome.status == "skipped" ? 2 : 1;
  }

  Json snapshot, final_stats, matmul, runtime;
  for (const auto& e : r.events) {
    const std::string kind = event::kind(e);
    if (kind == event::stats_snapshot) snapshot = e.value("stats", Json::object());
    if (kind == event::stats) final_stats = e.value("stats", Json::object());
    if (kind == event::probe) matmul = e.value("matmul", Json());
    if (kind == event::runtime) runtime = e.value("runtime", Json::object());
  }
  if (!final_stats.contains("phase_forward_s") && !final_stats.contains("phase_input_wait_s")) {
    std::cout << "plugin " << spec.workload << " reported no phase timings: it does not use "
              << "torchkit (or was built before its phase timers); only the step time is known\n";
    return 1;
  }
  double steps = 0, seconds = 0;
  for (const auto& b : r.outcome.blocks) {
    steps += static_cast<double>(b.steps);
    seconds += b.seconds;
  }
  PhaseBreakdown b = breakdown_from_stats(snapshot, final_stats, steps, seconds);
  const std::string device = config.value("device", "auto");
  b.cuda = device.rfind("cuda", 0) == 0 ||
           (device == "auto" && runtime.is_object() && runtime.value("cuda_available", false));
  if (matmul.is_array()) {
    for (const auto& m : matmul) {
      const bool on_cuda = m.value("device", "").rfind("cuda", 0) == 0;
      if (on_cuda == b.cuda) b.peak_flops = m.value("gflops", 0.0) * 1e9;
    }
  }

  const Diagnosis d = classify(b);
  struct Row {
    const char* name;
    double s;
  };
  const Row rows[] = {{"input wait", b.input_wait_s},       {"host-to-device", b.host_to_device_s},
                      {"forward", b.forward_s},             {"backward", b.backward_s},
                      {"optimiser", b.optimizer_s},         {"host syncs", b.host_sync_s},
                      {"rest", b.rest_s}};
  std::cout << "\nstep time " << human_seconds(b.step_s) << " ("
            << human_rate(r.outcome.summary->throughput_median, r.outcome.summary->unit)
            << "), on " << (b.cuda ? "CUDA" : "the CPU") << ":\n";
  Table t({"phase", "per step", "share", ""});
  t.right_align(1);
  t.right_align(2);
  for (const auto& row : rows) {
    const double share = b.step_s > 0 ? row.s / b.step_s : 0;
    t.add_row({row.name, human_seconds(row.s), fixed(100 * share, 1) + "%",
               std::string(static_cast<size_t>(std::lround(share * 40)), '#')});
  }
  std::cout << t.render();
  std::cout << "host syncs per step: " << fixed(b.host_syncs_per_step, 2) << "\n";
  if (b.flops_per_step) {
    std::cout << "FLOPs per step: " << human_count(*b.flops_per_step) << ", achieved "
              << fixed(*b.achieved_flops() / 1e9, 2) << " GFLOP/s";
    if (b.peak_flops) {
      std::cout << " of a measured matmul peak of " << fixed(*b.peak_flops / 1e9, 1) << " GFLOP/s ("
                << fixed(100 * *b.peak_fraction(), 1) << "%)";
    }
    std::cout << "\n";
  } else {
    std::cout << "FLOPs per step: not reported by the plugin (stats flops_per_step)\n";
  }
  std::cout << "\nbottleneck: " << bottleneck_name(d.bottleneck) << "\n  " << d.why << "\n";
  for (const auto& n : d.notes) std::cout << "  " << n << "\n";

  const Json grid = suggest_grid(d, info.manifest, config);
  if (grid.empty()) {
    std::cout << "\nno common setting of " << spec.workload << " addresses this here\n";
    return 0;
  }
  std::string keys;
  Json baseline = Json::object();
  for (const auto& [key, values] : grid.items()) {
    keys += (keys.empty() ? "" : ", ") + key;
    baseline[key] = values.front();
  }
  Json base = spec.base;
  for (const auto& [key, values] : grid.items()) base.erase(key);
  const char* suffix[] = {"input", "sync", "overhead", "compute", "memory"};
  const std::string name = spec.workload + "_" + suffix[static_cast<int>(d.bottleneck)];
  Json sweep = {{"name", name},
                {"workload", spec.workload},
                {"description", "suggested by gpusweep diagnose: " +
                                    std::string(bottleneck_name(d.bottleneck)) + ", " + d.why},
                {"base", base},
                {"grid", grid},
                {"measure", {{"warmup_steps", 10}, {"steps_per_block", 20}, {"blocks", 5}, {"repeats", 1}}},
                {"baseline", baseline}};
  // Ready to run means valid: checked as `run` will check it.
  validate_sweep(parse_sweep(sweep.dump(), "suggested sweep"), info.manifest);
  std::cout << "\nworth sweeping: " << keys << "\n" << sweep.dump(2) << "\n";
  if (vm.count("sweep-out") != 0U) {
    const std::string out = vm["sweep-out"].as<std::string>();
    std::ofstream f(out);
    if (!(f << sweep.dump(2) << "\n")) throw Error("cannot write " + out);
    std::cout << "written to " << out << "; run it with: gpusweep run " << out << "\n";
  }
  return 0;
}

}  // namespace gpusweep::host
