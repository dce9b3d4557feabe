// SHA-256 (FIPS 180-4) and base64 (RFC 4648), for the digests a
// Content-Security-Policy names ('sha256-<base64>'): serve's page allows its
// one inline script by hash instead of 'unsafe-inline'.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpusweep::host {

std::array<uint8_t, 32> sha256(std::string_view data);
std::string base64(const uint8_t* data, size_t size);
// 'sha256-...' for a CSP source list: the base64 of the text's SHA-256.
std::string csp_hash(std::string_view text);

}  // namespace gpusweep::host
