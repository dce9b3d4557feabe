// gpusweep's exit statuses, one table for every command (docs/ci.md lists
// what each means to a CI job).
#pragma once

namespace gpusweep::host {

enum ExitCode : int {
  kExitOk = 0,
  // A run's or check's failure: a regression, a setting that did nothing,
  // a broken machine (doctor), no winner (tune).
  kExitFailed = 1,
  kExitUsage = 2,  // bad arguments or input: the message names the fix
  // A run that completed but whose baseline, or every trial, ended failed;
  // a check that ended inconclusive (unless --inconclusive pass).
  kExitTrialsFailed = 3,
  kExitInterrupted = 130,  // Ctrl-C: what finished is saved, resume continues
};

}  // namespace gpusweep::host
