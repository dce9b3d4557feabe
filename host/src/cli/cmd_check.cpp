// `gpusweep check`: the sweep under two builds of its workload in one
// interleaved run, and a verdict per config for CI (analysis/check.hpp).
#include "analysis/check.hpp"
#include "cli/cli.hpp"
#include "cli/run_commands.hpp"
#include "plugin_host/builds.hpp"
#include "report/check_view.hpp"
#include "run/sweep_run.hpp"
#include "spec/hashing.hpp"
#include "spec/sweep.hpp"
#include "support/error.hpp"

#include <filesystem>
#include <iostream>
#include <tuple>

namespace gpusweep::host {

namespace fs = std::filesystem;

namespace {

po::options_description check_options_description() {
  po::options_description o;
  o.add_options()("sweep", po::value<std::string>(), "sweep file (JSON); with --show, its name")(
      "base", po::value<std::string>(),
      "the build to compare against: a plugin folder or .so, or a Python workload's module")(
      "head", po::value<std::string>(), "the build under test, as --base")(
      "base-label", po::value<std::string>(),
      "a name for base (default: its git commit, +dirty, where it lies in a git work tree)")(
      "head-label", po::value<std::string>(), "a name for head (default as --base-label)")(
      "tolerance", po::value<std::string>()->default_value("3%"),
      "the throughput change a regression or improvement must surely exceed (3% or 0.03)")(
      "memory-tolerance", po::value<std::string>()->default_value("10%"),
      "peak memory growth beyond this is a regression")(
      "max-quality-loss", po::value<std::string>()->default_value("1%"),
      "the quality margin: a loss shown beyond it is a regression")(
      "quality-guard", po::value<std::string>()->default_value("not-worse"),
      "not-worse: a regression only when quality is shown worse than the margin (its bound "
      "printed); non-inferiority: quality not shown within the margin is inconclusive")(
      "budget-s", po::value<double>()->default_value(kDefaultCheckBudgetS, "300"),
      "seconds of measuring before an undecided config is called inconclusive")(
      "inconclusive", po::value<std::string>()->default_value("fail"),
      "pass|fail: whether an inconclusive check exits 0, or 3 (the default) to fail CI")(
      "format", po::value<std::string>()->default_value("text"), "text|md|json|junit")(
      "output", po::value<std::vector<std::string>>()->composing(),
      "write the verdicts to FILE too, repeatable: .md, .json, .xml (JUnit), .txt by the "
      "suffix, else in --format; the text table then goes to stdout")(
      "allow-same", po::bool_switch(), "let --base and --head be the same file (an A/A check)");
  add_db_option(o);
  o.add_options()("resume", po::bool_switch(),
                  "continue the latest run of this check: run only its unfinished trials")(
      "fresh-workers", po::bool_switch(),
      "start each trial's worker as a new process instead of forking it")(
      "show", po::bool_switch(), "print the latest stored check's verdicts; runs nothing")(
      "run", po::value<int64_t>(), "with --show: the check run to show");
  add_set_option(o);
  add_plugin_path_option(o);
  return o;
}

}  // namespace

int cmd_check(const Args& args) {
  po::options_description o = check_options_description();
  po::positional_options_description pos;
  pos.add("sweep", 1);
  auto p = parse_command(
      "check",
      "SWEEP.json --base PATH --head PATH [--tolerance 3%] [--budget-s 300]\n"
      "       [--quality-guard not-worse|non-inferiority]\n"
      "       [--format text|md|json|junit] [--output FILE] [--inconclusive pass|fail]\n"
      "       [--base-label L] [--head-label L] [--allow-same] [--db FILE] [--resume]\n"
      "       gpusweep check --show [SWEEP] [--run ID] [--db FILE] [--format F]",
      "Runs every config of the sweep under two builds of its workload (PATH: a plugin\n"
      "folder or .so, or a Python workload's module), interleaved block by block in\n"
      "one run, and gives each config a verdict on r = head/base throughput and its\n"
      "interval at 98.5%:\n"
      "  regression     the interval lies wholly below 1 - tolerance\n"
      "  improvement    the interval lies wholly above 1 + tolerance\n"
      "  no regression  the interval rules out a slowdown beyond the tolerance\n"
      "  inconclusive   the interval straddles 1 - tolerance when its rounds stopped\n"
      "Rounds follow until each config is decided or --budget-s ends; quality or peak\n"
      "memory beyond its tolerance makes a config a regression. `check --show` prints\n"
      "a stored check's verdicts again from --db alone.\n\n"
      "Exit status: 0 no regression, 1 a regression, 2 usage error, 3 inconclusive\n"
      "(0 with --inconclusive pass), 130 interrupted (--resume continues it). Each\n"
      "verdict's error, the defaults' figures and what is refused: docs/check.md.",
      o, pos, args);
  if (p.help) return 0;
  const auto& vm = p.vm;
  CheckSpec check;
  check.tolerance = fraction_option(vm, "tolerance");
  check.memory_tolerance = fraction_option(vm, "memory-tolerance");
  check.max_quality_loss = fraction_option(vm, "max-quality-loss");
  check.quality_guard = to_string(parse_quality_guard(vm["quality-guard"].as<std::string>()));
  const double budget_s = vm["budget-s"].as<double>();
  if (!(budget_s > 0)) throw UsageError("--budget-s: give the seconds of measuring, above 0");
  const std::string inconclusive = vm["inconclusive"].as<std::string>();
  if (inconclusive != "pass" && inconclusive != "fail") {
    throw UsageError("--inconclusive " + inconclusive + ": give pass or fail");
  }
  const CheckFormat format = parse_check_format(vm["format"].as<std::string>());
  if (vm["show"].as<bool>()) return show_check(vm, format, inconclusive == "fail");
  for (const char* needed : {"sweep", "base", "head"}) {
    if (vm.count(needed) == 0U) {
      throw UsageError(std::string("the option '--") + needed + "' is required but missing");
    }
  }
  const std::string file = vm["sweep"].as<std::string>();

  SweepSpec spec = load_sweep_file(file);
  apply_overrides(spec, strings_of(vm, "set"));
  validate_check_sweep(spec);
  const std::string base_arg = vm["base"].as<std::string>();
  const std::string head_arg = vm["head"].as<std::string>();
  CheckRun run;
  CheckJob& job = run.job;
  job.builds = resolve_build_pair(Registry(plugin_paths(vm)), spec, base_arg, head_arg,
                                  vm["allow-same"].as<bool>());
  for (const auto& [role, arg, b] : {std::tuple{kBaseBuild, &base_arg, &job.builds.base},
                                     std::tuple{kHeadBuild, &head_arg, &job.builds.head}}) {
    const std::string option = std::string(role) + "-label";
    check.build(role) = build_record(
        *b, vm.count(option) != 0U ? vm[option].as<std::string>() : default_build_label(*arg, *b));
  }
  job.spec = std::move(spec);
  job.check = std::move(check);
  job.budget_s = budget_s;
  job.request.db_path = vm["db"].as<std::string>();
  job.request.resume = vm["resume"].as<bool>();
  job.request.fork_server = !vm["fresh-workers"].as<bool>();
  job.request.file_path = fs::absolute(file).string();
  job.request.file_hash = hash_file(file);
  run.format = format;
  run.files = strings_of(vm, "output");
  run.inconclusive_fails = inconclusive == "fail";
  // A machine-readable format on stdout keeps the run's lines on stderr.
  run.to_stderr = run.files.empty() && format != CheckFormat::text;
  return run_check(std::move(run));
}

}  // namespace gpusweep::host
