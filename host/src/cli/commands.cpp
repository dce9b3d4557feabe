// The command table: every command's definition, in the order the help and
// docs/commands.md list them.
#include "cli/commands.hpp"

namespace gpusweep::host {

const std::vector<CommandDef>& command_table() {
  static const std::vector<CommandDef> table = {
      cmd_run(),      cmd_resume(),  cmd_check(),  cmd_tune(),   cmd_tune_batch(), cmd_diagnose(),
      cmd_results(),  cmd_compare(), cmd_best(),   cmd_report(), cmd_export(),     cmd_history(),
      cmd_sql(),      cmd_serve(),   cmd_launch(), cmd_merge(),  cmd_plugins(),    cmd_new_plugin(),
      cmd_settings(), cmd_stats(),   cmd_doctor(), cmd_help()};
  return table;
}

}  // namespace gpusweep::host
