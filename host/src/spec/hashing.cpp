// Content hashes; see hashing.hpp.
#include "spec/hashing.hpp"

#include "support/error.hpp"

#include <cstdio>
#include <fstream>
#include <vector>

namespace gpusweep::host {

uint64_t fnv1a64(std::string_view data, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string to_hex(uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(value));
  return buf;
}

std::string hash_text(std::string_view data) { return to_hex(fnv1a64(data)); }

std::string hash_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read '" + path + "'");
  uint64_t h = 0xcbf29ce484222325ULL;
  std::vector<char> buf(1 << 16);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h = fnv1a64(std::string_view(buf.data(), static_cast<size_t>(in.gcount())), h);
  }
  return to_hex(h);
}

std::string canonical_json(const nlohmann::json& value) {
  // nlohmann::json stores objects in a std::map: keys are already sorted.
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string config_hash(const std::string& workload, const std::string& plugin_version,
                        const nlohmann::json& config) {
  return hash_text(workload + '\0' + plugin_version + '\0' + canonical_json(config));
}

}  // namespace gpusweep::host
