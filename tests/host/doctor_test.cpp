// doctor's reading of a LibTorch process: which BLAS its mapped libraries
// are (from simulated /proc/PID/maps lists), and the CPU.
#include "doctor.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep::host;
using Catch::Matchers::Contains;

TEST_CASE("Debian's reference BLAS is flagged with the fix", "[host]") {
  const std::vector<std::string> libs = {
      "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13",
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
  const BlasVerdict both = classify_blas({"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3",
                                          "/usr/lib/x86_64-linux-gnu/libopenblas.so.0"},
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
