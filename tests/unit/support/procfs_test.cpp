// The OOM killer's count from the memory cgroup, on simulated files.
#include "support/procfs.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep::host;

TEST_CASE("the OOM kill count is read from the worker's memory cgroup, v1 or v2", "[support]") {
  // cgroup v2 only: memory.events under the path, then at the root.
  const auto v2 = oom_kill_files("0::/user.slice/job-7\n");
  REQUIRE(v2.size() == 2);
  CHECK(v2[0] == "/sys/fs/cgroup/user.slice/job-7/memory.events");
  CHECK(v2[1] == "/sys/fs/cgroup/memory.events");
  // Hybrid v1 (as in this project's containers): the memory controller's
  // oom_control first.
  const auto v1 = oom_kill_files("4:memory:/process_api/abc\n1:cpu:/\n0::/\n");
  REQUIRE(v1.size() >= 2);
  CHECK(v1[0] == "/sys/fs/cgroup/memory/process_api/abc/memory.oom_control");
  CHECK(v1[1] == "/sys/fs/cgroup/memory/memory.oom_control");
  CHECK(oom_kill_files("garbage").empty());

  CHECK(parse_oom_kill("low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\n") == 2);
  CHECK(parse_oom_kill("oom_kill_disable 0\nunder_oom 0\noom_kill 5\n") == 5);
  CHECK_FALSE(parse_oom_kill("oom_kill_disable 0\n"));
  CHECK_FALSE(parse_oom_kill(""));
}

TEST_CASE("/proc text parses into CPU seconds and RSS", "[support]") {
  // The command name may hold spaces and parentheses.
  const std::string stat =
      "1234 (gpusweep (w) x) S 1 1234 1234 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 3 0 100 0 0";
  CHECK(parse_proc_stat_cpu_seconds(stat, 100) == Approx(3.0));
  CHECK_FALSE(parse_proc_stat_cpu_seconds("garbage", 100));
  CHECK(parse_status_rss_bytes("Name:\tx\nVmRSS:\t  2048 kB\n") == 2048.0 * 1024);
}
