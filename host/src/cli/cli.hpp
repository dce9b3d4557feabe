// Shared command-line plumbing for the subcommands (Boost.Program_options).
#pragma once

#include "cli/commands.hpp"

#include <boost/program_options.hpp>

#include <string>

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
std::vector<std::string> plugin_paths(const po::variables_map& vm);

bool stdout_is_terminal();

}  // namespace gpusweep::host
