// A small manifest shared by the host unit tests.
#pragma once

#include "spec/manifest.hpp"

namespace gpusweep::test {

inline host::PluginManifest dqn_like_manifest() {
  return host::PluginManifest::parse(nlohmann::json::parse(R"({
    "name": "dqn", "version": "1.0.0", "unit": "updates", "secondary_unit": "env_steps",
    "quality": {"metric": "mean_return", "reference": "random_policy_return"},
    "params": [
      {"name": "device", "type": "string", "default": "auto", "choices": ["auto", "cpu", "cuda"], "common": true},
      {"name": "batch_size", "type": "int", "default": 64, "min": 1, "max": 4096, "common": true},
      {"name": "precision", "type": "string", "default": "fp32", "choices": ["fp32", "bf16", "fp16"], "common": true},
      {"name": "lr", "type": "float", "default": 0.001, "min": 0},
      {"name": "replay_on_device", "type": "bool", "default": false},
      {"name": "target_sync", "type": "string", "default": "roundtrip", "choices": ["inplace", "roundtrip"]}
    ]})"));
}

}  // namespace gpusweep::test
