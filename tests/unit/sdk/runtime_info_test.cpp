// The runtime report's one definition: what torchkit writes reads back into
// the same JSON, the fields the host reads are typed, and what the struct
// does not name is kept.
#include <gpusweep/runtime_info.hpp>

#include <catch2/catch.hpp>

using gpusweep::RuntimeCuda;
using gpusweep::RuntimeInfo;
using Json = nlohmann::json;

TEST_CASE("a torchkit runtime report reads into its fields and writes back the same", "[sdk]") {
  const Json report = {
      {"torch_version", "2.15.0"},
      {"torch_library", "/venv/torch/lib/libtorch_cpu.so"},
      {"cpu_capability", "AVX512"},
      {"cuda_build", true},
      {"cuda",
       {{"torch_cuda", "13.0"}, {"torch_cudnn", "9.10"}, {"toolkit", "13.0"}, {"driver_cuda", ""}}},
      {"cuda_available", false},
      {"blas", "mkl"},
      {"threads", 2},
      {"interop_threads", 2},
      {"devices", Json::array()},
      {"python_packages", {{"transformers", "4.57.1"}}},
      {"a_plugins_own", {{"x", 1}}}};
  const auto r = RuntimeInfo::from_json(report);
  CHECK(r.torch_version == "2.15.0");
  CHECK(r.cuda_build == true);
  REQUIRE(r.cuda);
  CHECK(r.cuda->torch_cudnn == "9.10");
  CHECK(r.cuda->driver_cuda == "");
  CHECK(r.threads == 2);
  CHECK(r.devices == Json::array());
  CHECK(r.python_packages->at("transformers") == "4.57.1");
  CHECK_FALSE(r.python_interpreter);
  CHECK(r.extra == Json{{"a_plugins_own", {{"x", 1}}}});
  CHECK(r.to_json() == report);
}

TEST_CASE("a runtime field of the wrong type reads as missing and is kept as it came", "[sdk]") {
  const Json report = {{"threads", "two"}, {"cuda_available", 1}, {"cuda", "none"}};
  const auto r = RuntimeInfo::from_json(report);
  CHECK_FALSE(r.threads);
  CHECK_FALSE(r.cuda_available);
  CHECK_FALSE(r.cuda);
  CHECK(r.extra == report);
  CHECK(r.to_json() == report);
  // A report that is not an object (a plugin's unparsable runtime()) reads as empty.
  CHECK(RuntimeInfo::from_json("not json").to_json() == Json::object());
  // What a workload sets is what it writes: nothing set, nothing written.
  RuntimeInfo only;
  only.cuda = RuntimeCuda{};
  only.counts_flops = true;
  CHECK(only.to_json() == Json{{"cuda", Json::object()}, {"counts_flops", true}});
}
