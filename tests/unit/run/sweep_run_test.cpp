// How a run plans its interleaving (run/sweep_run.hpp): whether configs take
// turns, and how their trials start.
#include "run/sweep_run.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep::host;
using Catch::Matchers::Contains;

TEST_CASE("configs running more than one thread do not take turns unless asked", "[host]") {
  MeasureSpec m;
  auto configs = [](int a, int b) {
    return std::vector<nlohmann::json>{{{"device", "cpu"}, {"threads", a}, {"seed", 0}},
                                       {{"device", "cpu"}, {"threads", b}, {"seed", 1}}};
  };
  // One thread each: taking turns costs a block little.
  CHECK(plan_interleave(m, configs(1, 1), 0).interleave.window == 2);
  // threads 2, or 0 (LibTorch's default: a thread per core): one after another.
  for (const auto& c : {configs(1, 2), configs(0, 0)}) {
    const auto plan = plan_interleave(m, c, 0);
    CHECK(plan.interleave.window <= 1);
    CHECK_THAT(plan.note, Contains("multi-threaded") && Contains("measure.interleave"));
  }
  m.interleave = 2;  // asked for: as asked
  CHECK(plan_interleave(m, configs(1, 2), 0).interleave.window == 2);
}

TEST_CASE("measure.starts: parallel on a GPU by default, serial on a CPU, as asked otherwise",
          "[host]") {
  MeasureSpec m;
  m.interleave = 2;
  const std::vector<nlohmann::json> cpu = {{{"device", "cpu"}, {"seed", 0}},
                                           {{"device", "cpu"}, {"seed", 1}}};
  const std::vector<nlohmann::json> gpu = {{{"device", "cuda"}, {"seed", 0}},
                                           {{"device", "cuda"}, {"seed", 1}}};
  CHECK_FALSE(plan_interleave(m, cpu, 0).interleave.parallel_starts);
  const auto on_gpu = plan_interleave(m, gpu, 1);
  CHECK(on_gpu.interleave.parallel_starts);
  CHECK_THAT(on_gpu.note, Contains("all at once between cycles"));
  m.starts = MeasureSpec::Starts::parallel;
  CHECK(plan_interleave(m, cpu, 0).interleave.parallel_starts);
  m.starts = MeasureSpec::Starts::serial;
  CHECK_FALSE(plan_interleave(m, gpu, 1).interleave.parallel_starts);
  CHECK_THAT(plan_interleave(m, gpu, 1).note, !Contains("all at once"));
}
