// Shared command-line plumbing for the subcommands (Boost.Program_options).
#pragma once

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "report/output.hpp"
#include "spec/sweep.hpp"
#include "support/error.hpp"

#include <gpusweep/db/store.hpp>

#include <ostream>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

// The folders of --plugin-path, and the GPUs of --gpus (none when not given).
std::optional<std::string> gpus_of(const po::variables_map& vm);
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

// An integer option that must fit an int; UsageError naming --NAME otherwise.
int int_option(const po::variables_map& vm, const char* name);

// Writes text to the file at path (replacing it); Error "cannot write
// 'PATH'" when it cannot.
void write_text_file(const std::string& path, const std::string& text);

// --format (format_option's) read back, refusing one the command does not
// offer.
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
