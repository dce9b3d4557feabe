// The NVML loader against a fake libnvidia-ml.so.1 built in the test tree,
// and the trial monitor's summary of readings.
#include "support/nvml.hpp"
#include "monitor_samples.hpp"
#include "protocol/events.hpp"
#include "run/monitor.hpp"
#include "run/sweep_run.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>

using namespace gpusweep::host;
using Catch::Matchers::Contains;
using gpusweep::test::summary;

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
  // The UUID, as CUDA_VISIBLE_DEVICES takes it (run --gpus hands these out).
  CHECK(g->uuid == "GPU-00000000-0000-0000-0000-000000000001");
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
  TrialMonitor m(/*pid=*/0, nvml.get(), nullptr);
  m.use_gpu(1);
  m.set_measuring(true);
  for (int i = 0; i < 4; ++i) m.add_gpu_reading(*nvml->sample(1));
  auto s = summary(m.metrics(nullptr, 2.0));
  CHECK(s.at("monitor_gpu_device_util_mean") == 95);
  CHECK(s.at("monitor_gpu_device_memory_used_peak_bytes") == 3.0 * (1ULL << 30));
  CHECK(s.at("monitor_gpu_sm_clock_max_mhz") == 1980);
  CHECK(s.at("monitor_gpu_throttled") == 1);
  CHECK(s.at("monitor_gpu_power_peak_w") == 250);

  TrialMonitor steady(0, nvml.get(), nullptr);
  steady.use_gpu(0);
  steady.set_measuring(true);
  for (int i = 0; i < 4; ++i) steady.add_gpu_reading(*nvml->sample(0));
  CHECK(summary(steady.metrics(nullptr, 2.0)).at("monitor_gpu_throttled") == 0);
}

TEST_CASE("CPU readings become utilisation in cores and a peak RSS", "[host]") {
  TrialMonitor m(0, nullptr, nullptr);
  m.add_cpu_reading(0.0, 0.0, 100e6);
  m.add_cpu_reading(0.5, 0.5, 300e6);  // one core busy
  m.add_cpu_reading(1.0, 1.5, 200e6);  // two cores busy
  auto s = summary(m.metrics(nullptr, 1.0));
  CHECK(s.at("monitor_cpu_util_peak") == Approx(2.0));
  CHECK(s.at("monitor_cpu_util_mean") == Approx(1.5));
  CHECK(s.at("monitor_rss_peak_bytes") == 300e6);
  CHECK(s.count("monitor_gpu_device_util_mean") == 0);
}

TEST_CASE("the GPU a trial uses is found by the bus id its worker reports", "[host]") {
  using nlohmann::json;
  // CUDA_VISIBLE_DEVICES=1,0: the trial's cuda:0 is the machine's second GPU.
  const json runtime = {{"cuda_available", true},
                        {"devices",
                         {{{"index", 0}, {"pci_bus_id", "0000:65:00.0"}},
                          {{"index", 1}, {"pci_bus_id", "0000:17:00.0"}}}}};
  CHECK(trial_gpu_bus_id({{"device", "cuda:0"}}, runtime) == "0000:65:00.0");
  CHECK(trial_gpu_bus_id({{"device", "cuda:1"}}, runtime) == "0000:17:00.0");
  CHECK(trial_gpu_bus_id({{"device", "auto"}}, runtime) == "0000:65:00.0");
  CHECK(trial_gpu_bus_id(json::object(), runtime) == "0000:65:00.0");  // no device key: auto
  CHECK_FALSE(trial_gpu_bus_id({{"device", "cuda:2"}}, runtime));
  CHECK_FALSE(trial_gpu_bus_id({{"device", "cpu"}}, runtime));
  // auto on a machine (or a LibTorch) without CUDA is a CPU trial: no GPU.
  CHECK_FALSE(trial_gpu_bus_id({{"device", "auto"}}, {{"cuda_available", false}}));
  // A plugin that reports no devices: nothing to sample, never "GPU 0".
  CHECK_FALSE(trial_gpu_bus_id({{"device", "cuda:0"}}, json::object()));

  std::string why;
  auto nvml = Nvml::load(GPUSWEEP_FAKE_NVML, &why);
  REQUIRE(nvml);
  CHECK(nvml->index_of_pci_bus_id("0000:65:00.0") == 1U);  // CUDA's 4-digit domain
  CHECK(nvml->index_of_pci_bus_id("00000000:17:00.0") == 0U);
  CHECK_FALSE(nvml->index_of_pci_bus_id("0000:99:00.0"));

  // The monitor binds that device from the worker's runtime event.
  TrialMonitor m(0, nvml.get(), {{"device", "cuda:0"}});
  m.on_event(gpusweep::host::event::decode({{"event", "runtime"}, {"runtime", runtime}}));
  m.on_event(gpusweep::host::event::decode({{"event", "phase"}, {"phase", "measure"}}));
  m.sample();  // pid 0: no /proc reading, the GPU one only
  const auto s = summary(m.metrics(nullptr, 1.0));
  CHECK(s.at("monitor_gpu_index") == 1);
  CHECK(s.at("monitor_gpu_device_util_mean") == 95);  // device 1's, not device 0's 87
}

TEST_CASE("GPU figures cover the measured phase only, the timeline everything", "[host]") {
  TrialMonitor m(0, nullptr, nullptr);
  m.use_gpu(0);
  gpusweep::host::GpuSample setup{10.0, 1e9, {}, {}, {}};
  gpusweep::host::GpuSample busy{90.0, 5e9, {}, {}, {}};
  gpusweep::host::GpuSample evaluating{30.0, 8e9, {}, {}, {}};
  m.add_gpu_reading(setup);  // before the first "measure" phase
  m.on_event(gpusweep::host::event::decode({{"event", "phase"}, {"phase", "measure"}}));
  m.add_gpu_reading(busy);
  m.add_gpu_reading(busy);
  m.on_event(gpusweep::host::event::decode({{"event", "phase"}, {"phase", "evaluate"}}));
  m.add_gpu_reading(evaluating);
  const auto rows = m.metrics(nullptr, 1.0);
  const auto s = summary(rows);
  CHECK(s.at("monitor_gpu_device_util_mean") == 90);
  CHECK(s.at("monitor_gpu_device_memory_used_peak_bytes") == 5e9);  // not evaluation's 8e9
  CHECK(s.at("monitor_gpu_samples_measured") == 2);
  size_t timeline = 0;
  for (const auto& r : rows) timeline += r.name == "monitor_timeline_gpu_device_util" ? 1 : 0;
  CHECK(timeline == 4);
}

TEST_CASE("without NVML, the driver's device nodes tell that auto means a GPU", "[host]") {
  gpusweep::test::TempDir dev("gpusweep_dev");
  for (const char* node : {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "null"}) {
    std::ofstream(dev.file(node)) << "";
  }
  ::setenv("GPUSWEEP_DEV_DIR", dev.path.c_str(), 1);
  CHECK(nvidia_device_nodes() == 2);  // nvidiactl and nvidia-uvm are not GPUs
  // A run of `auto` configs on such a machine does not take turns: each
  // waiting trial would hold a CUDA context and its memory.
  MeasureSpec m;
  const auto plan = plan_interleave(m,
                                    {nlohmann::json{{"device", "auto"}, {"seed", 0}},
                                     nlohmann::json{{"device", "auto"}, {"seed", 1}}},
                                    nvidia_device_nodes());
  CHECK(plan.interleave.window <= 1);
  CHECK_THAT(plan.note, Contains("does not interleave GPU trials"));
  std::filesystem::remove(dev.file("nvidia0"));
  std::filesystem::remove(dev.file("nvidia1"));
  CHECK(nvidia_device_nodes() == 0);
  ::unsetenv("GPUSWEEP_DEV_DIR");
}

TEST_CASE("the host's CPU while measured: readings measured throughout, not the whole life",
          "[host]") {
  TrialMonitor m(0, nullptr, nullptr);
  m.add_cpu_reading(0.0, 0.0, {});
  m.set_measuring(true, 1);
  m.add_cpu_reading(1.0, 0.9, {});  // began before the window: setup's 0.9 cores
  m.add_cpu_reading(2.0, 1.1, {});  // measured throughout: 0.2 cores
  m.set_measuring(false, 2);
  m.add_cpu_reading(3.0, 3.1, {});  // an evaluation on 2 cores
  const auto s = summary(m.metrics(nullptr, 3.0));
  CHECK(s.at("monitor_cpu_util_measured_mean") == Approx(0.2));
  CHECK(s.at("monitor_cpu_util_mean") == Approx(3.1 / 3));
}
