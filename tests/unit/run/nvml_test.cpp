// The NVML loader against a fake libnvidia-ml.so.1 built in the test tree,
// and the trial monitor's summary of readings.
#include "support/nvml.hpp"
#include "run/monitor.hpp"

#include <catch2/catch.hpp>

#include <map>

using namespace gpusweep::host;
using Catch::Matchers::Contains;

namespace {
std::map<std::string, double> summary(const std::vector<gpusweep::db::MetricSample>& rows) {
  std::map<std::string, double> m;
  for (const auto& r : rows) {
    if (r.at_step == 0 && r.name.rfind("monitor_timeline", 0) != 0) m[r.name] = r.value;
  }
  return m;
}
}  // namespace

TEST_CASE("the NVML loader reads devices and samples from the library", "[host]") {
  std::string why;
  auto nvml = Nvml::load(GPUSWEEP_FAKE_NVML, &why);
  INFO(why);
  REQUIRE(nvml);
  CHECK(nvml->driver_version() == "535.54.03");
  REQUIRE(nvml->device_count() == 2);
  const auto g = nvml->device(1);
  REQUIRE(g);
  CHECK(g->name == "Fake GPU 1");
  CHECK(g->memory_total_bytes == 40.0 * (1ULL << 30));
  CHECK(g->compute_capability == "9.0");
  CHECK_FALSE(nvml->device(2));
  const auto s = nvml->sample(0);
  REQUIRE(s);
  CHECK(s->utilization_pct == 87);
  CHECK(s->memory_used_bytes == 12.0 * (1ULL << 30));
  CHECK(s->sm_clock_mhz == 1410);
  CHECK(s->temperature_c == 65);
  CHECK(s->power_w == 250);
}

TEST_CASE("a missing NVML is reported plainly, not as an error", "[host]") {
  std::string why;
  CHECK_FALSE(Nvml::load("/nonexistent/libnvidia-ml.so.1", &why));
  CHECK_THAT(why, Contains("not found") && Contains("no NVIDIA driver"));
}

TEST_CASE("the monitor summarises GPU readings and flags throttling", "[host]") {
  std::string why;
  auto nvml = Nvml::load(GPUSWEEP_FAKE_NVML, &why);
  REQUIRE(nvml);
  // Device 1 of the fake alternates 1980 and 1200 MHz while 95% busy.
  TrialMonitor m(/*pid=*/0, nvml.get(), /*gpu=*/1U);
  for (int i = 0; i < 4; ++i) m.add_gpu_reading(*nvml->sample(1));
  auto s = summary(m.metrics(nullptr, 2.0));
  CHECK(s.at("monitor_gpu_util_mean") == 95);
  CHECK(s.at("monitor_gpu_memory_peak_bytes") == 3.0 * (1ULL << 30));
  CHECK(s.at("monitor_gpu_sm_clock_max_mhz") == 1980);
  CHECK(s.at("monitor_gpu_throttled") == 1);
  CHECK(s.at("monitor_gpu_power_peak_w") == 250);

  TrialMonitor steady(0, nvml.get(), 0U);
  for (int i = 0; i < 4; ++i) steady.add_gpu_reading(*nvml->sample(0));
  CHECK(summary(steady.metrics(nullptr, 2.0)).at("monitor_gpu_throttled") == 0);
}

TEST_CASE("CPU readings become utilisation in cores and a peak RSS", "[host]") {
  TrialMonitor m(0, nullptr, std::nullopt);
  m.add_cpu_reading(0.0, 0.0, 100e6);
  m.add_cpu_reading(0.5, 0.5, 300e6);  // one core busy
  m.add_cpu_reading(1.0, 1.5, 200e6);  // two cores busy
  auto s = summary(m.metrics(nullptr, 1.0));
  CHECK(s.at("monitor_cpu_util_peak") == Approx(2.0));
  CHECK(s.at("monitor_cpu_util_mean") == Approx(1.5));
  CHECK(s.at("monitor_rss_peak_bytes") == 300e6);
  CHECK(s.count("monitor_gpu_util_mean") == 0);
}

TEST_CASE("/proc text parses into CPU seconds and RSS", "[host]") {
  // The command name may hold spaces and parentheses.
  const std::string stat =
      "1234 (gpusweep (w) x) S 1 1234 1234 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 3 0 100 0 0";
  CHECK(parse_proc_stat_cpu_seconds(stat, 100) == Approx(3.0));
  CHECK_FALSE(parse_proc_stat_cpu_seconds("garbage", 100));
  CHECK(parse_status_rss_bytes("Name:\tx\nVmRSS:\t  2048 kB\n") == 2048.0 * 1024);
  CHECK(gpu_for_config(R"({"device":"cuda:3"})") == 3U);
  CHECK_FALSE(gpu_for_config(R"({"device":"cpu"})"));
}
