// Shared command-line plumbing for the subcommands (Boost.Program_options).
#pragma once

#include "cli/commands.hpp"
#include "report/output.hpp"
#include "spec/sweep.hpp"
#include "support/error.hpp"

#include <gpusweep/db/store.hpp>

#include <boost/program_options.hpp>

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

}  // namespace gpusweep::host
