// libFuzzer target: a sweep file from anywhere, as `gpusweep run` reads it.
// Input is the sweep text, optionally followed by a line "--set" and one
// override per line. Every input must end in a parsed, validated, planned
// sweep or in a UsageError with a message; anything else (a crash, a
// sanitizer finding, another exception type escaping, an empty message, a
// sweep that does not survive its own round trip) is a finding.
#include "spec/manifest.hpp"
#include "spec/sweep.hpp"
#include "support/error.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using gpusweep::host::PluginManifest;

const PluginManifest& manifest() {
  static const PluginManifest m = PluginManifest::parse(nlohmann::json::parse(R"({
    "name": "fuzzed", "version": "1.0.0", "unit": "updates", "secondary_unit": "env_steps",
    "quality": {"metric": "mean_return", "reference": "random_policy_return"},
    "params": [
      {"name": "device", "type": "string", "default": "auto", "choices": ["auto", "cpu", "cuda"], "common": true},
      {"name": "batch_size", "type": "int", "default": 64, "min": 1, "max": 4096, "common": true},
      {"name": "precision", "type": "string", "default": "fp32", "choices": ["fp32", "bf16", "fp16"], "common": true},
      {"name": "lr", "type": "float", "default": 0.001, "min": 0},
      {"name": "replay_on_device", "type": "bool", "default": false},
      {"name": "target_sync", "type": "string", "default": "roundtrip", "choices": ["inplace", "roundtrip"]}
    ]})"));
  return m;
}

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "FINDING: %s: %s\n", what, detail.c_str());
  std::abort();
}

void check_message(const gpusweep::UsageError& e) {
  if (std::string(e.what()).empty()) finding("UsageError without a message", "");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> sets;
  if (const auto cut = text.find("\n--set\n"); cut != std::string::npos) {
    std::string rest = text.substr(cut + 7);
    text.resize(cut);
    size_t start = 0;
    while (start <= rest.size() && sets.size() < 8) {
      const auto end = rest.find('\n', start);
      sets.push_back(
          rest.substr(start, end == std::string::npos ? std::string::npos : end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  using namespace gpusweep::host;
  try {
    SweepSpec spec = parse_sweep(text, "fuzz.json");
    apply_overrides(spec, sets);
    validate_sweep(spec, manifest());
    if (grid_size(spec) * static_cast<uint64_t>(spec.measure.repeats) <= 2000) {
      const auto planned = plan_trials(spec, manifest());
      if (planned.size() != grid_size(spec) * static_cast<uint64_t>(spec.measure.repeats)) {
        finding("plan size", std::to_string(planned.size()));
      }
      varying_keys(spec);
    }
    // What is stored must read back as the same sweep.
    const std::string stored = spec.to_json().dump();
    const SweepSpec again = parse_sweep(stored, "stored.json");
    if (again.to_json().dump() != stored) finding("round trip", stored);
  } catch (const gpusweep::UsageError& e) {
    check_message(e);
  } catch (const std::exception& e) {
    finding("exception other than UsageError escaped", e.what());
  }
  return 0;
}
