// gpusweep: sweeps training-step performance settings over workload plugins
// and records every measurement in SQLite. Dispatches the subcommands.
#include "cli/commands.hpp"
#include "support/error.hpp"
#include "support/exit_code.hpp"
#include "support/version.hpp"

#include <gpusweep/db/sqlite.hpp>

#include <cstring>
#include <iostream>
#include <map>

namespace {

using gpusweep::host::Args;

struct Command {
  int (*fn)(const Args&);
  const char* summary;
};

const std::map<std::string, Command>& commands() {
  using namespace gpusweep::host;
  static const std::map<std::string, Command> c = {
      {"run", {cmd_run, "run a sweep file into the results database"}},
      {"resume", {cmd_resume, "continue an interrupted sweep from the database"}},
      {"plugins", {cmd_plugins, "list workload plugins, show one's settings, --check one"}},
      {"settings", {cmd_settings, "the common settings every workload accepts, and their rules"}},
      {"stats", {cmd_stats, "the statistics gpusweep stores about each trial, and their meaning"}},
      {"new-plugin", {cmd_new_plugin, "write a new workload plugin project to start from"}},
      {"compare", {cmd_compare, "compare configs with the baseline: ratio, CI, verdict"}},
      {"best", {cmd_best, "the best config under constraints, as a sweep snippet"}},
      {"sql", {cmd_sql, "run a read-only SQL query on the results"}},
      {"export", {cmd_export, "export a sweep's trials or blocks as csv or json"}},
      {"report", {cmd_report, "write a self-contained HTML report with charts"}},
      {"results", {cmd_results, "print a sweep's trials as a table"}},
      {"history", {cmd_history, "a workload's runs as series, with change points marked"}},
      {"check", {cmd_check, "base and head builds interleaved: a verdict per config for CI"}},
      {"doctor", {cmd_doctor, "check this machine: CPU, BLAS, LibTorch, GPUs, plugins"}},
      {"tune", {cmd_tune, "race a sweep's space to its best config, with the evidence"}},
      {"tune-batch", {cmd_tune_batch, "find the largest and the fastest batch size"}},
      {"diagnose", {cmd_diagnose, "where a step's time goes, and what to sweep about it"}},
      {"launch", {cmd_launch, "run a sweep as a Slurm job array of shards"}},
      {"merge", {cmd_merge, "import shard databases (run --shard, launch) into one"}},
      {"serve", {cmd_serve, "watch sweeps and races live in a browser (read-only)"}},
  };
  return c;
}

void usage(std::ostream& out) {
  out << "usage: gpusweep COMMAND [options]   (gpusweep COMMAND --help for details)\n\n"
         "Measures which training settings make a workload's step fast, under one\n"
         "protocol, and records every number in SQLite.\n\ncommands:\n";
  for (const auto& [name, c] : commands()) {
    out << "  " << name << std::string(12 - name.size(), ' ') << c.summary << "\n";
  }
  out << "\nversion " << gpusweep::host::build::version() << " ("
      << gpusweep::host::build::git_commit() << ")\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(std::cerr);
    return gpusweep::host::kExitUsage;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(std::cout);
    return gpusweep::host::kExitOk;
  }
  if (name == "--version") {
    std::cout << "gpusweep " << gpusweep::host::build::version() << " ("
              << gpusweep::host::build::git_commit() << ")\n";
    return gpusweep::host::kExitOk;
  }
  auto it = commands().find(name);
  if (it == commands().end()) {
    std::cerr << "gpusweep: unknown command '" << name << "' (see gpusweep --help)\n";
    return gpusweep::host::kExitUsage;
  }
  const Args args(argv + 2, argv + argc);
  try {
    return it->second.fn(args);
  } catch (const gpusweep::UsageError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return gpusweep::host::kExitUsage;
  } catch (const gpusweep::db::DbError& e) {
    std::cerr << "error: database: " << e.what() << "\n";
    if ((e.code() & 0xff) == SQLITE_FULL) {
      // Finished trials are committed one by one; the one being written
      // rolled back whole. Nothing to repair, only space to free.
      std::cerr << "the disk holding the results database is full: free some space, then "
                   "run the same command with --resume to finish (finished trials are kept)\n";
      return gpusweep::host::kExitUsage;
    }
    // A --db the user can fix (not gpusweep's, too new, not writable, not
    // openable) is a usage error; anything else went wrong underneath.
    switch (e.code() & 0xff) {
      case SQLITE_NOTADB:
      case SQLITE_CANTOPEN:
      case SQLITE_READONLY:
      case SQLITE_PERM:
        return gpusweep::host::kExitUsage;
      default:
        return gpusweep::host::kExitFailed;
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return gpusweep::host::kExitFailed;
  }
}
