// doctor's reading of a LibTorch process: which BLAS its mapped libraries
// are (from simulated /proc/PID/maps lists), and the CPU.
#include "analysis/doctor.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep::host;
using Catch::Matchers::Contains;
using gpusweep::RuntimeInfo;

TEST_CASE("Debian's reference BLAS is flagged with the fix", "[host]") {
  const std::vector<std::string> libs = {"/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13",
                                         "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0",
                                         "/usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3.11.0",
                                         "/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0"};
  const BlasVerdict v = classify_blas(libs, "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0");
  CHECK(v.name == "reference");
  CHECK(v.slow);
  CHECK(v.path == "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0");
  CHECK_THAT(v.warning, Contains("apt-get install libopenblas0-openmp"));
}

TEST_CASE("an unresolved libblas.so.3 is judged by the alternative it points at", "[host]") {
  const std::vector<std::string> libs = {"/usr/lib/x86_64-linux-gnu/libblas.so.3"};
  CHECK(classify_blas(libs, "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3").slow);
  const BlasVerdict ok =
      classify_blas(libs, "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3");
  CHECK(ok.name == "openblas-pthread");
  CHECK_FALSE(ok.slow);
  CHECK(ok.warning.empty());
}

TEST_CASE("optimised BLAS libraries are named and not flagged", "[host]") {
  CHECK(classify_blas({"/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3"}, "").name ==
        "openblas-openmp");
  CHECK(classify_blas({"/opt/intel/lib/libmkl_rt.so.2"}, "").name == "mkl");
  // Both mapped: the optimised one serves the calls it exports.
  const BlasVerdict both = classify_blas(
      {"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3", "/usr/lib/x86_64-linux-gnu/libopenblas.so.0"},
      "");
  CHECK(both.name == "openblas");
  CHECK_FALSE(both.slow);
  CHECK(classify_blas({"/usr/lib/libc.so.6"}, "").name == "unknown");
}

TEST_CASE("mapped libraries are read from /proc/PID/maps text, each once", "[host]") {
  const std::string maps =
      "55d0c000-55d0d000 r--p 00000000 08:01 123 /usr/bin/gpusweep\n"
      "7f00-7f01 r--p 00000000 08:01 456 /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3\n"
      "7f01-7f02 r-xp 00001000 08:01 456 /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3\n"
      "7f02-7f03 rw-p 00000000 00:00 0 [heap]\n"
      "7f03-7f04 r-xp 00000000 08:01 789 /tmp/gpusweep_x.so (deleted)\n";
  const auto libs = mapped_libraries(maps);
  REQUIRE(libs.size() == 2);
  CHECK(libs[0] == "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3");
  CHECK(libs[1] == "/tmp/gpusweep_x.so");
}

TEST_CASE("cpuinfo gives the model and logical and physical cores", "[host]") {
  const std::string text =
      "processor\t: 0\nmodel name\t: Test CPU @ 3.0GHz\nphysical id\t: 0\ncore id\t: 0\n\n"
      "processor\t: 1\nmodel name\t: Test CPU @ 3.0GHz\nphysical id\t: 0\ncore id\t: 0\n\n"
      "processor\t: 2\nmodel name\t: Test CPU @ 3.0GHz\nphysical id\t: 0\ncore id\t: 1\n\n";
  const CpuInfo c = parse_cpuinfo(text);
  CHECK(c.model == "Test CPU @ 3.0GHz");
  CHECK(c.logical == 3);
  CHECK(c.physical == 2);
}

namespace {

RuntimeInfo cuda_runtime(const std::string& built_for, const std::string& driver, int devices) {
  nlohmann::json rt = {{"cuda_build", true},
                       {"cuda",
                        {{"torch_cuda", built_for},
                         {"torch_cudnn", "9.26"},
                         {"toolkit", "13.0"},
                         {"driver_cuda", driver}}},
                       {"devices", nlohmann::json::array()}};
  for (int i = 0; i < devices; ++i) {
    rt["devices"].push_back({{"index", i}, {"name", "Test GPU"}, {"memory_bytes", 8e9}});
  }
  return RuntimeInfo::from_json(rt);
}

}  // namespace

TEST_CASE("doctor: a CUDA build without a driver runs device=auto on the CPU", "[host]") {
  const CudaVerdict v = judge_cuda(cuda_runtime("13.2", "", 0), -1);
  CHECK_THAT(v.summary, Contains("no NVIDIA driver, no GPU") && Contains("CUDA 13.2") &&
                            Contains("run on the CPU") && Contains("fp16"));
  CHECK(v.problems.empty());
  CHECK(v.warnings.empty());
}

TEST_CASE("doctor: a wheel built for a newer CUDA major than the driver is a problem with the fix",
          "[host]") {
  const CudaVerdict v = judge_cuda(cuda_runtime("13.2", "12.4", 1), 1);
  REQUIRE(v.problems.size() == 1);
  CHECK_THAT(v.problems[0], Contains("built for CUDA 13.2") && Contains("supports CUDA 12.4") &&
                                Contains("install a driver for CUDA 13.x") &&
                                Contains("torch built for CUDA 12.x"));
  // A newer minor only: minor-version compatibility, a warning.
  const CudaVerdict minor = judge_cuda(cuda_runtime("13.2", "13.0", 1), 1);
  CHECK(minor.problems.empty());
  REQUIRE(minor.warnings.size() == 1);
  CHECK_THAT(minor.warnings[0], Contains("minor-version compatibility"));
  // A driver as new as the build: fine, and device=auto takes cuda:0.
  const CudaVerdict ok = judge_cuda(cuda_runtime("13.2", "13.2", 2), 2);
  CHECK(ok.problems.empty());
  CHECK(ok.warnings.empty());
  CHECK_THAT(ok.summary, Contains("2 CUDA device(s)") && Contains("cuda:0 (Test GPU)"));
}

TEST_CASE("doctor: GPUs that a CPU-only LibTorch cannot use are flagged", "[host]") {
  const auto cpu_only = RuntimeInfo::from_json({{"cuda_build", false}});
  CHECK(judge_cuda(cpu_only, -1).warnings.empty());
  const CudaVerdict v = judge_cuda(cpu_only, 4);
  CHECK_THAT(v.summary, Contains("CPU-only build"));
  REQUIRE(v.warnings.size() == 1);
  CHECK_THAT(v.warnings[0], Contains("NVML sees 4 GPU(s)") && Contains("install-deps.sh"));
}

TEST_CASE("doctor judges LibTorch: thread advice, MKL linked in, a missing matmul probe",
          "[analysis]") {
  CpuInfo cpu;
  cpu.logical = 8;
  const auto runtime = RuntimeInfo::from_json({{"torch_version", "2.15.0"},
                                               {"threads", 4},
                                               {"blas", "mkl"},
                                               {"torch_library", "/t/libtorch_cpu.so"}});
  const Json probe = {{"libraries", {"/t/libtorch_cpu.so", "/t/libgomp.so.1"}}};
  DoctorFindings f;
  judge_libtorch(f, "dqn", runtime, probe, "", 2.0, cpu, "");
  const Json& lt = f.doc.at("libtorch");
  CHECK(lt.at("plugin") == "dqn");
  CHECK_THAT(lt.at("threads_advice").get<std::string>(), Contains("4 of the 8 logical cores"));
  CHECK(lt.at("blas").at("name") == "mkl");
  CHECK(lt.at("blas").at("path") == "linked into /t/libtorch_cpu.so");
  CHECK(lt.at("openmp") == "/t/libgomp.so.1");
  CHECK_THAT(lt.at("matmul_note").get<std::string>(), Contains("without torchkit's probe"));
  CHECK(f.warnings.empty());
  CHECK(f.finish().at("ready") == true);
}

TEST_CASE("doctor: a failed probe or no LibTorch plugin makes the machine not ready",
          "[analysis]") {
  DoctorFindings failed;
  judge_libtorch(failed, "dqn", RuntimeInfo::from_json({{"torch_version", "2.15.0"}}), nullptr,
                 "killed by SIGSEGV", 0, CpuInfo{}, "");
  CHECK(failed.doc.at("libtorch").at("probe_error") == "killed by SIGSEGV");
  CHECK(failed.finish().at("ready") == false);
  CHECK_THAT(failed.problems.front(), Contains("LibTorch probe failed: killed by SIGSEGV"));

  DoctorFindings none;
  judge_libtorch(none, "", RuntimeInfo{}, nullptr, "", 0, CpuInfo{}, "");
  CHECK(none.doc.at("libtorch").at("probed") == false);
  CHECK(none.finish().at("problems").size() == 1);
}

TEST_CASE("doctor: a Python whose torch is another build than the plugins' is a problem",
          "[analysis]") {
  const auto runtime = RuntimeInfo::from_json(
      {{"torch_version", "2.15.0"},
       {"torch_library", "/venv/lib/python3.11/site-packages/torch/lib/x.so"},
       {"cuda", {{"torch_cuda", "13.2"}}}});
  auto probe = [](const std::string& version, const std::string& cuda) {
    return Json{{"version", "3.11.2"},
                {"torch", {{"version", version}, {"cuda", cuda}, {"lib", "/other/torch/lib"}}},
                {"packages", {{"transformers", "5.24.0"}}}};
  };
  // Another copy of the very build: the embedded import reuses the loaded one.
  DoctorFindings copy;
  judge_python(copy, "/other/bin/python3", probe("2.15.0+cu132", "13.2"), "", runtime);
  CHECK_THAT(copy.doc.at("python").at("verdict").get<std::string>(),
             Contains("ready: its torch 2.15.0+cu132 (/other/torch/lib) is another copy"));
  CHECK(copy.problems.empty());
  // Another version, or the same version for another CUDA: two builds in one process.
  const std::vector<std::pair<std::string, std::string>> others = {{"2.14.0+cu128", "12.8"},
                                                                   {"2.15.0+cu128", "12.8"}};
  for (const auto& [version, cuda] : others) {
    DoctorFindings other;
    judge_python(other, "/other/bin/python3", probe(version, cuda), "", runtime);
    REQUIRE(other.problems.size() == 1);
    CHECK_THAT(other.problems.front(),
               Contains("its torch " + version + " (CUDA " + cuda +
                        ") is not the LibTorch the plugins load (2.15.0, CUDA 13.2)"));
    CHECK(other.finish().at("ready") == false);
  }
  DoctorFindings broken;
  judge_python(broken, "/nowhere/python3", nullptr, "it exited with status 127", runtime);
  CHECK_THAT(broken.problems.front(), Contains("does not run (it exited with status 127)"));
}
