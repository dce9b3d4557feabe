// `gpusweep check`'s verdicts as text, Markdown (a pull request comment or a
// CI job summary), JSON, and JUnit XML (CI test reports): one record per
// config, the builds, and the verdict CI gates on.
#pragma once

#include "analysis/check.hpp"

#include <string>
#include <vector>

namespace gpusweep::host {

enum class CheckFormat { text, md, json, junit };
// "text" (or "table"), "md", "json", "junit"; UsageError otherwise.
CheckFormat parse_check_format(const std::string& text);

struct CheckReport {
  std::string sweep;  // the sweep's name
  int64_t run_id = 0;
  std::string db_path;
  Json check;                    // the spec's "check": builds and tolerances
  std::vector<std::string> keys;  // the sweep's own grid axes, for labels
  std::vector<CheckPair> pairs;
  CheckOptions options;
  CheckVerdict verdict = CheckVerdict::no_regression;
  int exit_code = 0;
  bool inconclusive_fails = true;  // --inconclusive fail
  // How the rounds ended ("every config decided", "measure.budget_s
  // spent"), and whether the run was interrupted.
  std::string stopped;
  bool interrupted = false;
};

std::string check_view(const CheckReport& r, CheckFormat format);

}  // namespace gpusweep::host
