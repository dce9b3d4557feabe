// The gpusweep subcommands: each cmd_NAME() gives its definition (options,
// help, and the function that runs it), which commands.cpp gathers into the
// command table (options.hpp).
#pragma once

#include "cli/options.hpp"

namespace gpusweep::host {

CommandDef cmd_run();
CommandDef cmd_resume();
CommandDef cmd_check();
CommandDef cmd_tune();
CommandDef cmd_tune_batch();
CommandDef cmd_diagnose();
CommandDef cmd_results();
CommandDef cmd_compare();
CommandDef cmd_best();
CommandDef cmd_report();
CommandDef cmd_export();
CommandDef cmd_history();
CommandDef cmd_sql();
CommandDef cmd_serve();
CommandDef cmd_launch();
CommandDef cmd_merge();
CommandDef cmd_plugins();
CommandDef cmd_new_plugin();
CommandDef cmd_settings();
CommandDef cmd_stats();
CommandDef cmd_doctor();
CommandDef cmd_help();

// What `gpusweep --help` prints: the commands and their summaries.
std::string overview();

}  // namespace gpusweep::host
