// gpusweep: sweeps training-step performance settings over workload plugins
// and records every measurement in SQLite. Dispatches the subcommands.
#include "cli/commands.hpp"
#include "support/error.hpp"
#include "support/exit_code.hpp"
#include "support/version.hpp"

#include <gpusweep/db/sqlite.hpp>

#include <cstring>
#include <iostream>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << gpusweep::host::overview();
    return gpusweep::host::kExitUsage;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h") {
    std::cout << gpusweep::host::overview();
    return gpusweep::host::kExitOk;
  }
  if (name == "--version") {
    std::cout << "gpusweep " << gpusweep::host::build::version() << " ("
              << gpusweep::host::build::git_commit() << ")\n";
    return gpusweep::host::kExitOk;
  }
  const gpusweep::host::CommandDef* command = gpusweep::host::find_command(name);
  if (command == nullptr) {
    std::cerr << "gpusweep: unknown command '" << name << "' (see gpusweep --help)\n";
    return gpusweep::host::kExitUsage;
  }
  const gpusweep::host::Args args(argv + 2, argv + argc);
  try {
    return gpusweep::host::run_command(*command, args);
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
