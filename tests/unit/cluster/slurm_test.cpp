// Slurm without a cluster: the array's shape, the batch script, and reading
// sbatch, squeue and scontrol output (captured from Slurm 22.05).
#include "cluster/slurm.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>

using namespace gpusweep::host;
using Catch::Matchers::Contains;

TEST_CASE("an array never has more than 1000 tasks: big sweeps are chunked", "[host][slurm]") {
  CHECK(array_shape(6, 1) == std::pair<int64_t, int64_t>{6, 1});
  CHECK(array_shape(7, 2) == std::pair<int64_t, int64_t>{4, 2});
  CHECK(array_shape(1000, 1) == std::pair<int64_t, int64_t>{1000, 1});
  CHECK(array_shape(1001, 1) == std::pair<int64_t, int64_t>{501, 2});
  CHECK(array_shape(600000, 1) == std::pair<int64_t, int64_t>{1000, 600});
  for (int64_t trials : {1, 999, 1000, 1001, 2500, 123457}) {
    for (int64_t per : {1, 3, 50}) {
      const auto [tasks, per_task] = array_shape(trials, per);
      INFO(trials << " trials, " << per << " per task");
      CHECK(tasks <= kMaxArrayTasks);
      CHECK(per_task >= per);
      CHECK(tasks * per_task >= trials);       // every trial has a task
      CHECK((tasks - 1) * per_task < trials);  // and no task is empty
    }
  }
}

TEST_CASE("the batch script runs shard i/n of the sweep into its own database", "[host][slurm]") {
  BatchScript b;
  b.job_name = job_name_for("my sweep/1");
  b.tasks = 6;
  b.trials = 6;
  b.parallelism = 2;
  b.partition = "gpu";
  b.gpus_per_task = 1;
  b.cpus_per_task = 4;
  b.time_min = 30;
  b.extra = {"--qos=high", "--comment=two words"};
  // One root with a space, a quote, a '%' and a '#', for every path (the
  // log path was once written unquoted and hidden by another root).
  b.log_dir = "/runs/it's 50% #2/logs";
  b.exe = "/opt/gpusweep/bin/gpusweep";
  b.sweep_file = "/runs/r/sweep.json";
  b.run_key = "launch:k";
  b.shard_dir = "/runs/it's 50% #2/shards";
  b.plugin_dirs = {"/opt/plugins"};
  const std::string s = batch_script(b);
  CHECK(s.rfind("#!/bin/sh\n", 0) == 0);
  CHECK_THAT(s, Contains("#SBATCH --job-name=gpusweep-my_sweep_1\n"));
  CHECK_THAT(s, Contains("#SBATCH --array=1-6%2\n"));
  CHECK_THAT(s, Contains("#SBATCH \"--output=/runs/it's 50%% #2/logs/task-%a.log\"\n"));
  CHECK_THAT(s, Contains("#SBATCH \"--comment=two words\"\n"));
  CHECK(sbatch_argument("--comment=a\"b\\c") == "\"--comment=a\\\"b\\\\c\"");
  CHECK_THAT(s, Contains("#SBATCH --requeue\n") && Contains("#SBATCH --open-mode=append\n"));
  CHECK_THAT(s, Contains("#SBATCH --partition=gpu\n") && Contains("#SBATCH --gpus-per-task=1\n") &&
                    Contains("#SBATCH --cpus-per-task=4\n") && Contains("#SBATCH --time=30\n") &&
                    Contains("#SBATCH --qos=high\n"));
  CHECK_THAT(
      s, Contains("exec '/opt/gpusweep/bin/gpusweep' run '/runs/r/sweep.json' --shard \"$i/6\""));
  // One GPU per task: one trial at a time. Four: four at once, one GPU each.
  CHECK_THAT(s, !Contains("--jobs"));
  b.gpus_per_task = 4;
  CHECK_THAT(batch_script(b), Contains("#SBATCH --gpus-per-task=4\n") && Contains(" --jobs 4\n"));
  // Data-parallel trials of two ranks: two at once, two GPUs each; of four,
  // one at a time on all four.
  b.ranks_per_trial = 2;
  CHECK_THAT(batch_script(b), Contains(" --jobs 2\n"));
  b.ranks_per_trial = 4;
  CHECK_THAT(batch_script(b), !Contains("--jobs"));
  b.ranks_per_trial = 1;
  CHECK_THAT(s, Contains("--run-key 'launch:k'") && Contains("--plugin-path '/opt/plugins'"));
  CHECK_THAT(s, Contains("--db '/runs/it'\\''s 50% #2/shards'\"/shard-$i.db\""));
  // #SBATCH lines must come before the first command, or sbatch ignores them.
  CHECK(s.rfind("#SBATCH") < s.find("\nset -e"));

  BatchScript plain = b;
  plain.parallelism.reset();
  plain.partition.reset();
  plain.extra.clear();
  const std::string p = batch_script(plain);
  CHECK_THAT(p, Contains("#SBATCH --array=1-6\n"));
  CHECK(p.find("--partition") == std::string::npos);
}

TEST_CASE("sbatch, squeue and scontrol output is read", "[host][slurm]") {
  CHECK(parse_sbatch_job_id("42\n") == 42);
  CHECK(parse_sbatch_job_id("42;cluster\n") == 42);
  CHECK_FALSE(parse_sbatch_job_id("sbatch: error: oops\n"));
  CHECK_FALSE(parse_sbatch_job_id(""));

  const auto q = parse_squeue_tasks("3 PENDING\n2 RUNNING\n1 COMPLETING\nN/A PENDING\n\n");
  REQUIRE(q.size() == 3);
  CHECK(q.at(2) == "RUNNING");
  CHECK(q.at(1) == "COMPLETING");

  const auto r = parse_scontrol_tasks(
      "JobId=1 ArrayJobId=1 ArrayTaskId=3 ArrayTaskThrottle=2 JobName=t.sh JobState=COMPLETED "
      "Reason=None Requeue=1 Restarts=0 ExitCode=0:0 StdErr=/r/task-3.log StdOut=/r/task-3.log\n"
      "JobId=3 ArrayJobId=1 ArrayTaskId=2 JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0 "
      "StdOut=/r/task-2.log Power=\n"
      "JobId=1 ArrayJobId=1 ArrayTaskId=4-6%2 JobState=PENDING Reason=JobArrayTaskLimit "
      "ExitCode=0:0\n");
  REQUIRE(r.size() == 2);
  CHECK(r.at(3).state == "COMPLETED");
  CHECK(r.at(3).exit_code == "0:0");
  CHECK(r.at(2).state == "FAILED");
  CHECK(r.at(2).reason == "NonZeroExitCode");
  CHECK(r.at(2).exit_code == "3:0");
  CHECK(r.at(2).std_out == "/r/task-2.log");
}

TEST_CASE("a trial records the array job and task it ran in", "[host][slurm]") {
  ::unsetenv("SLURM_JOB_ID");
  ::unsetenv("SLURM_ARRAY_JOB_ID");
  ::unsetenv("SLURM_ARRAY_TASK_ID");
  CHECK_FALSE(slurm_ids_from_env().job_id);
  ::setenv("SLURM_JOB_ID", "77", 1);
  CHECK(slurm_ids_from_env().job_id == 77);
  CHECK_FALSE(slurm_ids_from_env().task_id);
  ::setenv("SLURM_ARRAY_JOB_ID", "70", 1);
  ::setenv("SLURM_ARRAY_TASK_ID", "7", 1);
  CHECK(slurm_ids_from_env().job_id == 70);
  CHECK(slurm_ids_from_env().task_id == 7);
  ::unsetenv("SLURM_JOB_ID");
  ::unsetenv("SLURM_ARRAY_JOB_ID");
  ::unsetenv("SLURM_ARRAY_TASK_ID");
}
