// doctor's text view of its findings.
#include "report/doctor_view.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep::host;
using Catch::Matchers::Contains;

TEST_CASE("doctor's text form shows every finding of its JSON document", "[host]") {
  const nlohmann::json doc = {
      {"machine",
       {{"cpu", "Test CPU"}, {"logical_cores", 2}, {"physical_cores", 1}, {"kernel", "Linux 6"}}},
      {"libtorch",
       {{"probed", true},
        {"plugin", "dqn"},
        {"version", "2.15.0"},
        {"cuda_build", true},
        {"cuda", "13.2"},
        {"cudnn", "9.26"},
        {"library", "/x/libtorch_cpu.so"},
        {"cpu_capability", "AVX2"},
        {"threads", 2},
        {"interop_threads", 2},
        {"blas", {{"name", "mkl"}, {"path", "linked into /x/libtorch_cpu.so"}}}}},
      {"cuda",
       {{"toolkit", "13.0"},
        {"driver", ""},
        {"verdict", "no NVIDIA driver, no GPU: x"},
        {"nvml", {{"loaded", false}, {"why", "libnvidia-ml.so.1: not found"}}}}},
      {"plugins", nlohmann::json::array({{{"name", "dqn"},
                                          {"loads", true},
                                          {"version", "1.0.0"},
                                          {"abi", "1.0"},
                                          {"torch_version", "2.15.0"},
                                          {"file", "/p/gpusweep_dqn.so"}}})},
      {"warnings", {"w1"}},
      {"problems", nlohmann::json::array()}};
  const std::string text = render_doctor(doc, false);
  CHECK_THAT(text, Contains("2.15.0, CUDA build (for CUDA 13.2, cuDNN 9.26)") &&
                       Contains("/x/libtorch_cpu.so") && Contains("AVX2") &&
                       Contains("mkl (linked into") && Contains("CUDA 13.0 (the headers") &&
                       Contains("driver        none") && Contains("no NVIDIA driver, no GPU") &&
                       Contains("libnvidia-ml.so.1: not found") && Contains("gpusweep_dqn.so") &&
                       Contains("warning: w1") && Contains("ready to sweep (1 warning(s) above)"));
}
