// Command-line plumbing; see cli.hpp.
#include "cli/cli.hpp"

#include "support/error.hpp"

#include <unistd.h>

#include <iostream>

namespace gpusweep::host {

Parsed parse_command(const std::string& name, const std::string& synopsis,
                     const std::string& description, const po::options_description& options,
                     const po::positional_options_description& positional, const Args& args) {
  po::options_description all("Options");
  all.add_options()("help,h", "show this help");
  all.add(options);
  Parsed p;
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), p.vm);
    if (p.vm.count("help") != 0U) {
      std::cout << "usage: gpusweep " << name << " " << synopsis << "\n\n"
                << description << "\n\n"
                << all << "\n";
      p.help = true;
      return p;
    }
    po::notify(p.vm);
  } catch (const po::error& e) {
    throw UsageError("gpusweep " + name + ": " + e.what() + " (see: gpusweep " + name +
                     " --help)");
  }
  return p;
}

void add_db_option(po::options_description& o) {
  o.add_options()("db", po::value<std::string>()->default_value("gpusweep.db"),
                  "results database (SQLite)");
}

void add_plugin_path_option(po::options_description& o) {
  o.add_options()("plugin-path", po::value<std::vector<std::string>>()->composing(),
                  "extra folder to search for gpusweep_<name>.so plugins (repeatable)");
}

std::vector<std::string> plugin_paths(const po::variables_map& vm) {
  if (vm.count("plugin-path") == 0U) return {};
  return vm["plugin-path"].as<std::vector<std::string>>();
}

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }

}  // namespace gpusweep::host
