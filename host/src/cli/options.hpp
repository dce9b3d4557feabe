// Each command's options as data, as ripgrep's defs.rs and LLVM's Opts.td
// keep them: one table builds the parser, `--help` and docs/commands.md
// (`gpusweep help --format md`), so that none of them can disagree.
#pragma once

#include "report/output.hpp"

#include <boost/program_options.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gpusweep::host {

namespace po = boost::program_options;

using Args = std::vector<std::string>;

// What an option's value is, and so how it is read back: flag as<bool>(),
// text as<std::string>(), number as<double>(), integer as<int64_t>(), texts
// (repeatable) as<std::vector<std::string>>() or strings_of().
enum class OptionKind { flag, text, number, integer, texts };

struct Option {
  std::string name;  // --NAME
  OptionKind kind = OptionKind::flag;
  std::string value;         // its value as help and docs name it ("FILE"); none for a flag
  std::string help;          // one line
  std::string default_text;  // as a user would write it ("3%"); empty: none
  char short_name = 0;       // -o
  bool is_required = false;

  // The help with what the kind and flags add: "(repeatable)", "(required)".
  std::string described() const;
  Option required() const;
  Option with_short(char c) const;
};

Option flag(std::string name, std::string help);
Option text(std::string name, std::string value, std::string help, std::string default_text = "");
Option texts(std::string name, std::string value, std::string help);
Option number(std::string name, std::string value, std::string help, double default_value);
Option number(std::string name, std::string value, std::string help);
Option integer(std::string name, std::string value, std::string help, int64_t default_value);
Option integer(std::string name, std::string value, std::string help);
// A fraction given as "3%" or "0.03" (read by fraction_option), its default
// written as a percentage from its constant.
Option percent(std::string name, std::string help, double default_fraction);

// The options several commands share, declared once.
Option db_option();
Option sweep_name_option();  // --sweep NAME, the run to read
Option plugin_path_option();
Option set_option();
Option gpus_option();
Option allow_plugin_change_option();
Option fresh_workers_option();
Option format_option(const std::vector<OutputFormat>& offered);
// A command's own options, then what every command that runs trials takes:
// --db, --resume (with what it continues), --fresh-workers, --set and
// --plugin-path.
std::vector<Option> with_run_options(std::vector<Option> own, const std::string& resume_help);

struct CommandDef {
  std::string name;
  std::string summary;  // one line, for `gpusweep --help`
  std::string about;    // a paragraph, for `--help` and docs/commands.md
  std::string page;     // the docs page that says the rest ("check.md"), or empty
  std::vector<Option> options;
  // The options given by position, in order; a texts one takes the rest.
  std::vector<std::string> positional;
  // The usage lines where one generated from the options would not say it
  // (a command with two forms); each follows "gpusweep NAME ".
  std::vector<std::string> forms;
  int (*run)(const po::variables_map& vm) = nullptr;
  // More help after the options (run's measure keys), or null.
  std::string (*more_help)() = nullptr;

  // The option of that name, or nullptr.
  const Option* option(const std::string& option_name) const;
};

// Every command, in the order `gpusweep --help` and docs/commands.md list
// them (commands.cpp).
const std::vector<CommandDef>& command_table();
const CommandDef* find_command(const std::string& name);

// The parser's view of c's options (with --help).
po::options_description option_descriptions(const CommandDef& c);

// The usage lines: c.forms, else one naming the positional values, the
// required options and [options].
std::vector<std::string> usage_lines(const CommandDef& c);
// What `gpusweep NAME --help` prints.
std::string help_text(const CommandDef& c);
// docs/commands.md's generated part: every command, its options and their
// defaults.
std::string commands_markdown();

// Parses args with c's table: its options, defaults and positional ones.
// Throws UsageError (exit code 2) naming the command on bad arguments;
// *help set on --help (nothing else is then checked).
po::variables_map parse_args(const CommandDef& c, const Args& args, bool* help = nullptr);

// Parses args for c and runs it; prints the help on --help. Throws
// UsageError (exit code 2) naming the command on bad arguments.
int run_command(const CommandDef& c, const Args& args);

}  // namespace gpusweep::host
