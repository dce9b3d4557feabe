// Which device a trial ran on, from its config and its worker's runtime.
#include "spec/device.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep::host;
using nlohmann::json;

TEST_CASE("a trial's device: cuda:N in the trial's numbering, auto by CUDA's presence", "[model]") {
  const json runtime = {{"cuda_available", true},
                        {"devices",
                         {{{"index", 0}, {"name", "A"}, {"compute_capability", "8.6"}},
                          {{"index", 1}, {"name", "B"}, {"compute_capability", "7.0"}}}}};
  CHECK(trial_device({{"device", "cuda:1"}}, runtime).info.at("name") == "B");
  CHECK(trial_device({{"device", "auto"}}, runtime).info.at("name") == "A");
  CHECK(trial_device(json::object(), runtime).cuda);  // no device setting: auto
  CHECK(compute_capability(trial_device({{"device", "cuda:0"}}, runtime)) == Approx(8.6));
  CHECK_FALSE(trial_device({{"device", "cpu"}}, runtime).cuda);
  CHECK_FALSE(trial_device({{"device", "auto"}}, {{"cuda_available", false}}).cuda);
  // A CUDA trial whose plugin reported no devices: CUDA, nothing known.
  const TrialDevice unknown = trial_device({{"device", "cuda:3"}}, runtime);
  CHECK(unknown.cuda);
  CHECK(unknown.info.empty());
  CHECK(compute_capability(unknown) == 0);
}
