// `gpusweep help [COMMAND]`: the commands, or one command's help; with
// --format md, docs/commands.md's reference, written from the command table.
#include "cli/cli.hpp"
#include "support/version.hpp"

#include <iostream>
#include <sstream>

namespace gpusweep::host {

std::string overview() {
  std::ostringstream out;
  out << "usage: gpusweep COMMAND [options]   (gpusweep COMMAND --help for details)\n\n"
         "Measures which training settings make a workload's step fast, under one\n"
         "protocol, and records every number in SQLite.\n\ncommands:\n";
  for (const auto& c : command_table()) {
    out << "  " << c.name << std::string(12 - c.name.size(), ' ') << c.summary << "\n";
  }
  out << "\nversion " << build::version() << " (" << build::git_commit() << ")\n";
  return out.str();
}

namespace {

int run_help(const po::variables_map& vm) {
  const std::string format = vm["format"].as<std::string>();
  if (format != "text" && format != "md") {
    throw UsageError("--format " + format + ": give text or md");
  }
  if (vm.count("command") == 0U) {
    std::cout << (format == "md" ? commands_markdown() : overview());
    return 0;
  }
  const std::string name = vm["command"].as<std::string>();
  const CommandDef* c = find_command(name);
  if (c == nullptr) throw UsageError("help: no command '" + name + "' (see gpusweep help)");
  if (format == "md")
    throw UsageError("help --format md writes every command's reference: drop " + name);
  std::cout << help_text(*c);
  return 0;
}

}  // namespace

CommandDef cmd_help() {
  return {"help",
          "the commands, or one command's help; --format md: docs/commands.md",
          "Lists the commands, or prints one command's help (as gpusweep COMMAND --help).\n"
          "--format md writes the reference in docs/commands.md from the same table that\n"
          "builds every command's parser and help, so that the page cannot drift.",
          "",
          {text("command", "COMMAND", "the command to describe"),
           text("format", "FORMAT", "text, or md (docs/commands.md's reference)", "text")},
          {"command"},
          {},
          run_help};
}

}  // namespace gpusweep::host
