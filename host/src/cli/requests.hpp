// What each command makes of its options before it runs anything, one
// function a command, so that a unit test can hold each to its table
// (tests/unit/cli/requests_test.cpp) without running a trial.
#pragma once

#include "analysis/batch_search.hpp"
#include "analysis/change_points.hpp"
#include "analysis/compare.hpp"
#include "cli/options.hpp"
#include "cluster/launch.hpp"
#include "run/sweep_run.hpp"
#include "run/tune_run.hpp"
#include "serve/http.hpp"
#include "spec/check_spec.hpp"

namespace gpusweep::host {

// check: the tolerances and the quality guard (the builds come later).
CheckSpec check_spec_of(const po::variables_map& vm);
// run: where and how the trials run (the sweep file's path and hash aside).
RunRequest run_request_of(const po::variables_map& vm, const SweepSpec& spec);
// compare: the comparison's options over the run's spec.
CompareOptions compare_options_of(const po::variables_map& vm, const SweepSpec& spec);
// history: the change-point search's options.
ChangePointOptions change_point_options_of(const po::variables_map& vm);
// launch: the Slurm options, each checked.
LaunchRequest launch_request_of(const po::variables_map& vm);
// serve: the server's address, port, token and host names.
HttpOptions http_options_of(const po::variables_map& vm);
// tune: what the command line sets over the file's tune object.
TuneOverrides tune_overrides_of(const po::variables_map& vm);
// tune-batch: the search.
SearchOptions search_options_of(const po::variables_map& vm);

}  // namespace gpusweep::host
