// `gpusweep history`: every finished run of a workload as a point of its
// series (machine and config), with change points and the environment's
// changes marked.
#include "analysis/history.hpp"
#include "cli/cli.hpp"
#include "cli/run_commands.hpp"
#include "report/history_page.hpp"
#include "report/history_view.hpp"
#include "support/error.hpp"
#include "support/exit_code.hpp"

#include <gpusweep/db/store.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>

namespace gpusweep::host {

namespace {

// --max-p and --min-segment, checked before anything is read.
ChangePointOptions change_point_options(const po::variables_map& vm) {
  ChangePointOptions options;
  options.max_p = vm["max-p"].as<double>();
  if (!(options.max_p > 0 && options.max_p < 1)) {
    throw UsageError("--max-p: give a p-value between 0 and 1, e.g. 0.001");
  }
  const int min_segment = vm["min-segment"].as<int>();
  if (min_segment < 1 || static_cast<size_t>(min_segment) * 2 > options.window) {
    throw UsageError("--min-segment " + std::to_string(min_segment) + ": give 1 to " +
                     std::to_string(options.window / 2) + " runs");
  }
  options.min_segment = static_cast<size_t>(min_segment);
  return options;
}

po::options_description history_options(const std::vector<OutputFormat>& formats) {
  po::options_description o;
  o.add_options()("workload", po::value<std::string>(), "the workload (default: every one)")(
      "db", po::value<std::vector<std::string>>()->composing(),
      "results database, repeatable (default gpusweep.db): their runs make one history")(
      "config", po::value<std::vector<std::string>>()->composing(),
      "KEY=VALUE: only configs with this setting (repeatable)")(
      "machine", po::value<std::string>(), "only machines whose key (host|CPU|GPUs) contains TEXT")(
      "since", po::value<std::string>(),
      "only runs from this UTC date or time on (2026-11-28, '2026-11-28 20:10'): leaves out "
      "a stretch before it, e.g. runs on a busy machine that hide a later step")(
      "html", po::value<std::string>(),
      "write the series as a self-contained HTML page (a chart each) to FILE instead")(
      "max-p", po::value<double>()->default_value(0.001, "0.001"),
      "a change point's largest p-value (Otava's default)")(
      "min-segment", po::value<int>()->default_value(3),
      "fewest runs a level may last: fewer lets a run or two of noise be a change, more "
      "finds a step later");
  o.add_options()("confirm", po::bool_switch(),
                  "re-measure the builds either side of each change point in one check (their "
                  "files must still hold them), written into the later run's database")(
      "tolerance", po::value<std::string>()->default_value("3%"), "with --confirm: as check's")(
      "budget-s", po::value<double>()->default_value(kDefaultCheckBudgetS, "300"),
      "with --confirm: as check's, for each change point");
  add_plugin_path_option(o);
  add_format_option(o, formats);
  return o;
}

}  // namespace

int cmd_history(const Args& args) {
  const std::vector<OutputFormat> formats = {OutputFormat::table, OutputFormat::json,
                                             OutputFormat::md, OutputFormat::csv};
  po::options_description o = history_options(formats);
  po::positional_options_description pos;
  pos.add("workload", 1);
  auto p = parse_command(
      "history",
      "[WORKLOAD] [--db FILE ...] [--config K=V ...] [--machine TEXT] [--since WHEN]\n"
      "       [--max-p P] [--min-segment N] [--format F | --html FILE]\n"
      "       [--confirm [--budget-s S]]",
      "Every finished run of the workload is a point of a series, one series per\n"
      "machine and config, oldest first: when, run, the plugin build (version and\n"
      "hash), the config's throughput (the median of its pooled blocks, as compare\n"
      "shows it) with a 95% interval over the run's repeats (the t interval of the\n"
      "geometric mean of each repeat's median: the run's own spread, narrower than\n"
      "the spread between runs), and the software it ran on. Change points are\n"
      "found on log throughput by Apache Otava's method (E-divisive means with a\n"
      "t-test, p < 0.001, window 50, at least 3 runs a segment; --max-p and\n"
      "--min-segment change them): a series of fewer than 6 runs has none yet, and\n"
      "on a machine whose runs vary by 3.5% a 5% step takes about 5 runs to be found.\n"
      "A change of build, torch, CUDA, the driver's CUDA or gpusweep is marked on the\n"
      "run where it happens, to tell a code change from an environment change;\n"
      "--confirm re-measures the two builds either side of each change point in one\n"
      "interleaved check (gpusweep check) before calling the change the build's.\n"
      "--html FILE writes one self-contained page (inline SVG, no scripts) with a\n"
      "chart a series: each run with its interval as whiskers,\n"
      "the change points and the changes marked, and the listing under it. See\n"
      "docs/history.md.",
      o, pos, args);
  if (p.help) return 0;
  if (p.vm.count("html") != 0U && !p.vm["format"].defaulted()) {
    throw UsageError("--html writes a page and --format prints a listing: give one of them");
  }
  const std::vector<std::string> dbs = p.vm.count("db") != 0U
                                           ? p.vm["db"].as<std::vector<std::string>>()
                                           : std::vector<std::string>{"gpusweep.db"};
  const ChangePointOptions options = change_point_options(p.vm);
  HistoryFilter filter;
  if (p.vm.count("workload") != 0U) filter.workload = p.vm["workload"].as<std::string>();
  if (p.vm.count("machine") != 0U) filter.machine = p.vm["machine"].as<std::string>();
  if (p.vm.count("since") != 0U) filter.since = history_since(p.vm["since"].as<std::string>());
  filter.config = key_values(p.vm, "config", "batch_size=64");
  std::vector<HistoryPoint> points;
  for (const auto& path : dbs) {
    if (!std::filesystem::exists(path)) {
      throw UsageError("no database at '" + path + "'; pass --db or run a sweep first");
    }
    db::Store store(path, db::Connection::Mode::read_only);
    auto read = read_history(store, path, filter.workload);
    points.insert(points.end(), std::make_move_iterator(read.begin()),
                  std::make_move_iterator(read.end()));
  }
  const HistoryResult result = history_series(std::move(points), filter, options);
  if (p.vm.count("html") == 0U) {
    std::cout << history_listing(result, format_of(p.vm, formats));
    if (!p.vm["confirm"].as<bool>()) return 0;
    ConfirmOptions confirm;
    confirm.tolerance = fraction_option(p.vm, "tolerance");
    confirm.budget_s = p.vm["budget-s"].as<double>();
    confirm.plugin_paths = plugin_paths(p.vm);
    return confirm_change_points(result, confirm, std::cout) < 0 ? kExitInterrupted : kExitOk;
  }
  std::string sources;
  for (const auto& path : dbs) sources += (sources.empty() ? "" : ", ") + path;
  const std::string html =
      history_html(result, filter.workload.empty() ? "every workload" : filter.workload, sources);
  const std::string out = p.vm["html"].as<std::string>();
  write_text_file(out, html);
  std::cout << "wrote " << out << " (" << html.size() / 1024 << " KiB): " << result.series.size()
            << " series\n";
  return 0;
}

}  // namespace gpusweep::host
