// gpusweep/random.hpp: draws whose values the project defines (std::shuffle
// and the <random> distributions differ between standard libraries).
// The pinned values below are what every standard library must give; a
// change to any of them changes plan orders, shard slices and workloads'
// generated data, and needs the plugins' manifest versions bumped.
#include <catch2/catch.hpp>

#include <gpusweep/random.hpp>

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

using namespace gpusweep;

TEST_CASE("random: the engines match their published reference values", "[random]") {
  random::SplitMix64 splitmix(0);
  CHECK(splitmix() == 0xE220A8397B1DCDAFULL);  // Vigna's splitmix64.c from state 0
  std::mt19937_64 mt;                          // [rand.predef]: the 10000th value
  for (int i = 0; i < 9999; ++i) mt();
  CHECK(mt() == 9981545732273789042ULL);
}

TEST_CASE("random: draws are pinned, whatever the standard library", "[random]") {
  std::mt19937_64 mt(42);
  std::vector<int64_t> ints;
  for (int i = 0; i < 5; ++i) ints.push_back(random::uniform_int(mt, 0, 9));
  CHECK(ints == std::vector<int64_t>{6, 4, 0, 2, 1});
  CHECK(random::unit(mt) == 0.094068311762837031);
  CHECK(random::uniform_real(mt, -20, 20) == Approx(2.9828121643305572).epsilon(1e-15));
  CHECK(random::normal(mt, 0, 1) == Approx(-0.14437038850685205).epsilon(1e-14));
  CHECK(random::gamma(mt, 0.5) == Approx(0.37401446265754767).epsilon(1e-14));
  CHECK(random::gamma(mt, 3.0) == Approx(3.8939241442777224).epsilon(1e-14));

  std::vector<int> order(8);
  std::iota(order.begin(), order.end(), 0);
  random::SplitMix64 seed1(1);
  random::shuffle(order, seed1);
  CHECK(order == std::vector<int>{4, 3, 2, 7, 5, 6, 0, 1});
}

TEST_CASE("random: the distributions have the shape they promise", "[random]") {
  random::SplitMix64 rng(2026);
  constexpr int kDraws = 200000;
  std::vector<int> counts(7, 0);
  double sum = 0, sum_sq = 0, gamma_sum = 0, small_gamma_sum = 0;
  for (int i = 0; i < kDraws; ++i) {
    const int64_t k = random::uniform_int(rng, -3, 3);
    REQUIRE(k >= -3);
    REQUIRE(k <= 3);
    ++counts[static_cast<size_t>(k + 3)];
    const double x = random::normal(rng, 2.0, 0.5);
    sum += x;
    sum_sq += x * x;
    gamma_sum += random::gamma(rng, 4.0);
    small_gamma_sum += random::gamma(rng, 0.3);
    const double u = random::uniform_real(rng, 5.0, 6.0);
    REQUIRE(u >= 5.0);
    REQUIRE(u < 6.0);
  }
  for (int c : counts) CHECK(std::abs(c - kDraws / 7.0) < 5 * std::sqrt(kDraws / 7.0));
  const double mean = sum / kDraws;
  CHECK(mean == Approx(2.0).margin(0.01));
  CHECK(std::sqrt(sum_sq / kDraws - mean * mean) == Approx(0.5).margin(0.01));
  CHECK(gamma_sum / kDraws == Approx(4.0).margin(0.03));  // Gamma(k, 1) has mean k
  CHECK(small_gamma_sum / kDraws == Approx(0.3).margin(0.01));
}
