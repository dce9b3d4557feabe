// One GPU per concurrent worker: which GPUs are visible (NVML by UUID,
// CUDA_VISIBLE_DEVICES, Slurm's binding), --gpus, and the assignment's
// refusals.
#include "spec/gpus.hpp"
#include "support/error.hpp"

#include <catch2/catch.hpp>

#include <functional>

using namespace gpusweep;
using namespace gpusweep::host;
using Catch::Matchers::Contains;
using Json = nlohmann::json;

namespace {

const std::vector<std::string> kFour = {"GPU-a", "GPU-b", "GPU-c", "GPU-d"};

std::vector<Json> configs(std::initializer_list<const char*> devices) {
  std::vector<Json> out;
  for (const char* d : devices) out.push_back(Json{{"device", d}, {"batch_size", 8}});
  return out;
}

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no refusal)";
}

}  // namespace

TEST_CASE("visible GPUs: NVML's by UUID, or the host's CUDA_VISIBLE_DEVICES", "[model][gpus]") {
  // Four GPUs in NVML, no CUDA_VISIBLE_DEVICES: named by UUID, which is the
  // same device whatever order CUDA numbers them in.
  CHECK(visible_gpus(nullptr, kFour) == kFour);
  // A GPU whose UUID NVML cannot give is named by its index.
  CHECK(visible_gpus(nullptr, {"GPU-a", ""}) == std::vector<std::string>{"GPU-a", "1"});
  CHECK(visible_gpus(nullptr, {}).empty());
  // Slurm's binding (--gpus-per-task) sets CUDA_VISIBLE_DEVICES: those, in
  // its order, whatever NVML sees.
  CHECK(visible_gpus("3,1", kFour) == std::vector<std::string>{"3", "1"});
  CHECK(visible_gpus(" GPU-c , MIG-x", kFour) == std::vector<std::string>{"GPU-c", "MIG-x"});
  // CUDA reads up to the first entry it cannot use; "" hides every GPU.
  CHECK(visible_gpus("2,-1,3", kFour) == std::vector<std::string>{"2"});
  CHECK(visible_gpus("", kFour).empty());
  CHECK(visible_gpus("NoDevFiles", kFour).empty());
}

TEST_CASE("run --gpus names visible GPUs by position", "[model][gpus]") {
  CHECK(select_gpus("all", kFour) == kFour);
  CHECK(select_gpus("2,0", kFour) == std::vector<std::string>{"GPU-c", "GPU-a"});
  CHECK(select_gpus("1-3", kFour) == std::vector<std::string>{"GPU-b", "GPU-c", "GPU-d"});
  CHECK(select_gpus("0, 2-3", kFour) == std::vector<std::string>{"GPU-a", "GPU-c", "GPU-d"});
  // Under Slurm's binding the positions count the bound GPUs: --gpus 1 is
  // the second of CUDA_VISIBLE_DEVICES=5,7, physical GPU 7.
  CHECK(select_gpus("1", visible_gpus("5,7", kFour)) == std::vector<std::string>{"7"});

  CHECK_THAT(refusal([] { select_gpus("4", kFour); }), Contains("GPU 4 does not exist") &&
                                                           Contains("4 GPU(s) visible") &&
                                                           Contains("3=GPU-d"));
  CHECK_THAT(refusal([] { select_gpus("0,x", kFour); }),
             Contains("'x' is not a GPU number") && Contains("--gpus 0,1"));
  CHECK_THAT(refusal([] { select_gpus("0,1-2,2", kFour); }), Contains("GPU 2 is named twice"));
  CHECK_THAT(refusal([] { select_gpus("3-1", kFour); }), Contains("runs backwards"));
  CHECK_THAT(refusal([] { select_gpus("all", {}); }), Contains("no GPU is visible"));
  CHECK_THAT(refusal([] { select_gpus("0", {}); }), Contains("no GPU is visible"));
}

TEST_CASE("one GPU per running trial, or a refusal that says why", "[model][gpus]") {
  const auto cuda = configs({"cuda", "auto"});
  SECTION("--jobs 2 on a 4-GPU machine: the first two, one each") {
    const auto a = assign_gpus(std::nullopt, kFour, 2, 1, cuda);
    CHECK(a.gpus == std::vector<std::string>{"GPU-a", "GPU-b"});
    CHECK_FALSE(a.shared);
    CHECK_THAT(a.note, Contains("one GPU per worker") && Contains("GPU-a,GPU-b"));
  }
  SECTION("--gpus chooses them, also with --jobs 1") {
    CHECK(assign_gpus(std::string("3"), kFour, 1, 1, cuda).gpus ==
          std::vector<std::string>{"GPU-d"});
    CHECK(assign_gpus(std::string("1,3"), kFour, 2, 1, cuda).gpus ==
          std::vector<std::string>{"GPU-b", "GPU-d"});
  }
  SECTION("--jobs 1 without --gpus leaves the environment alone") {
    CHECK(assign_gpus(std::nullopt, kFour, 1, 1, cuda).gpus.empty());
  }
  SECTION("more jobs than GPUs is refused") {
    CHECK_THAT(refusal([&] { assign_gpus(std::nullopt, kFour, 5, 1, cuda); }),
               Contains("--jobs 5 needs a GPU per running trial") && Contains("--jobs 4"));
    CHECK_THAT(refusal([&] { assign_gpus(std::string("0,1"), kFour, 3, 1, cuda); }),
               Contains("--gpus '0,1' names 2") && Contains("--jobs 2 or fewer"));
  }
  SECTION("cuda:N for N > 0 cannot mean anything when each worker sees one GPU") {
    CHECK_THAT(refusal([&] {
                 assign_gpus(std::nullopt, kFour, 2, 1, configs({"cuda:0", "cuda:2"}));
               }),
               Contains("device=cuda:2") && Contains("as cuda:0"));
    CHECK(assign_gpus(std::nullopt, kFour, 2, 1, configs({"cuda:0"})).gpus.size() == 2);
  }
  SECTION("interleaved trials share one GPU, one at a time") {
    const auto a = assign_gpus(std::string("2"), kFour, 1, 3, cuda);
    CHECK(a.gpus == std::vector<std::string>{"GPU-c"});
    CHECK(a.shared);
    CHECK_THAT(refusal([&] { assign_gpus(std::nullopt, kFour, 2, 3, cuda); }),
               Contains("measure.interleave 3") && Contains("--jobs 1"));
  }
  SECTION("CPU trials get no GPU; auto is CPU where none is visible") {
    CHECK(assign_gpus(std::nullopt, kFour, 2, 1, configs({"cpu"})).gpus.empty());
    CHECK(assign_gpus(std::nullopt, {}, 2, 1, configs({"auto"})).gpus.empty());
    const auto a = assign_gpus(std::string("0"), kFour, 1, 1, configs({"cpu"}));
    CHECK(a.gpus.empty());
    CHECK_THAT(a.note, Contains("nothing to do"));
    CHECK_THAT(refusal([] { assign_gpus(std::string("0"), {}, 1, 1, configs({"auto"})); }),
               Contains("no GPU is visible"));
  }
  SECTION("cuda trials with no GPU list: one at a time is left to run (or skip with its reason)") {
    CHECK(assign_gpus(std::nullopt, {}, 1, 1, configs({"cuda"})).gpus.empty());
  }
  SECTION("--jobs > 1 on cuda with no GPU list (no NVML) is refused: they would share cuda:0") {
    CHECK_THAT(refusal([] { assign_gpus(std::nullopt, {}, 2, 1, configs({"cuda"})); }),
               Contains("--jobs 2") && Contains("NVML") && Contains("--jobs 1"));
  }
}

TEST_CASE("a data-parallel trial on CUDA takes a GPU per rank", "[model][gpus]") {
  const std::vector<nlohmann::json> two = {{{"device", "cuda"}, {"world_size", 1}},
                                           {{"device", "cuda"}, {"world_size", 2}}};
  SECTION("--jobs 1 without --gpus: the visible GPUs are handed out, two at a time") {
    const auto a = assign_gpus(std::nullopt, kFour, 1, 1, two);
    CHECK(a.gpus == std::vector<std::string>{"GPU-a", "GPU-b"});
    CHECK_THAT(a.note, Contains("one GPU per rank"));
  }
  SECTION("--jobs 2: four GPUs for two trials of two ranks") {
    CHECK(assign_gpus(std::nullopt, kFour, 2, 1, two).gpus.size() == 4);
  }
  SECTION("interleaved trials share the ranks' GPUs") {
    const auto a = assign_gpus(std::nullopt, kFour, 1, 4, two);
    CHECK(a.shared);
    CHECK(a.gpus == std::vector<std::string>{"GPU-a", "GPU-b"});
  }
  SECTION("fewer GPUs than ranks is refused, naming both") {
    CHECK_THAT(refusal([&] { assign_gpus(std::string("2"), kFour, 1, 1, two); }),
               Contains("world_size 2 needs a GPU per rank") && Contains("--gpus '2' names 1"));
  }
  SECTION("ranks on the CPU take no GPU") {
    const std::vector<nlohmann::json> cpu = {{{"device", "cpu"}, {"world_size", 2}}};
    CHECK(assign_gpus(std::nullopt, kFour, 1, 1, cpu).gpus.empty());
  }
  SECTION("Gloo's ranks may share one GPU; NCCL's may not") {
    const std::vector<std::string> one = {"GPU-a"};
    const std::vector<nlohmann::json> gloo = {
        {{"device", "cuda"}, {"world_size", 2}, {"dp_backend", "gloo"}}};
    const std::vector<nlohmann::json> nccl = {
        {{"device", "cuda"}, {"world_size", 2}, {"dp_backend", "nccl"}}};
    // One GPU visible, --jobs 1: the ranks share it, no list handed out.
    CHECK(assign_gpus(std::nullopt, one, 1, 1, gloo).gpus.empty());
    CHECK(assign_gpus(std::string("0"), one, 1, 1, gloo).gpus == one);
    CHECK_THAT(refusal([&] { assign_gpus(std::nullopt, one, 1, 1, nccl); }),
               Contains("world_size 2 needs a GPU per rank"));
    CHECK_THAT(refusal([&] { assign_gpus(std::string("0"), one, 1, 1, two); }),
               Contains("world_size 2 needs a GPU per rank"));
    // Enough GPUs: Gloo's ranks take one each too.
    CHECK(assign_gpus(std::nullopt, kFour, 1, 1, gloo).gpus.size() == 2);
    CHECK(gpus_for_trial(gloo[0], 1) == 1);
    CHECK(gpus_for_trial(gloo[0], 4) == 2);
    CHECK(gpus_for_trial(nccl[0], 1) == 2);
    CHECK(gpus_for_trial(two[1], 1) == 2);  // auto: NCCL on CUDA
  }
  CHECK(world_size_of({{"world_size", 4}}) == 4);
  CHECK(world_size_of({{"batch_size", 4}}) == 1);
}
