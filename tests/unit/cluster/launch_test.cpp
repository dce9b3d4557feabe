// What `launch --wait` ends with, and the script options it refuses.
#include "cluster/launch.hpp"
#include "support/error.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep::host;
using Catch::Matchers::Contains;

TEST_CASE("launch's summary names the failed tasks and how to re-run them", "[cluster]") {
  Launched l;
  l.dir.root = "/shared/runs/s-1";
  l.job_id = 42;
  l.tasks = 4;
  l.sweep_id = 3;
  l.db_path = "/home/u/results.db";
  LaunchOutcome all{0, "", 8, 8};
  const std::string done = launch_summary(l, all);
  CHECK_THAT(done, Contains("job 42: 4/4 tasks completed; 8/8 trials merged into "
                            "/home/u/results.db (run 3)"));
  CHECK_THAT(done, !Contains("to finish"));
  LaunchOutcome some{2, "2,4", 4, 8};
  CHECK_THAT(launch_summary(l, some), Contains("2/4 tasks completed") &&
                                          Contains("to finish: sbatch --array=2,4 ") &&
                                          Contains("then: gpusweep merge /shared/runs/s-1"));
}

TEST_CASE("script options that would break the #SBATCH block are refused", "[cluster]") {
  BatchScript b;
  b.extra = {"--qos=high", "--comment=two words and 'quotes'"};
  b.partition = "gpu,debug";
  CHECK_NOTHROW(check_script_options(b));
  b.extra = {"qos"};
  CHECK_THROWS_WITH(check_script_options(b), Contains("--sbatch-arg 'qos'"));
  // A newline would end the #SBATCH block (every later line ignored); a CR
  // does the same to sbatch's reading of a line.
  for (const char* bad : {"--qos=high\n#SBATCH --x=1", "--qos=high\r"}) {
    b.extra = {bad};
    CHECK_THROWS_WITH(check_script_options(b), Contains("has a control character"));
  }
  // sbatch splits a heterogeneous job wherever these words stand on a line.
  b.extra = {"--comment=my HetJob run"};
  CHECK_THROWS_WITH(check_script_options(b), Contains("the word 'hetjob'"));
  b.extra = {};
  for (const char* bad : {"", "gpu debug", "gpu\n", "a'b"}) {
    b.partition = bad;
    CHECK_THROWS_WITH(check_script_options(b), Contains("give a partition name"));
  }
}

TEST_CASE("a run folder with a newline is refused before anything is written", "[cluster]") {
  CHECK_NOTHROW(check_run_dir("/tmp/runs/it's a folder 50%"));
  CHECK_NOTHROW(check_run_dir(""));  // the working directory of the test
  CHECK_THROWS_WITH(check_run_dir("/tmp/runs/two\nlines"),
                    Contains("--run-dir '/tmp/runs/two\nlines' has a control character (code 10)"));
  CHECK_THROWS_WITH(check_run_dir("/tmp/runs/a\\b"), Contains("a backslash"));
  CHECK_THROWS_WITH(check_run_dir("/tmp/packjob-runs"), Contains("the word 'packjob'"));
}
