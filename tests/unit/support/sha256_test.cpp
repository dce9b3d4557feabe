#include "support/sha256.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace gpusweep::host;

namespace {
std::string hex(const std::array<uint8_t, 32>& d) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : d) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}
}  // namespace

TEST_CASE("sha256 matches FIPS 180-4's vectors, across the one- and two-block tails") {
  CHECK(hex(sha256("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hex(sha256("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the length no longer fits the first block.
  CHECK(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(hex(sha256(std::string(1000000, 'a'))) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("base64 pads as RFC 4648 does, and a CSP hash is the base64 of the digest") {
  const auto b = [](const std::string& s) {
    return base64(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  CHECK(b("") == "");
  CHECK(b("f") == "Zg==");
  CHECK(b("fo") == "Zm8=");
  CHECK(b("foo") == "Zm9v");
  CHECK(b("foobar") == "Zm9vYmFy");
  // What a browser computes for <script>alert(1)</script>.
  CHECK(csp_hash("alert(1)") == "'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='");
}
