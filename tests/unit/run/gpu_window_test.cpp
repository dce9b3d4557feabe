// How many trials take turns on a GPU under interleave "auto": a probe's
// footprint by NVML against the device's free memory (the fake NVML's GPU 0:
// 40 GiB, 12 GiB used; GPU 1: 3 GiB used).
#include "run/gpu_window.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep::host;
using Catch::Matchers::Contains;

namespace {

std::vector<gpusweep::db::MetricSample> probe(std::optional<double> footprint, double gpu) {
  std::vector<gpusweep::db::MetricSample> m = {{"stat", 0, "monitor_gpu_index", gpu}};
  if (footprint) m.push_back({"stat", 0, "monitor_gpu_process_memory_peak_bytes", *footprint});
  return m;
}

constexpr double kGiB = 1024.0 * 1024 * 1024;

}  // namespace

TEST_CASE("as many trials take turns on a GPU as its free memory holds, less a margin", "[host]") {
  std::string why;
  auto nvml = Nvml::load(GPUSWEEP_FAKE_NVML, &why);
  REQUIRE(nvml);
  // 1.3 GiB a trial (the quickstart's on an H100): 28 GiB free, 80% of it
  // holds 17; the sweep's 4 configs take turns.
  GpuWindow w = gpu_window(probe(1.3 * kGiB, 0), nvml.get(), 4);
  CHECK(w.window == 4);
  CHECK_THAT(w.note, Contains("4 trials at a time") && Contains("1.30 GiB") &&
                         Contains("GiB free") && Contains("20% of it kept free"));
  // Never more than kAutoInterleave, however many configs and however small.
  CHECK(gpu_window(probe(0.1 * kGiB, 0), nvml.get(), 30).window == kAutoInterleave);
  // 10 GiB a trial: two fit in 22.4 GiB on GPU 0, three on GPU 1 (37 GiB free).
  CHECK(gpu_window(probe(10 * kGiB, 0), nvml.get(), 4).window == 2);
  CHECK(gpu_window(probe(10 * kGiB, 1), nvml.get(), 4).window == 2);
  CHECK(gpu_window(probe(9 * kGiB, 1), nvml.get(), 4).window == 3);
  // 30 GiB: one at a time, and why.
  w = gpu_window(probe(30 * kGiB, 0), nvml.get(), 4);
  CHECK(w.window == 1);
  CHECK_THAT(w.note, Contains("two do not fit"));
}

TEST_CASE("without NVML's figure of the probe's own process, trials run one after another",
          "[host]") {
  std::string why;
  auto nvml = Nvml::load(GPUSWEEP_FAKE_NVML, &why);
  REQUIRE(nvml);
  GpuWindow w = gpu_window(probe(std::nullopt, 0), nvml.get(), 4);
  CHECK(w.window == 1);
  CHECK_THAT(w.note, Contains("no GPU memory of its own process"));
  CHECK(gpu_window(probe(1 * kGiB, 0), nullptr, 4).window == 1);
}

TEST_CASE("the footprint probe is short, unrecorded in rounds, with blocks sized by time",
          "[host]") {
  MeasureSpec m;
  m.warmup_steps = 100;
  m.blocks = 20;
  m.repeats = 3;
  m.precision = 0.01;
  m.stable_warmup = true;
  const MeasureSpec p = footprint_probe_measure(m);
  CHECK(p.warmup_steps == 5);
  CHECK(p.blocks == 5);
  CHECK(p.block_s == 0.25);  // blocks by time: a second or so measured, a few NVML samples
  CHECK(p.precision == 0);
  CHECK_FALSE(p.stable_warmup);
  // It reads back as the worker will read it.
  CHECK(MeasureSpec::from_json(p.to_json(), "probe").block_s == p.block_s);
}
