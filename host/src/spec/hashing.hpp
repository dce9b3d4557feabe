// Stable content hashes (FNV-1a 64) for configs, sweep files and plugin files.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace gpusweep::host {

uint64_t fnv1a64(std::string_view data, uint64_t seed = 0xcbf29ce484222325ULL);
std::string to_hex(uint64_t value);
std::string hash_text(std::string_view data);
// Hash of a file's bytes; throws gpusweep::Error if it cannot be read.
std::string hash_file(const std::string& path);
// Canonical text of a JSON value: object keys sorted, no whitespace.
std::string canonical_json(const nlohmann::json& value);
// A trial's identity: (workload, plugin version, resolved config).
std::string config_hash(const std::string& workload, const std::string& plugin_version,
                        const nlohmann::json& config);

}  // namespace gpusweep::host
