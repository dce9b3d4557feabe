// `gpusweep check`'s verdicts as text, Markdown (a pull request comment or a
// CI job summary), JSON, and JUnit XML (CI test reports): one record per
// config, the builds, and the verdict CI gates on.
#pragma once

#include "analysis/check.hpp"

#include <gpusweep/db/store.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace gpusweep::host {

enum class CheckFormat { text, md, json, junit };
// "text" (or "table"), "md", "json", "junit"; UsageError otherwise.
CheckFormat parse_check_format(const std::string& text);

struct CheckRunReport {
  CheckRunReport() = default;
  CheckRunReport(const CheckRunReport&) = delete;
  CheckRunReport& operator=(const CheckRunReport&) = delete;
  CheckRunReport(CheckRunReport&&) = default;
  CheckRunReport& operator=(CheckRunReport&&) = default;

  std::string sweep;  // the sweep's name
  int64_t run_id = 0;
  std::string db_path;
  CheckSpec check;                // the spec's: builds and tolerances
  std::vector<std::string> keys;  // the sweep's own grid axes, for labels
  // The configs as read (the pairs point into them: a report is not copied).
  std::vector<ConfigSamples> configs;
  std::vector<CheckPair> pairs;
  CheckOptions options;
  CheckVerdict verdict = CheckVerdict::no_regression;
  int exit_code = 0;
  bool inconclusive_fails = true;  // --inconclusive fail
  // How the rounds ended ("every config decided", "measure.budget_s
  // spent"), and whether the run was interrupted.
  std::string stopped;
  bool round_cap = false;  // the rounds reached kMaxRounds
  bool interrupted = false;
};

// A check run's report from the database: its pairs and verdicts under
// the spec's stored check (tolerances, builds, budget), and the exit code
// (1 a regression, kExitTrialsFailed when inconclusive and that fails,
// 130 when the run did not complete).
CheckRunReport check_report(db::Store& store, const db::SweepRecord& run, const SweepSpec& spec,
                            const std::string& db_path, bool complete, bool inconclusive_fails);

std::string check_view(const CheckRunReport& r, CheckFormat format);

// The format a file's suffix names: .md, .json, .xml (JUnit), .txt; else
// `otherwise`.
CheckFormat format_for_file(const std::string& path, CheckFormat otherwise);

// The verdicts as `check` prints them: with files, each file in its
// suffix's format (format_for_file) and the text table to out; without, the
// text table to out, or `format` on stdout. An interrupted run's line to
// resume it follows. Error when a file cannot be written.
void write_check(const CheckRunReport& r, CheckFormat format, const std::vector<std::string>& files,
                 std::ostream& out);

}  // namespace gpusweep::host
