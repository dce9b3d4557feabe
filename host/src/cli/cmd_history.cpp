// `gpusweep history`: every finished run of a workload as a point of its
// series (machine and config), with change points and the environment's
// changes marked.
#include "analysis/history.hpp"
#include "cli/cli.hpp"
#include "cli/requests.hpp"
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

const std::vector<OutputFormat> kHistoryFormats = {OutputFormat::table, OutputFormat::json,
                                                   OutputFormat::md, OutputFormat::csv};

std::vector<Option> history_options() {
  const ChangePointOptions defaults;
  return {
      text("workload", "WORKLOAD", "the workload (default: every one)"),
      texts("db", "FILE", "results database (default gpusweep.db): several make one history"),
      texts("config", "KEY=VALUE", "only configs with this setting"),
      text("machine", "TEXT", "only machines whose key (host|CPU|GPUs) contains TEXT"),
      text("since", "WHEN",
           "only runs from this UTC date or time on (2026-11-28, '2026-11-28 20:10'): leaves "
           "out a stretch before it, e.g. runs on a busy machine that hide a later step"),
      text("html", "FILE",
           "write the series as a self-contained HTML page (a chart each) to FILE instead"),
      number("max-p", "P", "a change point's largest p-value (Otava's default)", defaults.max_p),
      integer("min-segment", "N",
              "fewest runs a level may last: fewer lets a run or two of noise be a change, "
              "more finds a step later",
              static_cast<int64_t>(defaults.min_segment)),
      flag("confirm",
           "re-measure the builds either side of each change point in one check (their "
           "files must still hold them), written into the later run's database"),
      percent("tolerance", "with --confirm: as check's", kDefaultCheckTolerance),
      number("budget-s", "S", "with --confirm: as check's, for each change point",
             kDefaultCheckBudgetS),
      plugin_path_option(),
      format_option(kHistoryFormats)};
}

int run_history(const po::variables_map& vm) {
  if (vm.count("html") != 0U && !vm["format"].defaulted()) {
    throw UsageError("--html writes a page and --format prints a listing: give one of them");
  }
  const std::vector<std::string> dbs = vm.count("db") != 0U
                                           ? vm["db"].as<std::vector<std::string>>()
                                           : std::vector<std::string>{"gpusweep.db"};
  const ChangePointOptions options = change_point_options_of(vm);
  HistoryFilter filter;
  if (vm.count("workload") != 0U) filter.workload = vm["workload"].as<std::string>();
  if (vm.count("machine") != 0U) filter.machine = vm["machine"].as<std::string>();
  if (vm.count("since") != 0U) filter.since = history_since(vm["since"].as<std::string>());
  filter.config = key_values(vm, "config", "batch_size=64");
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
  if (vm.count("html") == 0U) {
    std::cout << history_listing(result, format_of(vm, kHistoryFormats));
    if (!vm["confirm"].as<bool>()) return 0;
    ConfirmOptions confirm;
    confirm.tolerance = fraction_option(vm, "tolerance");
    confirm.budget_s = vm["budget-s"].as<double>();
    confirm.plugin_paths = plugin_paths(vm);
    return confirm_change_points(result, confirm, std::cout) < 0 ? kExitInterrupted : kExitOk;
  }
  std::string sources;
  for (const auto& path : dbs) sources += (sources.empty() ? "" : ", ") + path;
  const std::string html =
      history_html(result, filter.workload.empty() ? "every workload" : filter.workload, sources);
  const std::string out = vm["html"].as<std::string>();
  write_text_file(out, html);
  std::cout << "wrote " << out << " (" << html.size() / 1024 << " KiB): " << result.series.size()
            << " series\n";
  return 0;
}

}  // namespace

// --max-p and --min-segment, checked before anything is read.
ChangePointOptions change_point_options_of(const po::variables_map& vm) {
  ChangePointOptions options;
  options.max_p = vm["max-p"].as<double>();
  if (!(options.max_p > 0 && options.max_p < 1)) {
    throw UsageError("--max-p: give a p-value between 0 and 1, e.g. 0.001");
  }
  const int64_t min_segment = vm["min-segment"].as<int64_t>();
  if (min_segment < 1 || static_cast<size_t>(min_segment) * 2 > options.window) {
    throw UsageError("--min-segment " + std::to_string(min_segment) + ": give 1 to " +
                     std::to_string(options.window / 2) + " runs");
  }
  options.min_segment = static_cast<size_t>(min_segment);
  return options;
}

CommandDef cmd_history() {
  return {"history",
          "a workload's runs as series, with change points marked",
          "Every finished run of the workload in the databases is a point of a series, one\n"
          "series per machine and config, oldest first: the config's throughput with the\n"
          "interval of its run's repeats, the plugin build and the software it ran on. Change\n"
          "points are found by Apache Otava's method (E-divisive means with a t-test); a change\n"
          "of build or software is marked where it happens; --confirm re-measures the builds\n"
          "either side of each change point in one interleaved check.",
          "history.md",
          history_options(),
          {"workload"},
          {},
          run_history};
}

}  // namespace gpusweep::host
