// `gpusweep check`: the sweep under two builds of its workload in one
// interleaved run, and a verdict per config for CI (analysis/check.hpp).
#include "analysis/check.hpp"
#include "cli/cli.hpp"
#include "cli/requests.hpp"
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

std::vector<Option> check_options() {
  return with_run_options(
      {text("sweep", "SWEEP.json", "sweep file (JSON); with --show, its name"),
       text("base", "PATH",
            "the build to compare against: a plugin folder or .so, or a Python workload's module"),
       text("head", "PATH", "the build under test, as --base"),
       text("base-label", "LABEL",
            "a name for base (default: its git commit, +dirty, where it lies in a git work tree)"),
       text("head-label", "LABEL", "a name for head (default as --base-label)"),
       percent("tolerance",
               "the throughput change a regression or improvement must surely exceed (3% or 0.03)",
               kDefaultCheckTolerance),
       percent("memory-tolerance", "peak memory growth beyond this is a regression",
               kDefaultMemoryTolerance),
       percent("max-quality-loss", "the quality margin: a loss shown beyond it is a regression",
               kDefaultMaxQualityLoss),
       text("quality-guard", "GUARD",
            "not-worse: a regression only when quality is shown worse than the margin (its bound "
            "printed); non-inferiority: quality not shown within the margin is inconclusive",
            to_string(QualityGuard::not_worse)),
       number("budget-s", "S",
              "seconds of measuring before an undecided config is called inconclusive",
              kDefaultCheckBudgetS),
       text("inconclusive", "pass|fail",
            "whether an inconclusive check exits 0, or 3 (the default) to fail CI", "fail"),
       text("format", "FORMAT", "text, md, json or junit", "text"),
       texts("output", "FILE",
             "write the verdicts to FILE too: .md, .json, .xml (JUnit), .txt by the suffix, else "
             "in --format; the text table then goes to stdout"),
       flag("allow-same", "let --base and --head be the same file (an A/A check)"),
       flag("show", "print the latest stored check's verdicts; runs nothing"),
       integer("run", "ID", "with --show: the check run to show")},
      "continue the latest run of this check: run only its unfinished trials");
}

int run_check_command(const po::variables_map& vm) {
  CheckSpec check = check_spec_of(vm);
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

}  // namespace

CheckSpec check_spec_of(const po::variables_map& vm) {
  CheckSpec check;
  check.tolerance = fraction_option(vm, "tolerance");
  check.memory_tolerance = fraction_option(vm, "memory-tolerance");
  check.max_quality_loss = fraction_option(vm, "max-quality-loss");
  check.quality_guard = to_string(parse_quality_guard(vm["quality-guard"].as<std::string>()));
  return check;
}

CommandDef cmd_check() {
  return {"check",
          "base and head builds interleaved: a verdict per config for CI",
          "Runs every config of the sweep under two builds of its workload, interleaved block\n"
          "by block in one run, and gives each config a verdict on head/base throughput and\n"
          "its interval: regression, improvement, no regression or inconclusive against\n"
          "--tolerance, quality and peak memory guarded too. Exit status: 0 no regression,\n"
          "1 a regression, 2 usage error, 3 inconclusive (0 with --inconclusive pass), 130\n"
          "interrupted (--resume continues it). --show prints a stored check's verdicts.",
          "check.md",
          check_options(),
          {"sweep"},
          {"SWEEP.json --base PATH --head PATH [options]", "--show [SWEEP] [--run ID] [options]"},
          run_check_command};
}

}  // namespace gpusweep::host
