// Shared command-line plumbing for the subcommands (Boost.Program_options).
#pragma once

#include "analysis/check.hpp"
#include "analysis/history.hpp"
#include "cli/commands.hpp"
#include "plugin_host/builds.hpp"
#include "report/check_view.hpp"
#include "report/output.hpp"
#include "run/sweep_run.hpp"

#include <gpusweep/db/store.hpp>

#include <boost/program_options.hpp>

#include <functional>
#include <ostream>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

namespace po = boost::program_options;

struct Parsed {
  po::variables_map vm;
  bool help = false;
};

// Parses args for command `name`; prints usage and sets help on --help.
// Throws UsageError (exit code 2) naming the command on bad arguments.
Parsed parse_command(const std::string& name, const std::string& synopsis,
                     const std::string& description, const po::options_description& options,
                     const po::positional_options_description& positional, const Args& args);

// Adds --db and --plugin-path.
void add_db_option(po::options_description& o);
void add_plugin_path_option(po::options_description& o);
// --allow-plugin-change, for the commands that continue a run (run --resume,
// run --shard, resume, merge).
void add_allow_plugin_change_option(po::options_description& o);
// --set key=value, repeatable (run, launch, check): strings_of(vm, "set").
void add_set_option(po::options_description& o);
// --gpus LIST (run, resume): the GPUs the workers get, one each (spec/gpus.hpp).
void add_gpus_option(po::options_description& o);
std::optional<std::string> gpus_option(const po::variables_map& vm);
std::vector<std::string> plugin_paths(const po::variables_map& vm);

// The values of a repeatable option (none when it was not given).
std::vector<std::string> strings_of(const po::variables_map& vm, const char* option);

// A repeatable KEY=VALUE option's values as one object, each value parsed
// as a sweep file's would be; UsageError naming `option` and `example` when
// one has no key or no '='.
Json key_values(const po::variables_map& vm, const char* option, const std::string& example);

bool stdout_is_terminal();
bool stderr_is_terminal();

// A fraction option given as a percentage ("3%") or a fraction ("0.03"),
// in (0, 1); UsageError naming --NAME otherwise.
double fraction_option(const po::variables_map& vm, const char* name);

// Writes text to the file at path (replacing it); Error "cannot write
// 'PATH'" when it cannot.
void write_text_file(const std::string& path, const std::string& text);

// Adds --format FORMAT with the formats a command offers (the first is the
// default), and reads it back, refusing one the command does not offer.
void add_format_option(po::options_description& o, const std::vector<OutputFormat>& offered);
OutputFormat format_of(const po::variables_map& vm, const std::vector<OutputFormat>& offered);

// The database of --db, opened read-only, and the run --sweep names (its
// latest run; the latest run of any sweep without --sweep). Throws
// UsageError with the fix when there is no database or no such sweep.
struct OpenedSweep {
  std::unique_ptr<db::Store> store;
  db::SweepRecord sweep;
};
OpenedSweep open_sweep(const po::variables_map& vm);
// A run not yet finished: its figures are of the trials done so far, which
// a note says before them (on stderr where stdout is a machine format).
void note_unfinished(const OpenedSweep& run, const po::variables_map& vm, OutputFormat format);

// `run` and `resume`: runs the sweep's unfinished trials with progress, then
// prints the results table; the exit code (130 when interrupted).
// to_stderr: its lines go to stderr (a command whose stdout is JSON).
// end, when given, prints what follows the trials instead (check's
// verdicts) and returns the exit code; complete is false when Ctrl-C
// stopped the run.
using RunEnd = std::function<int(SweepRun& run, bool complete, std::ostream& out)>;
int run_sweep(const SweepSpec& spec, const PluginInfo& info, RunRequest request,
              bool to_stderr = false, const RunEnd& end = {});

// A check as `check` and `history --confirm` run it: the sweep (checked by
// validate_check_sweep, the builds resolved against it), the check's
// record (tolerances and builds), and how to print its verdicts.
struct CheckJob {
  SweepSpec spec;
  BuildPair builds;
  Json check;
  double budget_s = 0;
  RunRequest request;  // the database, --resume, fork server, the sweep file
  CheckFormat format = CheckFormat::text;
  std::vector<std::string> files;  // --output
  bool inconclusive_fails = true;
  bool to_stderr = false;  // the run's lines (and the text table) to stderr
  std::function<void(const CheckRunReport&)> on_report;  // sees the verdicts
};
// Adds the build axis, runs the check with progress, prints its verdicts;
// the exit code (check_report's).
int run_check(CheckJob job);

// `history --confirm`: for each change point of the series, a check of the
// build before it against the build at it (their files, if they still hold
// those builds: the hash each run recorded), of the series' config with the
// later run's protocol, into the later run's database; then a line each:
// confirmed (the check calls the same change), not the build's, undecided,
// or why it cannot be re-measured. Returns how many were confirmed, or -1
// when Ctrl-C stopped a check.
struct ConfirmOptions {
  double tolerance = kDefaultCheckTolerance;
  double budget_s = kDefaultCheckBudgetS;
  bool fork_server = true;
  std::vector<std::string> plugin_paths;
};
int confirm_change_points(const HistoryResult& result, const ConfirmOptions& options,
                          std::ostream& out);

// The runner's callbacks that draw progress: each trial's start, events,
// end and the runner's notices (run, resume, tune).
class Progress;
class LiveBlocks;
// The runner's callbacks that keep `progress` and, when given, the live
// view's file of the running trials' blocks up to date.
RunnerCallbacks progress_callbacks(Progress& progress, LiveBlocks* live = nullptr);

}  // namespace gpusweep::host
