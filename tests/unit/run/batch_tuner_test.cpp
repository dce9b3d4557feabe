// tune-batch's request, built and checked without the CLI.
#include "run/batch_tuner.hpp"
#include "support/error.hpp"

#include "test_manifest.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep::host;
using Catch::Matchers::Contains;

namespace {

SweepSpec dqn_spec() {
  SweepSpec spec;
  spec.name = "tune-batch-dqn";
  spec.workload = "dqn";
  spec.measure.warmup_steps = 5;
  spec.measure.steps_per_block = 5;
  spec.measure.blocks = 10;
  return spec;
}

std::string refusal(const SweepSpec& spec, const SearchOptions& search) {
  try {
    batch_tune_request(spec, gpusweep::test::dqn_like_manifest(), search, 0);
  } catch (const gpusweep::UsageError& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("tune-batch's request: bounds from the manifest, a short probe protocol, the cap",
          "[run]") {
  SearchOptions search;
  search.min = 8;
  const BatchTuneRequest r =
      batch_tune_request(dqn_spec(), gpusweep::test::dqn_like_manifest(), search, 2.5e9);
  CHECK(r.search.max == 4096);  // the manifest's batch_size maximum
  CHECK(r.search.min == 8);
  CHECK(r.probe_measure.warmup_steps == 2);
  CHECK(r.probe_measure.steps_per_block == 2);
  CHECK(r.probe_measure.blocks == 5);
  CHECK(r.verify_measure.blocks == 10);
  CHECK(r.worker.max_memory_bytes == 2.5e9);
  CHECK(r.base_config.at("batch_size") == 64);  // the default until a probe sets it
}

TEST_CASE("tune-batch's request refuses bounds the workload cannot take, naming the option",
          "[run]") {
  SearchOptions search;
  search.max = 8192;
  CHECK_THAT(refusal(dqn_spec(), search),
             Contains("--max 8192: dqn accepts batch_size up to 4096"));
  search.max = 4;
  search.min = 8;
  CHECK_THAT(refusal(dqn_spec(), search), Contains("--max 4 is below --min 8"));
  search = {};
  search.margin = 0.95;
  CHECK_THAT(refusal(dqn_spec(), search), Contains("--margin 0.950"));
  SweepSpec fixed = dqn_spec();
  fixed.base["batch_size"] = 32;
  CHECK_THAT(refusal(fixed, {}), Contains("--set batch_size: tune-batch chooses the batch size"));
}
