// The LibTorch this build runs on, as `gpusweep doctor --format json` reports
// it from a plugin worker: wherever the CUDA toolkit is on the machine, the
// build must have compiled torchkit's and the plugins' CUDA paths against a
// CUDA LibTorch 2.x. A build that silently fell back to CPU-only (no
// GPUSWEEP_TORCH_CUDA) fails here.
#include "harness.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>

using Catch::Matchers::Contains;

namespace {

// Where the CUDA toolkit is, looked for as a user would: CUDAToolkit_ROOT,
// /usr/local/cuda, nvcc on PATH. Empty when absent.
std::string cuda_toolkit() {
  std::error_code ec;
  if (const char* root = std::getenv("CUDAToolkit_ROOT")) {
    if (std::filesystem::exists(std::string(root) + "/bin/nvcc", ec)) return root;
  }
  if (std::filesystem::exists("/usr/local/cuda/bin/nvcc", ec)) return "/usr/local/cuda";
  if (std::system("command -v nvcc > /dev/null 2>&1") == 0) return "nvcc on PATH";
  return "";
}

}  // namespace

TEST_CASE("doctor reports the LibTorch build: CUDA wherever the CUDA toolkit is present",
          "[integration][torch]") {
  // The build's plugins only (not the test fixtures, some of which are
  // broken on purpose).
  const auto r =
      gpusweep::test::run_shell(std::string("GPUSWEEP_PLUGIN_PATH='") + GPUSWEEP_PLUGIN_DIR +
                                "' '" + GPUSWEEP_BIN + "' doctor --format json --matmul-seconds 0");
  INFO(r.output);
  CHECK(r.code != -1);  // exited normally
  const auto doc = nlohmann::json::parse(r.output);
  const auto& lt = doc.at("libtorch");
  REQUIRE(lt.at("probed").get<bool>());
  // The version the build compiled against is the one the worker loaded.
  CHECK(lt.at("version").get<std::string>() == GPUSWEEP_TORCH_VERSION);
  CHECK(std::atoi(lt.at("version").get<std::string>().c_str()) >= 2);
  CHECK_FALSE(lt.at("library").get<std::string>().empty());
  CHECK_FALSE(lt.at("cpu_capability").get<std::string>().empty());
  CHECK(lt.at("blas").at("name").get<std::string>() != "unknown");

  const std::string toolkit = cuda_toolkit();
  INFO("CUDA toolkit: " << (toolkit.empty() ? "none" : toolkit));
  if (!toolkit.empty()) {
    CHECK(lt.at("cuda_build").get<bool>());
    CHECK_FALSE(lt.at("cuda").get<std::string>().empty());
    CHECK_FALSE(doc.at("cuda").at("toolkit").get<std::string>().empty());
  } else {
    WARN("no CUDA toolkit on this machine: the CUDA-build check does not apply");
  }
  // Without a driver, doctor says what that means for a sweep and is not
  // broken by it.
  if (lt.at("cuda_build").get<bool>() && doc.at("cuda").at("driver").get<std::string>().empty()) {
    CHECK_THAT(doc.at("cuda").at("verdict").get<std::string>(),
               Contains("no NVIDIA driver, no GPU") && Contains("run on the CPU"));
    CHECK(doc.at("ready").get<bool>());
  }
}

TEST_CASE("doctor says whether the Python that scripts run in has the plugins' torch",
          "[integration][torch][script]") {
  const std::string doctor = std::string("GPUSWEEP_PLUGIN_PATH='") + GPUSWEEP_PLUGIN_DIR + "' '" +
                             GPUSWEEP_BIN + "' doctor --format json --matmul-seconds 0";
  // The project's own environment: the torch gpusweep was built against.
  const auto ours = gpusweep::test::run_shell(doctor);
  INFO(ours.output);
  const auto doc = nlohmann::json::parse(ours.output);
  const auto& py = doc.at("python");
  CHECK_THAT(py.at("verdict").get<std::string>(), Contains("ready: its torch "));
  CHECK_THAT(py.at("torch").at("version").get<std::string>(),
             Contains(std::string(GPUSWEEP_TORCH_VERSION)));
  CHECK(py.at("packages").contains("transformers"));
  // Debian's own python3 has no torch: a script could not run in it, and
  // doctor says so with the fix.
  const auto debian = gpusweep::test::run_shell("GPUSWEEP_PYTHON=/usr/bin/python3 " + doctor);
  INFO(debian.output);
  CHECK(debian.code == 1);
  const auto bad = nlohmann::json::parse(debian.output);
  CHECK(bad.at("python").at("interpreter") == "/usr/bin/python3");
  CHECK_THAT(bad.at("python").at("verdict").get<std::string>(),
             Contains("it cannot import torch (ModuleNotFoundError"));
  CHECK_THAT(bad.at("problems").dump(), Contains("set GPUSWEEP_PYTHON to the bin/python3 of an "
                                                 "environment whose torch"));
}
