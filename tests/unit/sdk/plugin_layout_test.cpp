// Freezes the ABI v1 function table: a member moved, resized or inserted
// anywhere but at the end breaks every plugin already built.
#include <gpusweep/plugin.h>

#include <catch2/catch.hpp>

#include <cstddef>

namespace {
constexpr size_t kPtr = sizeof(void*);
constexpr size_t kHeader = 4 * sizeof(uint32_t);
}  // namespace

static_assert(offsetof(gpusweep_plugin, struct_size) == 0, "struct_size must stay first");
static_assert(offsetof(gpusweep_plugin, abi_major) == 4, "ABI v1 layout");
static_assert(offsetof(gpusweep_plugin, abi_minor) == 8, "ABI v1 layout");
static_assert(offsetof(gpusweep_plugin, manifest) == kHeader + 0 * kPtr, "ABI v1 layout");
static_assert(offsetof(gpusweep_plugin, runtime) == kHeader + 1 * kPtr, "ABI v1 layout");
static_assert(offsetof(gpusweep_plugin, create) == kHeader + 2 * kPtr, "ABI v1 layout");
static_assert(offsetof(gpusweep_plugin, step) == kHeader + 3 * kPtr, "ABI v1 layout");
static_assert(offsetof(gpusweep_plugin, synchronize) == kHeader + 4 * kPtr, "ABI v1 layout");
static_assert(offsetof(gpusweep_plugin, evaluate) == kHeader + 5 * kPtr, "ABI v1 layout");
static_assert(offsetof(gpusweep_plugin, stats) == kHeader + 6 * kPtr, "ABI v1 layout");
static_assert(offsetof(gpusweep_plugin, error_message) == kHeader + 7 * kPtr, "ABI v1 layout");
static_assert(offsetof(gpusweep_plugin, destroy) == kHeader + 8 * kPtr, "ABI v1 layout");

TEST_CASE("ABI v1.0 table layout is frozen", "[sdk]") {
  // The v1.0 table ends at destroy; later minors may only append.
  CHECK(sizeof(gpusweep_plugin) >= kHeader + 9 * kPtr);
  CHECK(offsetof(gpusweep_step_result, struct_size) == 0);
  CHECK(offsetof(gpusweep_step_result, samples) == 8);
  CHECK(offsetof(gpusweep_step_result, secondary_samples) == 16);
  CHECK(GPUSWEEP_ABI_MAJOR == 1);
  CHECK(GPUSWEEP_STATUS_OK == 0);
  CHECK(GPUSWEEP_STATUS_ERROR == 1);
  CHECK(GPUSWEEP_STATUS_OUT_OF_MEMORY == 2);
  CHECK(GPUSWEEP_STATUS_SKIPPED == 3);
}
