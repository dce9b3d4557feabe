// `gpusweep check`: the sweep's configs under two builds of its workload in
// one interleaved run, and a verdict per config that CI gates on
// (analysis/check.hpp).
#include "analysis/check.hpp"
#include "analysis/stored.hpp"
#include "cli/cli.hpp"
#include "plugin_host/registry.hpp"
#include "report/check_view.hpp"
#include "report/run_view.hpp"
#include "run/sweep_run.hpp"
#include "spec/hashing.hpp"
#include "spec/sweep.hpp"
#include "support/capture.hpp"
#include "support/error.hpp"
#include "support/format.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

namespace gpusweep::host {

namespace fs = std::filesystem;

namespace {

constexpr double kDefaultCheckBudgetS = 300;

po::options_description check_options_description() {
  po::options_description o;
  o.add_options()("sweep", po::value<std::string>()->required(), "sweep file (JSON)")(
      "base", po::value<std::string>()->required(),
      "the build to compare against: a plugin folder or .so, or a Python workload's module")(
      "head", po::value<std::string>()->required(), "the build under test, as --base")(
      "base-label", po::value<std::string>(),
      "a name for base (default: its git commit, +dirty, where it lies in a git work tree)")(
      "head-label", po::value<std::string>(), "a name for head (default as --base-label)")(
      "tolerance", po::value<std::string>()->default_value("3%"),
      "the throughput change a regression or improvement must surely exceed (3% or 0.03)")(
      "memory-tolerance", po::value<std::string>()->default_value("10%"),
      "peak memory growth beyond this is a regression")(
      "max-quality-loss", po::value<std::string>()->default_value("1%"),
      "a quality loss shown beyond this is a regression (compare's non-inferiority test)")(
      "budget-s", po::value<double>()->default_value(kDefaultCheckBudgetS, "300"),
      "seconds of measuring before an undecided config is called inconclusive")(
      "inconclusive", po::value<std::string>()->default_value("fail"),
      "pass|fail: whether an inconclusive check exits 0, or 3 (the default) to fail CI")(
      "format", po::value<std::string>()->default_value("text"), "text|md|json|junit")(
      "output", po::value<std::string>(),
      "write the verdicts in --format to FILE; the text table still goes to stdout")(
      "allow-same", po::bool_switch(), "let --base and --head be the same file (an A/A check)");
  add_db_option(o);
  o.add_options()("resume", po::bool_switch(),
                  "continue the latest run of this check: run only its unfinished trials")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override a setting: key=value (base), measure.key=value (protocol); repeatable")(
      "fresh-workers", po::bool_switch(),
      "start each trial's worker as a new process instead of forking it");
  add_plugin_path_option(o);
  return o;
}

// "3%" or "0.03" as a fraction in (0, 1).
double fraction_option(const po::variables_map& vm, const char* name) {
  std::string text = vm[name].as<std::string>();
  const bool percent = !text.empty() && text.back() == '%';
  if (percent) text.pop_back();
  double v = NAN;
  try {
    size_t used = 0;
    v = std::stod(text, &used);
    if (used != text.size()) v = NAN;
  } catch (const std::exception&) {
  }
  if (percent) v /= 100;
  if (!(v > 0 && v < 1)) {
    throw UsageError(std::string("--") + name + " " + vm[name].as<std::string>() +
                     ": give a percentage (3%) or a fraction (0.03), above 0 and below 100%");
  }
  return v;
}

// The workload a build runs: its plugin's name, and for a bridge (python)
// the selected module's own name, which its description starts with.
std::string workload_of(const RunBuild& b) {
  std::string name = b.info.manifest.name;
  if (!b.selection.empty()) {
    const std::string& d = b.info.manifest.description;
    name += "/" + d.substr(0, d.find(':'));
  }
  return name;
}

// A plugin folder's or file's plugin for the sweep's workload.
PluginFile plugin_file(const std::string& option, const std::string& arg,
                       const std::string& workload) {
  std::error_code ec;
  const fs::path path = fs::absolute(arg).lexically_normal();
  if (!fs::exists(path, ec)) throw UsageError(option + ": no such file or folder");
  const std::string want = "gpusweep_" + workload + ".so";
  if (fs::is_directory(path, ec)) {
    if (fs::exists(path / want, ec)) return {workload, (path / want).string()};
    std::string found;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      const std::string n = e.path().filename().string();
      if (n.rfind("gpusweep_", 0) == 0 && e.path().extension() == ".so") {
        found += (found.empty() ? "" : ", ") + n;
      }
    }
    throw UsageError(option + ": the folder holds no " + want + " (the sweep's workload is '" +
                     workload + "'; plugins there: " + (found.empty() ? "none" : found) + ")");
  }
  const std::string file = path.filename().string();
  if (file.rfind("gpusweep_", 0) != 0 || path.extension() != ".so") {
    throw UsageError(option + ": give a plugin folder, a plugin file gpusweep_NAME.so, or a " +
                     "Python workload's module (.py)");
  }
  return {file.substr(9, file.size() - 12), path.string()};
}

RunBuild resolve_build(const Registry& registry, const SweepSpec& spec, const std::string& role,
                       const std::string& arg) {
  const std::string option = "--" + role + " " + arg;
  RunBuild b;
  if (fs::path(arg).extension() == ".py") {
    const PluginInfo bridge = registry.describe(spec.workload);
    const ParamSpec* selects = nullptr;
    for (const auto& p : bridge.manifest.params) {
      if (p.selects) selects = &p;
    }
    if (selects == nullptr) {
      throw UsageError(option + ": a Python module, but the sweep's workload '" + spec.workload +
                       "' is a plugin: give the plugin's folder or .so, or a sweep of the " +
                       "python workload");
    }
    if (!fs::is_regular_file(arg)) throw UsageError(option + ": no such file");
    const std::string module = fs::absolute(arg).lexically_normal().string();
    SweepSpec selected = spec;
    selected.base[selects->name] = module;
    try {
      b.info = registry.describe_sweep(selected);
    } catch (const Error& e) {
      throw UsageError(option + " does not load: " + e.what());
    }
    b.selection[selects->name] = module;
    return b;
  }
  const PluginFile file = plugin_file(option, arg, spec.workload);
  if (auto problem = trust_problem(file.path)) throw UsageError(option + ": " + *problem);
  try {
    b.info = registry.describe_file(file);
  } catch (const PluginError& e) {
    throw UsageError(option + " does not load: " + e.reason());
  } catch (const Error& e) {
    throw UsageError(option + ": " + e.what());
  }
  return b;
}

// "3f2a9c1b7d00" or "3f2a9c1b7d00+dirty": the commit of the git work tree
// the build lies in; "" outside one (or without git).
std::string git_label(const std::string& path) {
  const std::string git = find_on_path("git");
  if (git.empty()) return "";
  std::error_code ec;
  const fs::path p = fs::absolute(path);
  const std::string dir = (fs::is_directory(p, ec) ? p : p.parent_path()).string();
  CaptureLimits limits;
  limits.timeout_s = 10;
  const Captured head = capture(git, {"-C", dir, "rev-parse", "--short=12", "HEAD"}, limits);
  if (head.exit_code() != 0) return "";
  std::string label = head.out.substr(0, head.out.find('\n'));
  const Captured st =
      capture(git, {"-C", dir, "status", "--porcelain", "--untracked-files=no"}, limits);
  if (st.exit_code() == 0 && !st.out.empty()) label += "+dirty";
  return label;
}

Json build_record(const RunBuild& b, const std::string& label) {
  Json j{{"label", label},
         {"path", b.info.file.path},
         {"hash", b.info.hash},
         {"version", b.info.manifest.version},
         {"abi", b.info.abi}};
  for (const auto& [key, value] : b.selection.items()) {
    j["path"] = value;
    j["plugin"] = b.info.file.path;
  }
  return j;
}

// The refusals that need both builds: they must be two builds of the
// sweep's workload, each with every setting the sweep names.
void check_pair_of_builds(const SweepSpec& spec, const RunBuild& base, const RunBuild& head,
                          const std::string& base_arg, const std::string& head_arg) {
  if (workload_of(base) != workload_of(head)) {
    throw UsageError("--base " + base_arg + " is workload '" + workload_of(base) +
                     "' and --head " + head_arg + " is '" + workload_of(head) +
                     "': a check compares two builds of one workload");
  }
  if (base.info.manifest.name != spec.workload) {
    throw UsageError("the builds are workload '" + base.info.manifest.name + "', the sweep (" +
                     spec.source + ") is of '" + spec.workload + "'");
  }
  for (const auto& [role, arg, b] : {std::tuple{"base", base_arg, &base},
                                     std::tuple{"head", head_arg, &head}}) {
    try {
      validate_sweep(spec, b->info.manifest);
    } catch (const UsageError& e) {
      throw UsageError(std::string("the ") + role + " build (" + arg + ") cannot run the sweep: " +
                       e.what());
    }
  }
}

// What the check's rounds came to, for the report's header.
std::string stopped_text(const std::vector<CheckPair>& pairs, double budget_s,
                         const std::vector<StoredTrial>& trials) {
  int64_t rounds = 0;
  for (const auto& t : trials) rounds = std::max(rounds, t.row.plan.repeat + 1);
  std::string out = std::to_string(rounds) + (rounds == 1 ? " round" : " rounds");
  bool open = false;
  for (const auto& p : pairs) open = open || p.verdict == CheckVerdict::inconclusive;
  return out + (open ? "; --budget-s " + fixed(budget_s, 0) + " s ended before every config was "
                       "decided"
                     : "; every config decided");
}

}  // namespace

int cmd_check(const Args& args) {
  po::options_description o = check_options_description();
  po::positional_options_description pos;
  pos.add("sweep", 1);
  auto p = parse_command(
      "check",
      "SWEEP.json --base PATH --head PATH [--tolerance 3%] [--budget-s 300]\n"
      "       [--format text|md|json|junit] [--output FILE] [--inconclusive pass|fail]\n"
      "       [--base-label L] [--head-label L] [--allow-same] [--db FILE] [--resume]",
      "Runs every config of the sweep under two builds of its workload, base and head,\n"
      "in one run: the build is one more grid axis, so each config's two builds take\n"
      "turns block by block with the others (measure.interleave), and each head/base\n"
      "ratio is paired within cycles and over repeats. PATH is a plugin folder or\n"
      "gpusweep_NAME.so, or a Python workload's module file (with a sweep of the python\n"
      "workload). After the sweep's measure.repeats rounds, rounds of the configs not\n"
      "yet decided follow until each is, or --budget-s ends (the sweep's own\n"
      "measure.precision and budget_s do not apply to a check).\n\n"
      "Per config, with r = head/base throughput and its interval at 98.5% (the level\n"
      "that keeps 95% coverage when rounds stop once decided):\n"
      "  regression     the interval lies wholly below 1 - tolerance\n"
      "  improvement    the interval lies wholly above 1 + tolerance\n"
      "  no regression  the interval rules out a slowdown beyond the tolerance\n"
      "  inconclusive   the interval straddles 1 - tolerance when the budget ended\n"
      "Quality worse beyond --max-quality-loss (non-inferiority, as compare's) or\n"
      "peak memory beyond --memory-tolerance makes any config a regression. The run\n"
      "is in the database like any other: compare, report and serve show it.\n\n"
      "Refused before anything runs: builds of different workloads, a setting the\n"
      "sweep names that a build lacks, a build that does not load (an ABI it does not\n"
      "support included), and the same file twice without --allow-same.\n\n"
      "Exit status: 0 no regression, 1 a regression, 2 usage error, 3 inconclusive\n"
      "(0 with --inconclusive pass), 130 interrupted (--resume continues it).\n"
      "docs/check.md has the figures behind the default tolerance and budget.",
      o, pos, args);
  if (p.help) return 0;
  const auto& vm = p.vm;
  const std::string file = vm["sweep"].as<std::string>();
  CheckOptions options;
  options.tolerance = fraction_option(vm, "tolerance");
  options.memory_tolerance = fraction_option(vm, "memory-tolerance");
  options.max_quality_loss = fraction_option(vm, "max-quality-loss");
  const double budget_s = vm["budget-s"].as<double>();
  if (!(budget_s > 0)) throw UsageError("--budget-s: give the seconds of measuring, above 0");
  const std::string inconclusive = vm["inconclusive"].as<std::string>();
  if (inconclusive != "pass" && inconclusive != "fail") {
    throw UsageError("--inconclusive " + inconclusive + ": give pass or fail");
  }
  const CheckFormat format = parse_check_format(vm["format"].as<std::string>());

  SweepSpec spec = load_sweep_file(file);
  apply_overrides(spec, strings_of(vm, "set"));
  if (!spec.check.is_null()) {
    throw UsageError(file + ": check: this is a check's stored sweep; give the sweep file it "
                     "was made from");
  }
  if (spec.grid.contains(kBuildKey) || spec.base.contains(kBuildKey)) {
    throw UsageError(file + ": '" + kBuildKey + "' is the check's own grid axis (base, head): " +
                     "rename the setting or run the sweep with gpusweep run");
  }
  if (spec.measure.target) {
    throw UsageError(file + ": measure.target: check compares throughput; run a time-to-target "
                     "sweep of each build with gpusweep run and compare them");
  }
  if (spec.measure.repeats < 3) {
    throw UsageError(file + ": measure.repeats " + std::to_string(spec.measure.repeats) +
                     ": a check's rounds stop once decided, which keeps its intervals' coverage "
                     "from 3 repeats on: give 3 or more (--set measure.repeats=3)");
  }
  const std::string base_arg = vm["base"].as<std::string>();
  const std::string head_arg = vm["head"].as<std::string>();
  std::error_code ec;
  if (!vm["allow-same"].as<bool>() && fs::exists(base_arg, ec) &&
      fs::equivalent(base_arg, head_arg, ec)) {
    throw UsageError("--base and --head are the same file (" + base_arg +
                     "): pass --allow-same for an A/A check of one build against itself");
  }

  Registry registry(plugin_paths(vm));
  const RunBuild base = resolve_build(registry, spec, kBaseBuild, base_arg);
  const RunBuild head = resolve_build(registry, spec, kHeadBuild, head_arg);
  if (!base.selection.empty()) {
    // A Python check's sweep runs base's module where it names one.
    for (const auto& [key, value] : base.selection.items()) spec.base[key] = value;
  }
  check_pair_of_builds(spec, base, head, base_arg, head_arg);
  auto label = [&](const char* option, const std::string& arg, const RunBuild& b) {
    if (vm.count(option) != 0U) return vm[option].as<std::string>();
    const std::string git = git_label(arg);
    return git.empty() ? b.info.hash.substr(0, 12) : git;
  };
  spec.grid[kBuildKey] = Json::array({kBaseBuild, kHeadBuild});
  if (!spec.baseline.empty()) spec.baseline[kBuildKey] = kBaseBuild;
  spec.measure.precision = 0;
  spec.measure.budget_s = budget_s;
  spec.check = Json{{"base", build_record(base, label("base-label", base_arg, base))},
                    {"head", build_record(head, label("head-label", head_arg, head))},
                    {"tolerance", options.tolerance},
                    {"memory_tolerance", options.memory_tolerance},
                    {"max_quality_loss", options.max_quality_loss},
                    {"budget_s", budget_s}};

  RunRequest opt;
  opt.db_path = vm["db"].as<std::string>();
  opt.resume = vm["resume"].as<bool>();
  opt.fork_server = !vm["fresh-workers"].as<bool>();
  opt.file_path = fs::absolute(file).string();
  opt.file_hash = hash_file(file);
  opt.builds = {{kBaseBuild, base}, {kHeadBuild, head}};
  const bool output_file = vm.count("output") != 0U;
  // A machine-readable format on stdout keeps the run's lines on stderr.
  const bool to_stderr = !output_file && format != CheckFormat::text;
  RunEnd end = [&](SweepRun& run, bool complete, std::ostream& out) {
    const auto trials = stored_trials(run.store(), run.record().id, db::TrialFields::brief);
    const auto configs = gather_configs(run.store(), run.record().id, trials);
    CheckReport report;
    report.sweep = spec.name;
    report.run_id = run.record().id;
    report.db_path = opt.db_path;
    report.check = spec.check;
    for (const auto& k : varying_keys(spec)) {
      if (k != kBuildKey) report.keys.push_back(k);
    }
    report.pairs = check_pairs(configs, options);
    report.options = options;
    report.interrupted = !complete;
    report.verdict = overall(report.pairs);
    report.inconclusive_fails = inconclusive == "fail";
    report.stopped = stopped_text(report.pairs, budget_s, trials);
    report.exit_code = report.verdict == CheckVerdict::regression ? 1
                       : report.verdict == CheckVerdict::inconclusive && report.inconclusive_fails
                           ? kExitTrialsFailed
                           : 0;
    if (!complete) report.exit_code = 130;
    out << "\n";
    if (output_file) {
      const std::string path = vm["output"].as<std::string>();
      std::ofstream f(path, std::ios::binary);
      f << check_view(report, format);
      if (!f.flush()) throw Error("--output " + path + ": cannot write the verdicts");
      out << check_view(report, CheckFormat::text);
    } else if (format == CheckFormat::text) {
      out << check_view(report, CheckFormat::text);
    } else {
      std::cout << check_view(report, format) << std::flush;
    }
    if (!complete) {
      out << "interrupted: finished trials are saved; continue with the same command and "
             "--resume\n";
    }
    return report.exit_code;
  };
  return run_sweep(spec, base.info, opt, to_stderr, end);
}

}  // namespace gpusweep::host
