// The header-only C++ wrapper: exceptions become statuses with messages,
// and the manifest carries the typed parameter schema.
#include <gpusweep/workload.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <new>

namespace {
// While set, every operator new on this thread fails: memory so short that
// even an error message cannot be allocated.
thread_local bool fail_allocations = false;
}  // namespace

// Replaced for this test binary, over malloc and free. Not under
// AddressSanitizer, whose own operator new serves the shared libraries'
// allocations that this binary's delete would then free (a mismatch it
// reports): there the test below says it checked nothing.
// GCC says so by __SANITIZE_ADDRESS__, Clang by __has_feature.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GPUSWEEP_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(GPUSWEEP_ASAN)
#define GPUSWEEP_STARVING_NEW 0
#else
#define GPUSWEEP_STARVING_NEW 1
void* operator new(std::size_t size) {
  if (fail_allocations) throw std::bad_alloc();
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace {

class Probe final : public gpusweep::Workload {
 public:
  static gpusweep::Manifest manifest() {
    gpusweep::Manifest m;
    m.name = "probe";
    m.version = "0.1.0";
    m.unit = "things";
    m.params = {
        gpusweep::Param::choice(
            "mode", "ok", {"ok", "skip", "oom", "throw", "bad_alloc", "starved"}, "behaviour"),
        gpusweep::Param::integer("n", 3, 1, 10, "a count")};
    return m;
  }
  explicit Probe(const gpusweep::TrialConfig& c) : mode_(c.get<std::string>("mode")) {
    if (mode_ == "skip") throw gpusweep::Skipped("not here");
  }
  gpusweep::StepResult step() override {
    if (mode_ == "oom") throw std::runtime_error("DefaultCPUAllocator: can't allocate memory");
    if (mode_ == "throw") throw std::logic_error("broken step");
    if (mode_ == "bad_alloc") throw std::bad_alloc();
    if (mode_ == "starved") {
      // An error whose message needs the heap, thrown once the heap is gone.
      std::runtime_error e("a message far longer than any string's inline buffer");
      fail_allocations = true;
      throw e;
    }
    return {2.0, 5.0};
  }
  gpusweep::Metrics evaluate() override { return {{"q", 0.5}}; }

 private:
  std::string mode_;
};

using A = gpusweep::detail::Adapter<Probe>;

gpusweep_status step_with(const char* config, gpusweep_step_result* r, std::string* message) {
  gpusweep_instance* inst = nullptr;
  const auto* t = A::table();
  gpusweep_status st = t->create(config, &inst);
  if (st != GPUSWEEP_STATUS_OK) {
    *message = t->error_message(nullptr);
    return st;
  }
  st = t->step(inst, r);
  *message = t->error_message(inst);
  t->destroy(inst);
  return st;
}

}  // namespace

TEST_CASE("wrapper table reports its size and ABI", "[sdk]") {
  const auto* t = A::table();
  CHECK(t->struct_size == sizeof(gpusweep_plugin));
  CHECK(t->abi_major == GPUSWEEP_ABI_MAJOR);
  const auto manifest = gpusweep::Json::parse(t->manifest());
  CHECK(manifest["name"] == "probe");
  CHECK(manifest["params"][1]["min"] == 1.0);
  CHECK(manifest["params"][0]["choices"].size() == 6);
}

TEST_CASE("wrapper turns exceptions into statuses", "[sdk]") {
  gpusweep_step_result r{};
  std::string msg;
  CHECK(step_with(R"({"mode":"ok"})", &r, &msg) == GPUSWEEP_STATUS_OK);
  CHECK(r.samples == 2.0);
  CHECK(r.secondary_samples == 5.0);
  CHECK(step_with(R"({"mode":"skip"})", &r, &msg) == GPUSWEEP_STATUS_SKIPPED);
  CHECK(msg == "not here");
  CHECK(step_with(R"({"mode":"oom"})", &r, &msg) == GPUSWEEP_STATUS_OUT_OF_MEMORY);
  CHECK(step_with(R"({"mode":"bad_alloc"})", &r, &msg) == GPUSWEEP_STATUS_OUT_OF_MEMORY);
  CHECK(step_with(R"({"mode":"throw"})", &r, &msg) == GPUSWEEP_STATUS_ERROR);
  CHECK(msg == "broken step");
  CHECK(step_with(R"({"mode":)", &r, &msg) == GPUSWEEP_STATUS_ERROR);  // malformed config
  CHECK_FALSE(msg.empty());
}

TEST_CASE("allocation failures of the CUDA libraries are oom and their other errors are not",
          "[sdk]") {
  using gpusweep::detail::looks_like_oom;
  // The messages LibTorch 2.x raises, by the status names it passes on.
  CHECK(looks_like_oom("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.1 GiB total)"));
  CHECK(looks_like_oom("CUDA error: out of memory"));
  CHECK(
      looks_like_oom("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"));
  CHECK(looks_like_oom("cuDNN error: CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED"));
  CHECK(looks_like_oom("cuDNN error: CUDNN_STATUS_ALLOC_FAILED"));
  CHECK(looks_like_oom("cusolver error: CUSOLVER_STATUS_ALLOC_FAILED"));
  CHECK_FALSE(looks_like_oom(
      "CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, ...)`"));
  CHECK_FALSE(looks_like_oom("cuDNN error: CUDNN_STATUS_NOT_SUPPORTED"));
  CHECK_FALSE(looks_like_oom("CUDA error: an illegal memory access was encountered"));
}

TEST_CASE("the workload sees its configuration checked against the manifest, defaults filled",
          "[sdk]") {
  gpusweep_step_result r{};
  r.struct_size = sizeof r;
  std::string message;
  // Missing keys arrive at their defaults: Probe reads "mode" with get<>(),
  // which throws for a key that is not there.
  CHECK(step_with("{}", &r, &message) == GPUSWEEP_STATUS_OK);
  CHECK(step_with(R"({"n": 11})", &r, &message) == GPUSWEEP_STATUS_ERROR);
  CHECK(message == "'n': 11 is above the maximum 10");
  CHECK(step_with(R"({"n": 2.5})", &r, &message) == GPUSWEEP_STATUS_ERROR);
  CHECK(message.find("expected an integer") != std::string::npos);
  CHECK(step_with(R"({"mode": "fast"})", &r, &message) == GPUSWEEP_STATUS_ERROR);
  CHECK(message.find("\"fast\" is not one of") != std::string::npos);
  CHECK(step_with(R"({"nn": 2})", &r, &message) == GPUSWEEP_STATUS_ERROR);
  CHECK(message == "'nn' is not a parameter of probe");
}

namespace {

int timers_enabled = 0;
void enable_timers() { ++timers_enabled; }

class WithExtension final : public gpusweep::Workload {
 public:
  static gpusweep::Manifest manifest() { return Probe::manifest(); }
  static const void* extension(const char* id) {
    static const gpusweep_ext_phase_timers timers = {sizeof timers, 0, &enable_timers};
    return std::string(id) == GPUSWEEP_EXT_PHASE_TIMERS ? &timers : nullptr;
  }
  explicit WithExtension(const gpusweep::TrialConfig&) {}
  gpusweep::StepResult step() override { return {1.0, 0.0}; }
};

}  // namespace

TEST_CASE("ABI 1.1: get_extension hands out what the workload class offers, nothing else",
          "[sdk]") {
  const gpusweep_plugin* plain = A::table();
  REQUIRE(plain->struct_size >= offsetof(gpusweep_plugin, get_extension) + sizeof(void*));
  CHECK(plain->get_extension(GPUSWEEP_EXT_PHASE_TIMERS) == nullptr);

  const gpusweep_plugin* t = gpusweep::detail::Adapter<WithExtension>::table();
  const auto* timers =
      static_cast<const gpusweep_ext_phase_timers*>(t->get_extension(GPUSWEEP_EXT_PHASE_TIMERS));
  REQUIRE(timers != nullptr);
  CHECK(timers->struct_size == sizeof(gpusweep_ext_phase_timers));
  timers->enable();
  CHECK(timers_enabled == 1);
  CHECK(t->get_extension(GPUSWEEP_EXT_MATMUL_PROBE) == nullptr);
  CHECK(t->get_extension("gpusweep.no_such_thing/1") == nullptr);
}

TEST_CASE("step() on a null instance or result is an error, not a crash", "[sdk]") {
  const auto* t = A::table();
  gpusweep_step_result r{};
  r.struct_size = sizeof r;
  CHECK(t->step(nullptr, &r) == GPUSWEEP_STATUS_ERROR);
  gpusweep_instance* inst = nullptr;
  REQUIRE(t->create("{}", &inst) == GPUSWEEP_STATUS_OK);
  CHECK(t->step(inst, nullptr) == GPUSWEEP_STATUS_ERROR);
  t->destroy(inst);
}

namespace {

class Windowed final : public gpusweep::Workload {
 public:
  static gpusweep::Manifest manifest() { return Probe::manifest(); }
  explicit Windowed(const gpusweep::TrialConfig&) {}
  gpusweep::StepResult step() override { return {1.0, 0.0}; }
  void begin_measurement() override { ++begun; }
  void end_measurement() override { ++ended; }
  gpusweep::Metrics stats() override { return {{"begun", begun}, {"ended", ended}}; }
  double begun = 0, ended = 0;
};

}  // namespace

TEST_CASE("every SDK workload offers the measured window, reaching its hooks", "[sdk]") {
  const gpusweep_plugin* t = gpusweep::detail::Adapter<Windowed>::table();
  const auto* window = static_cast<const gpusweep_ext_measure_window*>(
      t->get_extension(GPUSWEEP_EXT_MEASURE_WINDOW));
  REQUIRE(window != nullptr);
  CHECK(window->struct_size == sizeof(gpusweep_ext_measure_window));
  gpusweep_instance* inst = nullptr;
  REQUIRE(t->create("{}", &inst) == GPUSWEEP_STATUS_OK);
  CHECK(window->begin(inst) == GPUSWEEP_STATUS_OK);
  CHECK(window->end(inst) == GPUSWEEP_STATUS_OK);
  CHECK(window->begin(inst) == GPUSWEEP_STATUS_OK);
  const char* stats = nullptr;
  REQUIRE(t->stats(inst, &stats) == GPUSWEEP_STATUS_OK);
  const auto j = gpusweep::Json::parse(stats);
  CHECK(j["begun"] == 2);
  CHECK(j["ended"] == 1);
  CHECK(window->begin(nullptr) == GPUSWEEP_STATUS_ERROR);
  t->destroy(inst);
  // A plain workload has it too (the hooks do nothing).
  CHECK(A::table()->get_extension(GPUSWEEP_EXT_MEASURE_WINDOW) != nullptr);
}

TEST_CASE("an error thrown when not even its message can be allocated is oom, not a crash",
          "[sdk]") {
  // Before the SDK recorded failures without allocating, the copy of the
  // message in the catch block threw through the noexcept ABI function and
  // ended the process (std::terminate).
  if (!GPUSWEEP_STARVING_NEW) {
    WARN("under AddressSanitizer operator new is its own: nothing checked");
    return;
  }
  const auto* t = A::table();
  gpusweep_instance* inst = nullptr;
  REQUIRE(t->create(R"({"mode": "starved"})", &inst) == GPUSWEEP_STATUS_OK);
  gpusweep_step_result r{};
  const gpusweep_status st = t->step(inst, &r);
  fail_allocations = false;
  CHECK(st == GPUSWEEP_STATUS_OUT_OF_MEMORY);
  CHECK(std::string(t->error_message(inst)) == "out of memory");
  t->destroy(inst);
}
