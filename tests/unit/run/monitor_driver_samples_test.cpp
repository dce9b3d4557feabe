// The monitor's GPU utilisation from the driver's own samples
// (nvmlDeviceGetSamples) inside the measured windows, against the fake
// libnvidia-ml.so.1, whose samples and clock the tests set: no sleeping.
#include "monitor_samples.hpp"
#include "run/monitor.hpp"
#include "spec/stats.hpp"
#include "support/nvml.hpp"

#include <catch2/catch.hpp>

#include <time.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using namespace gpusweep::host;
using gpusweep::test::summary;

namespace {

// The fake's first sample and its period (1/6 s, as drivers sample).
constexpr uint64_t kT0 = 1'000'000'000'000'000ULL;
constexpr uint64_t kPeriod = 166'667;
constexpr uint64_t at(double k) { return kT0 + static_cast<uint64_t>(k * kPeriod); }

// Sets environment variables for one test, restoring what was there.
class Env {
 public:
  Env(std::initializer_list<std::pair<const char*, std::string>> vars) {
    for (const auto& [name, value] : vars) set(name, value);
  }
  void set(const char* name, const std::string& value) {
    if (saved_.count(name) == 0U) {
      const char* old = std::getenv(name);
      saved_[name] = old != nullptr ? std::optional<std::string>(old) : std::nullopt;
    }
    ::setenv(name, value.c_str(), 1);
  }
  ~Env() {
    for (const auto& [name, old] : saved_) {
      if (old) {
        ::setenv(name.c_str(), old->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

std::unique_ptr<Nvml> fake_nvml() {
  std::string why;
  auto nvml = Nvml::load(GPUSWEEP_FAKE_NVML, &why);
  INFO(why);
  REQUIRE(nvml);
  return nvml;
}

}  // namespace

TEST_CASE("NVML's driver samples come with their stamps, only the new ones", "[host]") {
  Env env{{"FAKE_NVML_SAMPLE_VALUES", "10,20,30,40"},
          {"FAKE_NVML_SAMPLE_T0_US", std::to_string(kT0)}};
  auto nvml = fake_nvml();
  const auto all = nvml->driver_samples(0, GpuSampleKind::utilization, 0);
  REQUIRE(all);
  REQUIRE(all->size() == 4);
  CHECK(all->front().time_us == kT0);
  CHECK(all->back().time_us == at(3));
  CHECK(all->back().value == 40);
  // lastSeenTimeStamp: what came after the second sample.
  const auto newer = nvml->driver_samples(0, GpuSampleKind::utilization, at(1));
  REQUIRE(newer);
  REQUIRE(newer->size() == 2);
  CHECK(newer->front().value == 30);
  CHECK(nvml->driver_samples(0, GpuSampleKind::utilization, at(3))->empty());
  CHECK(nvml->driver_samples(0, GpuSampleKind::memory_utilization, 0)->at(1).value == 10);
  // A device that keeps no samples: absent, not empty.
  env.set("FAKE_NVML_SAMPLE_VALUES", "unsupported");
  CHECK_FALSE(nvml->driver_samples(0, GpuSampleKind::utilization, 0));
}

TEST_CASE("a trial's GPU utilisation is that of the driver's samples inside its window", "[host]") {
  // Idle before and after the window, busy inside it (samples 3 to 6).
  Env env{{"FAKE_NVML_SAMPLE_VALUES", "5,5,5,90,80,70,90,5,5,5"},
          {"FAKE_NVML_SAMPLE_T0_US", std::to_string(kT0)}};
  auto nvml = fake_nvml();
  TrialMonitor m(/*pid=*/0, nvml.get(), nullptr);
  m.use_gpu(0);
  m.set_measuring(true, at(2.5));
  m.sample();  // a poll inside the window: the fake's device 0 reads 87
  m.set_measuring(false, at(6.5));
  m.fetch_driver_samples();
  const auto s = summary(m.metrics(nullptr, 2.0));
  CHECK(s.at("monitor_gpu_util_samples") == 4);
  CHECK(s.at("monitor_gpu_device_util_mean") == Approx(82.5));  // not the poll's 87, nor the 5s
  CHECK(s.at("monitor_gpu_device_util_peak") == 90);
  CHECK(s.at("monitor_gpu_util_sample_period_s") == Approx(kPeriod * 1e-6));
  CHECK(s.at("monitor_gpu_memory_util_mean") == Approx((45 + 40 + 35 + 45) / 4.0));
  CHECK(s.count("monitor_gpu_util_window_too_short") == 0);
}

TEST_CASE("samples of several windows count, those between them do not", "[host]") {
  // Interleaved trials measure block by block: two windows, a gap between.
  Env env{{"FAKE_NVML_SAMPLE_VALUES", "60,60,0,0,0,0,40,40"},
          {"FAKE_NVML_SAMPLE_T0_US", std::to_string(kT0)}};
  auto nvml = fake_nvml();
  TrialMonitor m(0, nvml.get(), nullptr);
  m.use_gpu(0);
  m.set_measuring(true, at(0));
  m.set_measuring(false, at(1.5));
  m.set_measuring(true, at(5.5));
  m.set_measuring(false, at(7.5));
  m.fetch_driver_samples();
  const auto s = summary(m.metrics(nullptr, 2.0));
  CHECK(s.at("monitor_gpu_util_samples") == 4);
  CHECK(s.at("monitor_gpu_device_util_mean") == 50);
}

TEST_CASE("the driver's samples are fetched poll by poll: a short buffer loses none", "[host]") {
  // The driver keeps 3 samples; a trial of 20 whose window holds samples 5
  // to 12. Fetching only at the end would find the last 3, all outside it;
  // fetching everything each poll would count some twice.
  std::string values;
  for (int k = 0; k < 20; ++k)
    values += (k == 0 ? "" : ",") + std::string(k >= 5 && k <= 12 ? "60" : "5");
  Env env{{"FAKE_NVML_SAMPLE_VALUES", values},
          {"FAKE_NVML_SAMPLE_T0_US", std::to_string(kT0)},
          {"FAKE_NVML_SAMPLE_BUFFER", "3"}};
  auto nvml = fake_nvml();
  TrialMonitor m(0, nvml.get(), nullptr);
  m.use_gpu(0);
  for (int k = 0; k <= 20; k += 2) {  // a poll every two driver periods
    env.set("FAKE_NVML_SAMPLE_NOW_US", std::to_string(at(k)));
    if (k == 4) m.set_measuring(true, at(4.5));
    if (k == 14) m.set_measuring(false, at(12.5));
    m.fetch_driver_samples();
  }
  const auto s = summary(m.metrics(nullptr, 4.0));
  CHECK(s.at("monitor_gpu_util_samples") == 8);
  CHECK(s.at("monitor_gpu_device_util_mean") == 60);
}

TEST_CASE("a window that holds no driver sample says how long it was", "[host]") {
  Env env{{"FAKE_NVML_SAMPLE_VALUES", "50,50,50,50,50,50"},
          {"FAKE_NVML_SAMPLE_T0_US", std::to_string(kT0)}};
  auto nvml = fake_nvml();
  TrialMonitor m(0, nvml.get(), nullptr);
  m.use_gpu(0);
  // 0.1 s between samples 2 and 3.
  m.set_measuring(true, at(2) + 20'000);
  m.set_measuring(false, at(2) + 120'000);
  m.sample();
  const auto s = summary(m.metrics(nullptr, 1.0));
  CHECK(s.at("monitor_gpu_util_samples") == 0);
  CHECK(s.at("monitor_gpu_util_window_too_short") == Approx(0.1));
  CHECK(s.at("monitor_gpu_util_sample_period_s") == Approx(kPeriod * 1e-6));
  CHECK(s.count("monitor_gpu_device_util_mean") == 0);  // no poll in the window either
}

TEST_CASE("a 0.3 s window always holds a driver sample at a 1/6 s period", "[host]") {
  Env env{{"FAKE_NVML_SAMPLE_VALUES", "5,5,5,70,70,70,5,5,5,5"},
          {"FAKE_NVML_SAMPLE_T0_US", std::to_string(kT0)}};
  auto nvml = fake_nvml();
  // Wherever the window falls against the driver's clock.
  for (const double phase : {0.0, 0.25, 0.5, 0.75, 0.999}) {
    INFO("window starts " << phase << " periods after sample 3");
    TrialMonitor m(0, nvml.get(), nullptr);
    m.use_gpu(0);
    const uint64_t start = at(3 + phase);
    m.set_measuring(true, start);
    m.set_measuring(false, start + 300'000);
    m.fetch_driver_samples();
    const auto s = summary(m.metrics(nullptr, 1.0));
    CHECK(s.at("monitor_gpu_util_samples") >= 1);
    CHECK(s.at("monitor_gpu_device_util_mean") == 70);
    CHECK(s.count("monitor_gpu_util_window_too_short") == 0);
  }
}

TEST_CASE("without driver samples, the polled readings stand in as before", "[host]") {
  Env env{{"FAKE_NVML_SAMPLE_VALUES", "unsupported"}};
  auto nvml = fake_nvml();
  TrialMonitor m(0, nvml.get(), nullptr);
  m.use_gpu(1);
  m.set_measuring(true);
  m.sample();
  m.set_measuring(false);
  const auto s = summary(m.metrics(nullptr, 1.0));
  CHECK(s.at("monitor_gpu_device_util_mean") == 95);
  CHECK(s.count("monitor_gpu_util_samples") == 0);
  CHECK(s.count("monitor_gpu_util_window_too_short") == 0);  // nothing to say it about
}

TEST_CASE("the trial process's own GPU memory is recorded, not another's", "[host]") {
  auto nvml = fake_nvml();
  {
    // The fake always lists process 1 with 1 GiB.
    Env env{{"FAKE_NVML_PROCESS_PID", "4242"},
            {"FAKE_NVML_PROCESS_MEMORY", std::to_string(3ULL << 30)}};
    CHECK(nvml->process_memory_bytes(0, 4242) == 3.0 * (1ULL << 30));
    CHECK(nvml->process_memory_bytes(0, 1) == 1.0 * (1ULL << 30));
    CHECK_FALSE(nvml->process_memory_bytes(0, 777));
    TrialMonitor m(4242, nvml.get(), nullptr);
    m.use_gpu(1);
    m.sample();
    const auto s = summary(m.metrics(nullptr, 1.0));
    CHECK(s.at("monitor_gpu_process_memory_peak_bytes") == 3.0 * (1ULL << 30));
  }
  TrialMonitor absent(4242, nvml.get(), nullptr);
  absent.use_gpu(1);
  absent.sample();
  CHECK(summary(absent.metrics(nullptr, 1.0)).count("monitor_gpu_process_memory_peak_bytes") == 0);
}

TEST_CASE("the driver's clock is told from its stamps: a boot-time clock's samples still land",
          "[host]") {
  // The clock reads: the wall clock about 2026, up 10 days of which 9 were
  // suspended (boot time counts them, the monotonic clock does not).
  const int64_t wall = 1'795'000'000'000'000, boot = 864'000'000'000, mono = 86'400'000'000;
  CHECK(driver_clock_of(wall - 500'000, wall, boot, mono) ==
        std::make_pair(DriverClock::wall, int64_t{0}));
  CHECK(driver_clock_of(boot - 500'000, wall, boot, mono) ==
        std::make_pair(DriverClock::boottime, wall - boot));
  CHECK(driver_clock_of(mono - 500'000, wall, boot, mono).first == DriverClock::monotonic);
  // Suspended an hour only: both within a day of the stamp, the nearer wins.
  CHECK(driver_clock_of(mono - 500'000, wall, mono + 3'600'000'000, mono).first ==
        DriverClock::monotonic);
  // Neither (the fixtures' year-2001 stamps): taken as the wall clock.
  CHECK(driver_clock_of(kT0, wall, boot, mono) == std::make_pair(DriverClock::unknown, int64_t{0}));

  // The fake driver stamps on CLOCK_BOOTTIME: samples 2 s, 1.5 s, 1 s and
  // 0.5 s ago (10, 20, 30, 40). A window on the wall clock from 1.25 s to
  // 0.75 s ago holds the third alone; compared as they come, no boot-time
  // stamp would fall in a wall-clock window.
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  const int64_t boot_now = static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
  const auto wall_now = static_cast<int64_t>(wall_clock_us());
  Env env{{"FAKE_NVML_SAMPLE_VALUES", "10,20,30,40"},
          {"FAKE_NVML_SAMPLE_T0_US", std::to_string(boot_now - 2'000'000)},
          {"FAKE_NVML_SAMPLE_PERIOD_US", "500000"}};
  auto nvml = fake_nvml();
  TrialMonitor m(0, nvml.get(), nullptr);
  m.use_gpu(0);
  m.set_measuring(true, static_cast<uint64_t>(wall_now - 1'250'000));
  m.set_measuring(false, static_cast<uint64_t>(wall_now - 750'000));
  m.fetch_driver_samples();
  const auto s = summary(m.metrics(nullptr, 1.0));
  // On a machine never suspended the boot-time and monotonic clocks agree to
  // the microsecond, and the nearer of the two is a coin toss: either names
  // the stamps' clock rightly there, and the samples land the same.
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  const int64_t mono_now = static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
  const double clock = s.at("monitor_gpu_sample_clock");
  if (boot_now - mono_now > 1'000'000) {
    CHECK(clock == static_cast<double>(DriverClock::boottime));
  } else {
    CHECK((clock == static_cast<double>(DriverClock::boottime) ||
           clock == static_cast<double>(DriverClock::monotonic)));
  }
  CHECK(s.at("monitor_gpu_util_samples") == 1);
  CHECK(s.at("monitor_gpu_device_util_mean") == 30);
}

TEST_CASE("every stat the monitor writes is in the host's stats table", "[host]") {
  Env env{{"FAKE_NVML_SAMPLE_VALUES", "5,90,80,5"},
          {"FAKE_NVML_SAMPLE_T0_US", std::to_string(kT0)}};
  auto nvml = fake_nvml();
  TrialMonitor m(0, nvml.get(), nullptr);
  m.use_gpu(0);
  m.sample();
  m.set_measuring(true, at(0.5));
  m.sample();
  m.set_measuring(false, at(2.5));
  m.fetch_driver_samples();
  int n = 0;
  for (const auto& s : m.metrics(nullptr, 2.0)) {
    INFO(s.name);
    CHECK(find_host_stat(s.name) != nullptr);
    ++n;
  }
  CHECK(n > 10);  // the CPU's and the GPU's figures, and their timelines
}
