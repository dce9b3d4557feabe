// `gpusweep tune-batch`: the largest batch size that fits (under an optional
// memory cap) and the one with the best throughput, each probe a trial of its
// own worker, recorded in the database.
#include "protocol/worker_args.hpp"
#include "analysis/batch_search.hpp"
#include "model/units.hpp"
#include "cli/cli.hpp"
#include "support/error.hpp"
#include "support/format.hpp"
#include "run/probe_session.hpp"
#include "plugins/registry.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>

namespace gpusweep::host {

namespace {

struct Probe {
  int64_t batch = 0;
  std::string status;
  std::optional<db::Summary> summary;
  std::string error;
  bool verify = false;
  int64_t trial_id = 0;
};

std::string bar(double value, double max, size_t width) {
  const auto n = max > 0 ? static_cast<size_t>(std::lround(value / max * static_cast<double>(width))) : 0;
  return std::string(n, '#') + std::string(width - std::min(n, width), ' ');
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
  add_plugin_path_option(o);
  po::positional_options_description pos;
  pos.add("workload", 1);
  auto p = parse_command(
      "tune-batch",
      "WORKLOAD [--set key=value ...] [--mode power|binsearch] [--max-memory SIZE] "
      "[--margin 0.05] [--min B] [--max B] [--db FILE]",
      "Finds the largest batch size that fits and the one with the best throughput. Each\n"
      "probe is a short trial in its own worker: batch sizes double from --min until one\n"
      "runs out of memory (or reaches --max); --mode binsearch then bisects between the last\n"
      "fit and the first failure. The largest fit less --margin is re-verified with a full\n"
      "measurement. Every probe is a trial in the database (status oom for those that did\n"
      "not fit), in a sweep named tune-batch-WORKLOAD.",
      o, pos, args);
  if (p.help) return 0;
  const auto& vm = p.vm;
  SearchOptions search;
  search.mode = parse_search_mode(vm["mode"].as<std::string>());
  search.margin = vm["margin"].as<double>();
  if (!(search.margin >= 0 && search.margin <= 0.9)) {
    throw UsageError("--margin " + fixed(search.margin, 3) + ": use a fraction from 0 to 0.9");
  }
  search.min = vm["min"].as<int64_t>();
  if (search.min < 1) throw UsageError("--min " + std::to_string(search.min) + ": use 1 or more");
  double max_memory = 0;
  if (vm.count("max-memory") != 0U) max_memory = parse_size(vm["max-memory"].as<std::string>(), "--max-memory");

  // The final verification's protocol; probes use a shorter one.
  SweepSpec spec = command_sweep("tune-batch", vm["workload"].as<std::string>(),
                                 "gpusweep tune-batch probes", 5, 5, vm.count("set") != 0U ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{});
  if (spec.base.contains("batch_size")) {
    throw UsageError("--set batch_size: tune-batch chooses the batch size; use --min and --max");
  }
  Registry registry(plugin_paths(vm));
  const PluginInfo info = registry.describe(spec.workload);
  const ParamSpec* batch_param = info.manifest.find("batch_size");
  if (batch_param == nullptr || batch_param->type != "int") {
    throw UsageError("workload '" + spec.workload + "' has no integer batch_size setting to tune");
  }
  const auto param_max = static_cast<int64_t>(batch_param->max.value_or(1 << 30));
  search.max = vm.count("max") != 0U ? vm["max"].as<int64_t>() : param_max;
  if (*search.max < search.min) {
    throw UsageError("--max " + std::to_string(*search.max) + " is below --min " +
                     std::to_string(search.min));
  }
  if (*search.max > param_max) {
    throw UsageError("--max " + std::to_string(*search.max) + ": " + spec.workload +
                     " accepts batch_size up to " + std::to_string(param_max));
  }
  Json base_config = resolve_single_config(spec, info.manifest);

  MeasureSpec probe_measure = spec.measure;
  probe_measure.warmup_steps = std::min<int64_t>(spec.measure.warmup_steps, 2);
  probe_measure.steps_per_block = std::min<int64_t>(spec.measure.steps_per_block, 2);
  probe_measure.blocks = 5;
  WorkerArgs worker;
  worker.max_memory_bytes = std::floor(max_memory);

  const std::string db_path = vm["db"].as<std::string>();
  ProbeSession session(db_path, spec, info);
  std::cout << "tune-batch " << spec.workload << ": batch sizes doubling from " << search.min
            << (search.mode == SearchMode::binsearch ? ", then bisection" : "") << ", up to "
            << *search.max
            << (max_memory > 0 ? ", each probe capped at " + human_bytes(max_memory) : "")
            << "; probes are sweep '" << spec.name << "' (run " << session.sweep_id() << ") in "
            << db_path << "\n";

  BatchSearch finder(search);
  std::vector<Probe> probes;
  bool interrupted = false;
  auto run_probe = [&](int64_t batch, const MeasureSpec& measure, bool verify,
                       int64_t repeat) -> Probe& {
    Json config = base_config;
    config["batch_size"] = batch;
    ProbeResult r = session.run(config, measure, worker, repeat);
    Probe pr;
    pr.batch = batch;
    pr.status = r.outcome.status;
    pr.summary = r.outcome.summary;
    pr.error = r.outcome.error.value_or("");
    pr.verify = verify;
    pr.trial_id = r.trial_id;
    interrupted = r.interrupted;
    probes.push_back(pr);
    const Probe& q = probes.back();
    std::cout << "  " << (verify ? "verify" : "probe ") << " batch " << batch << ": " << q.status;
    if (q.summary) {
      std::cout << ", " << human_rate(q.summary->throughput_median, q.summary->unit);
      if (q.summary->peak_memory_bytes) std::cout << ", peak " << human_bytes(*q.summary->peak_memory_bytes);
    } else if (!q.error.empty()) {
      std::cout << " (" << truncate(q.error, 110) << ")";
    }
    std::cout << "\n" << std::flush;
    return probes.back();
  };

  while (auto batch = finder.next()) {
    const Probe& pr = run_probe(*batch, probe_measure, false, 0);
    if (interrupted) break;
    if (pr.status == "skipped") {
      session.close(true);
      throw UsageError("the settings cannot run here: " + pr.error);
    }
    finder.record(*batch, pr.status == "ok");
  }

  // The largest fit less the margin, verified with the full protocol; if
  // even that fails, back off by the margin again (at most three times).
  std::optional<int64_t> verified;
  if (!interrupted && finder.largest_fit()) {
    int64_t candidate = *finder.with_margin();
    for (int attempt = 0; attempt < 3 && !interrupted; ++attempt) {
      const Probe& v = run_probe(candidate, spec.measure, true, 1 + attempt);
      if (v.status == "ok") {
        verified = candidate;
        break;
      }
      const auto smaller = static_cast<int64_t>(std::floor(static_cast<double>(candidate) *
                                                           (1.0 - std::max(search.margin, 0.05))));
      if (smaller < search.min || smaller >= candidate) break;
      candidate = smaller;
    }
  }
  session.close(!interrupted);

  // The curve: the best measurement of each size that ran.
  std::map<int64_t, const Probe*> curve;
  for (const auto& pr : probes) {
    if (pr.status != "ok" || !pr.summary) continue;
    auto& slot = curve[pr.batch];
    if (slot == nullptr || pr.verify) slot = &pr;
  }
  double best_rate = 0;
  int64_t best_batch = 0;
  std::string unit;
  for (const auto& [batch, pr] : curve) {
    unit = pr->summary->unit;
    if (pr->summary->throughput_median > best_rate) {
      best_rate = pr->summary->throughput_median;
      best_batch = batch;
    }
  }
  std::cout << "\nthroughput curve (" << unit << "/s, probes that fit; * = verified):\n";
  Table t({"batch", "throughput", "", "step time", "peak mem", "trial"});
  t.right_align(0);
  t.right_align(1);
  for (const auto& [batch, pr] : curve) {
    const auto& s = *pr->summary;
    t.add_row({std::to_string(batch) + (pr->verify ? "*" : ""), human_count(s.throughput_median),
               bar(s.throughput_median, best_rate, 30), human_seconds(s.step_time_median_s),
               s.peak_memory_bytes ? human_bytes(*s.peak_memory_bytes) : "-",
               std::to_string(pr->trial_id)});
  }
  for (const auto& pr : probes) {
    if (pr.status != "ok") {
      t.add_row({std::to_string(pr.batch), pr.status, truncate(pr.error, 30), "", "",
                 std::to_string(pr.trial_id)});
    }
  }
  std::cout << t.render() << "\n";

  if (interrupted) {
    std::cout << "interrupted: the probes so far are in the database\n";
    return 130;
  }
  if (!finder.largest_fit()) {
    std::cout << "no batch size fits: even --min " << search.min << " failed ("
              << (probes.empty() ? "" : probes.front().status + ": " + probes.front().error)
              << ")\n";
    return 1;
  }
  std::cout << "largest that fits: " << *finder.largest_fit();
  if (finder.first_failure()) {
    std::cout << " (first failure: " << *finder.first_failure() << ")";
  } else if (finder.reached_max()) {
    std::cout << " (reached --max; larger sizes were not tried)";
  }
  std::cout << "\n";
  if (verified) {
    std::cout << "recommended: " << *verified << " = largest fit less the " << fixed(100 * search.margin, 1)
              << "% margin, re-verified with a full measurement (" << spec.measure.warmup_steps
              << " warmup steps, " << spec.measure.blocks << " blocks of "
              << spec.measure.steps_per_block << " steps)\n";
  } else {
    std::cout << "recommended: none: the re-verification of the largest fit less the margin "
                 "failed; see the probes above\n";
  }
  if (best_batch > 0) {
    std::cout << "best throughput: batch " << best_batch << " at " << human_rate(best_rate, unit);
    // Where throughput saturates: the smallest size within 5% of the best.
    for (const auto& [batch, pr] : curve) {
      if (pr->summary->throughput_median >= 0.95 * best_rate) {
        if (batch < best_batch) {
          std::cout << " (batch " << batch << " already reaches 95% of it)";
        }
        break;
      }
    }
    std::cout << "\n";
  }
  if (verified) std::cout << "use it with: --set batch_size=" << *verified << "\n";
  return verified ? 0 : 1;
}

}  // namespace gpusweep::host
