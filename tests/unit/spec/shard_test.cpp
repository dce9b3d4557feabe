// Shards: parsing --shard i/n and slicing a plan so that every trial is in
// exactly one shard, whatever n.
#include "spec/shard.hpp"

#include "spec/sweep.hpp"
#include "support/error.hpp"
#include "test_manifest.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <set>

using namespace gpusweep;
using namespace gpusweep::host;
using Catch::Matchers::Contains;

TEST_CASE("shard i/n (--shard) is 1-based and checked, naming the flag", "[host][shard]") {
  CHECK(parse_shard("1/1").index == 1);
  const Shard s = parse_shard("3/8");
  CHECK(s.index == 3);
  CHECK(s.count == 8);
  CHECK(s.label() == "3/8");
  CHECK_THROWS_WITH(parse_shard("0/4"),
                    Contains("--shard '0/4'") && Contains("1/4 ... --shard 4/4"));
  CHECK_THROWS_WITH(parse_shard("5/4"), Contains("numbered from 1 to n"));
  CHECK_THROWS_WITH(parse_shard("2"), Contains("expected i/n"));
  CHECK_THROWS_WITH(parse_shard("1/0"), Contains("number of shards"));
  for (const char* bad : {"a/4", "1/b", "/4", "1/", "-1/4", "1/4/2", "1.5/4", " 1/4"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_shard(bad), UsageError);
  }
  CHECK_THROWS_WITH(parse_shard("x", "--task"), Contains("--task 'x'"));
}

TEST_CASE("every trial is in exactly one shard for any n, shards balanced", "[host][shard]") {
  for (size_t trials : {0, 1, 2, 5, 6, 7, 12, 100, 1001}) {
    std::vector<size_t> plan(trials);
    for (size_t i = 0; i < trials; ++i) plan[i] = i;
    for (int64_t n : {1, 2, 3, 4, 5, 6, 7, 10, 64, 999, 1000, 1001, 5000}) {
      INFO(trials << " trials in " << n << " shards");
      std::map<size_t, int> owners;
      size_t smallest = SIZE_MAX, largest = 0;
      for (int64_t i = 1; i <= n; ++i) {
        const auto slice = shard_slice(plan, Shard{i, n});
        smallest = std::min(smallest, slice.size());
        largest = std::max(largest, slice.size());
        for (size_t k = 0; k < slice.size(); ++k) {
          ++owners[slice[k]];
          if (k > 0) CHECK(slice[k - 1] < slice[k]);  // plan order kept
          CHECK(in_shard(slice[k], Shard{i, n}));
        }
      }
      CHECK(owners.size() == trials);
      for (const auto& [trial, count] : owners) CHECK(count == 1);
      CHECK(largest - smallest <= 1);  // n > trials: some shards are empty, none has two
    }
  }
}

TEST_CASE("a shard keeps the plan's rounds of repeats in order", "[host][shard]") {
  SweepSpec s = parse_sweep(R"({"name": "x", "workload": "dqn",
    "grid": {"batch_size": [32, 64, 128], "lr": [0.1, 0.01]}, "measure": {"repeats": 3}})",
                            "x.json");
  const auto plan = plan_trials(s, test::dqn_like_manifest());
  REQUIRE(plan.size() == 18);
  std::set<std::pair<std::string, int64_t>> all;
  for (int64_t i = 1; i <= 4; ++i) {
    const auto slice = shard_slice(plan, Shard{i, 4});
    for (size_t k = 1; k < slice.size(); ++k) {
      CHECK(slice[k - 1].ordinal < slice[k].ordinal);
      CHECK(slice[k - 1].repeat <= slice[k].repeat);
    }
    for (const auto& t : slice) CHECK(all.emplace(t.config_hash, t.repeat).second);
  }
  CHECK(all.size() == 18);
}

TEST_CASE("shards of one sweep share a default run key and name their databases", "[host][shard]") {
  CHECK(default_run_key("abc", 4) == default_run_key("abc", 4));
  CHECK(default_run_key("abc", 4) != default_run_key("abc", 5));
  CHECK(default_run_key("abc", 4) != default_run_key("abd", 4));
  CHECK(default_shard_db(Shard{2, 5}) == "gpusweep-shard-2-of-5.db");
}
