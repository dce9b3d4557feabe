// One meaning for every unit: GB is 10^9 bytes and GiB 2^30 wherever a size
// or a quantity is read.
#include "spec/units.hpp"
#include "support/error.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace gpusweep::host;

TEST_CASE("sizes: binary prefixes are powers of 1024, decimal ones powers of 1000", "[model]") {
  CHECK(parse_size("2GiB", "x") == 2.0 * 1024 * 1024 * 1024);
  CHECK(parse_size("512MiB", "x") == 512.0 * 1024 * 1024);
  CHECK(parse_size("1.5gib", "x") == 1.5 * 1024 * 1024 * 1024);
  CHECK(parse_size("8GB", "x") == 8e9);
  CHECK(parse_size("8gb", "x") == 8e9);
  CHECK(parse_size("100kB", "x") == 1e5);
  CHECK(parse_size("4096", "x") == 4096);
  CHECK(parse_size("4096B", "x") == 4096);
}

TEST_CASE("sizes and constraint quantities agree on GB and GiB", "[model]") {
  for (const char* text : {"8GB", "8GiB", "512MiB", "3TB", "1KiB"}) {
    CHECK(parse_size(text, "x") == parse_quantity(text, "x"));
  }
}

TEST_CASE("a size with a bare K, M, G or T is refused naming both readings", "[model]") {
  try {
    parse_size("1.5G", "--max-memory");
    FAIL("1.5G was accepted");
  } catch (const gpusweep::UsageError& e) {
    const std::string what = e.what();
    CHECK(what.find("--max-memory") == 0);
    CHECK(what.find("GiB") != std::string::npos);
    CHECK(what.find("GB") != std::string::npos);
  }
}

TEST_CASE("sizes that are not positive sizes are refused", "[model]") {
  CHECK_THROWS_AS(parse_size("lots", "x"), gpusweep::UsageError);
  CHECK_THROWS_AS(parse_size("2 parsecs", "x"), gpusweep::UsageError);
  CHECK_THROWS_AS(parse_size("0MiB", "x"), gpusweep::UsageError);
  CHECK_THROWS_AS(parse_size("2ms", "x"), gpusweep::UsageError);
}

TEST_CASE("quantities read times, percentages and count multipliers", "[model]") {
  CHECK(parse_quantity("2ms", "x") == Approx(2e-3));
  CHECK(parse_quantity("95%", "x") == Approx(0.95));
  CHECK(parse_quantity("1.5M", "x") == 1.5e6);
  CHECK(parse_quantity("1e6", "x") == 1e6);
  CHECK_THROWS_AS(parse_quantity("3 furlongs", "x"), gpusweep::UsageError);
}
