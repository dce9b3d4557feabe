// The gpusweep subcommands. Each takes the arguments after its name and
// returns the process exit code; errors are thrown as gpusweep::Error.
#pragma once

#include <string>
#include <vector>

namespace gpusweep::host {

using Args = std::vector<std::string>;

int cmd_run(const Args& args);
int cmd_resume(const Args& args);
int cmd_plugins(const Args& args);
int cmd_results(const Args& args);
int cmd_compare(const Args& args);
int cmd_sql(const Args& args);
int cmd_best(const Args& args);
int cmd_tune(const Args& args);
int cmd_report(const Args& args);
int cmd_export(const Args& args);
int cmd_new_plugin(const Args& args);
int cmd_doctor(const Args& args);
int cmd_tune_batch(const Args& args);
int cmd_diagnose(const Args& args);
int cmd_launch(const Args& args);
int cmd_merge(const Args& args);
int cmd_serve(const Args& args);
int cmd_settings(const Args& args);
int cmd_stats(const Args& args);
int cmd_history(const Args& args);
int cmd_check(const Args& args);

}  // namespace gpusweep::host
