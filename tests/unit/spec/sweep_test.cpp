// Sweep files: parsing, every validation error, overrides, expansion, order.
#include "spec/sweep.hpp"

#include "support/error.hpp"
#include "test_manifest.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <set>

using namespace gpusweep;
using namespace gpusweep::host;
using Catch::Matchers::Contains;

namespace {

const char* kGood = R"({
  "name": "claims", "workload": "dqn",
  "base": {"device": "cpu", "batch_size": 32},
  "grid": {"replay_on_device": [false, true], "target_sync": ["roundtrip", "inplace"]},
  "measure": {"warmup_steps": 5, "steps_per_block": 10, "blocks": 5, "repeats": 2},
  "baseline": {"replay_on_device": false, "target_sync": "roundtrip"}
})";

// The message of the UsageError that validating text raises.
std::string error_of(const std::string& text) {
  try {
    SweepSpec s = parse_sweep(text, "x.json");
    validate_sweep(s, test::dqn_like_manifest());
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a good sweep parses, validates and expands", "[host][sweep]") {
  SweepSpec s = parse_sweep(kGood, "x.json");
  const auto m = test::dqn_like_manifest();
  REQUIRE_NOTHROW(validate_sweep(s, m));
  CHECK(s.name == "claims");
  CHECK(s.measure.blocks == 5);
  CHECK(grid_size(s) == 4);
  const auto configs = expand_configs(s, m);
  REQUIRE(configs.size() == 4);
  for (const auto& c : configs) {
    CHECK(c["device"] == "cpu");         // base
    CHECK(c["batch_size"] == 32);        // base over default
    CHECK(c["precision"] == "fp32");     // default
    CHECK(c.size() == m.params.size());  // every parameter resolved
  }
  std::set<std::string> distinct;
  for (const auto& c : configs) distinct.insert(c.dump());
  CHECK(distinct.size() == 4);
  CHECK(varying_keys(s) == std::vector<std::string>{"replay_on_device", "target_sync"});
}

TEST_CASE("validation errors name the file, the key and the fix", "[host][sweep]") {
  CHECK_THAT(error_of(""), Contains("x.json") && Contains("empty"));
  CHECK_THAT(error_of("{\"name\": \"a\",\n \"workload\": }"),
             Contains("x.json") && Contains("line 2") && Contains("not valid JSON"));
  CHECK_THAT(error_of("[1, 2]"), Contains("must be a JSON object"));
  CHECK_THAT(error_of(R"({"workload": "dqn"})"), Contains("name") && Contains("missing"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "grdi": {}})"),
             Contains("grdi") && Contains("did you mean 'grid'"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "base": {"batch_sise": 3}})"),
             Contains("base.batch_sise") && Contains("did you mean 'batch_size'") &&
                 Contains("gpusweep plugins dqn"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "base": {"batch_size": "64"}})"),
             Contains("base.batch_size") && Contains("expected an integer"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "base": {"batch_size": 64.5}})"),
             Contains("expected an integer"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "base": {"batch_size": 0}})"),
             Contains("below the minimum 1"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "grid": {"batch_size": [8, 99999]}})"),
             Contains("grid.batch_size[1]") && Contains("above the maximum 4096"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "base": {"precision": "fp8"}})"),
             Contains("\"fp8\" is not one of") && Contains("\"bf16\""));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "base": {"replay_on_device": 1}})"),
             Contains("expected true or false"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "grid": {"batch_size": 8}})"),
             Contains("grid.batch_size") && Contains("non-empty array"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "grid": {"batch_size": [8, 8]}})"),
             Contains("listed twice"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "measure": {"blocks": 2}})"),
             Contains("measure.blocks") && Contains("minimum 5"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "measure": {"block": 6}})"),
             Contains("did you mean 'blocks'"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "measure": {"timeout_s": -1}})"),
             Contains("measure.timeout_s"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "measure": {"min_block_s": -0.1}})"),
             Contains("measure.min_block_s") && Contains("0 or more"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "name": "b"})"),
             Contains("'name' appears twice"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "base": {"lr": NaN}})"),
             Contains("not valid JSON"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "baseline": {"batch_size": 7}})"),
             Contains("baseline") && Contains("matches none"));
}

TEST_CASE("a huge grid is refused with its size before expansion", "[host][sweep]") {
  std::string values = "[";
  for (int i = 1; i <= 1000; ++i) values += (i > 1 ? "," : "") + std::to_string(i);
  values += "]";
  // Three axes of 1000 values: a billion configs.
  const std::string text = R"({"name": "a", "workload": "dqn", "grid": {"batch_size": )" + values +
                           R"(, "lr": )" + values + R"(, "x": )" + values + "}}";
  SweepSpec s = parse_sweep(text, "x.json");
  CHECK(grid_size(s) == 1000000000ULL);
  try {
    validate_sweep(s, test::dqn_like_manifest());
    FAIL("a billion-config grid must be refused");
  } catch (const UsageError& e) {
    CHECK_THAT(e.what(), Contains("1000000000 configurations") && Contains("x.json"));
  }
}

TEST_CASE("set overrides base, pins grid axes and sets the protocol", "[host][sweep]") {
  SweepSpec s = parse_sweep(kGood, "x.json");
  apply_overrides(s, {"batch_size=128", "target_sync=inplace", "measure.blocks=7", "name=other"});
  CHECK(s.base["batch_size"] == 128);
  CHECK(s.base["target_sync"] == "inplace");
  CHECK_FALSE(s.grid.contains("target_sync"));
  CHECK(s.measure.blocks == 7);
  CHECK(s.name == "other");
  CHECK(grid_size(s) == 2);
  CHECK_THROWS_AS(apply_overrides(s, {"novalue"}), UsageError);
  CHECK_THROWS_AS(apply_overrides(s, {"measure.blocks=1"}), UsageError);
  // Found by the fuzzer: bytes that are not UTF-8 escaped as a JSON error.
  CHECK_THROWS_WITH(apply_overrides(s, {"measure.blocks=@\xff\xff"}),
                    Catch::Contains("not valid UTF-8"));
  CHECK_THROWS_WITH(apply_overrides(s, {"name=\xff"}), Catch::Contains("not valid UTF-8"));
  // And a number too large for a double: the setting refuses it by name.
  CHECK_THROWS_WITH(apply_overrides(s, {"measure.blocks=1e3082"}),
                    Catch::Contains("measure.blocks"));
  CHECK_THROWS_AS(apply_overrides(s, {"measure.bogus=1"}), UsageError);
}

TEST_CASE("trials are interleaved by repeat in a seeded shuffle", "[host][sweep]") {
  SweepSpec s = parse_sweep(kGood, "x.json");
  s.measure.repeats = 3;
  const auto m = test::dqn_like_manifest();
  const auto plan = plan_trials(s, m);
  REQUIRE(plan.size() == 12);
  std::map<int64_t, int> seen;
  for (size_t i = 0; i < plan.size(); ++i) {
    CHECK(plan[i].ordinal == static_cast<int64_t>(i));
    CHECK(plan[i].repeat == static_cast<int64_t>(i / 4));  // all of round r before round r+1
    ++seen[plan[i].config_index];
  }
  for (const auto& [idx, n] : seen) CHECK(n == 3);
  // Same seed, same order; another seed, (almost surely) another order.
  const auto again = plan_trials(s, m);
  s.measure.order_seed = 12345;
  const auto other = plan_trials(s, m);
  bool same = true, differs = false;
  for (size_t i = 0; i < plan.size(); ++i) {
    same = same && plan[i].config_index == again[i].config_index;
    differs = differs || plan[i].config_index != other[i].config_index;
  }
  CHECK(same);
  CHECK(differs);
  // The order is the project's own (gpusweep/random.hpp), not the standard
  // library's: shards planned by binaries built with different standard
  // libraries take the same slice.
  std::vector<int64_t> pinned;
  for (const auto& t : other) pinned.push_back(t.config_index);
  CHECK(pinned == std::vector<int64_t>{3, 2, 0, 1, 1, 0, 2, 3, 0, 1, 3, 2});
  // A mirror design: round 2m + 1 runs round 2m's configs in reverse
  // (a position effect linear in the place cancels over the pair).
  const std::vector<uint64_t> five = {0, 1, 2, 3, 4};
  for (int64_t pair = 0; pair < 8; ++pair) {
    auto first = round_order(five, 99, 2 * pair);
    const auto second = round_order(five, 99, 2 * pair + 1);
    std::reverse(first.begin(), first.end());
    CHECK(first == second);
  }
  CHECK(round_order(five, 99, 0) != round_order(five, 99, 2));
  // Blocks of pairs (5 pairs for 5 configs, 2 for 4): over a block every
  // config takes every place, each pair's order the block's shifted along
  // the places; the next block draws a new order.
  for (const std::vector<uint64_t>& configs :
       {five, std::vector<uint64_t>{0, 1, 2, 3}, std::vector<uint64_t>{0, 1, 2, 3, 4, 5}}) {
    const size_t k = configs.size();
    const int64_t rounds = k % 2 == 0 ? static_cast<int64_t>(k) : 2 * static_cast<int64_t>(k);
    for (int64_t block = 0; block < 3; ++block) {
      std::map<uint64_t, std::set<size_t>> places;
      for (int64_t r = block * rounds; r < (block + 1) * rounds; ++r) {
        const auto order = round_order(configs, 99, r);
        for (size_t p = 0; p < k; ++p) places[order[p]].insert(p);
      }
      for (const auto& [config, taken] : places) {
        INFO(k << " configs, block " << block << ", config " << config);
        CHECK(taken.size() == k);
      }
    }
    CHECK(round_order(configs, 99, 0) != round_order(configs, 99, rounds));
  }
  // A config's key does not depend on which other configs share the round:
  // a block's first pair runs the rest in the same order without one.
  for (int64_t r : {0, 1}) {
    const auto four = round_order({0, 1, 3, 4}, 99, r);
    std::vector<uint64_t> kept;
    for (uint64_t c : round_order(five, 99, r)) {
      if (c != 2) kept.push_back(c);
    }
    CHECK(four == kept);
  }
  // Identity: the same config has the same hash in every repeat.
  for (const auto& a : plan) {
    for (const auto& b : plan) {
      if (a.config_index == b.config_index) CHECK(a.config_hash == b.config_hash);
      if (a.config_index != b.config_index) CHECK(a.config_hash != b.config_hash);
    }
  }
}

TEST_CASE("float settings have one identity however they are written", "[host][sweep]") {
  const auto m = test::dqn_like_manifest();
  SweepSpec a = parse_sweep(R"({"name": "a", "workload": "dqn", "base": {"lr": 1}})", "a.json");
  SweepSpec b = parse_sweep(R"({"name": "a", "workload": "dqn", "base": {"lr": 1.0}})", "b.json");
  CHECK(plan_trials(a, m)[0].config_hash == plan_trials(b, m)[0].config_hash);
  CHECK(expand_configs(a, m)[0]["lr"].is_number_float());
}

TEST_CASE("matches compares only the keys of the partial config", "[host][sweep]") {
  const Json c = {{"a", 1}, {"b", "x"}};
  CHECK(matches(c, Json::object()));
  CHECK(matches(c, {{"a", 1}}));
  CHECK_FALSE(matches(c, {{"a", 2}}));
  CHECK_FALSE(matches(c, {{"z", 1}}));
}

TEST_CASE("grid values that spell the same setting twice are refused", "[host][sweep]") {
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "grid": {"lr": [1, 1.0]}})"),
             Contains("configs #1 and #2 are the same settings"));
}

TEST_CASE("a number beyond a double is a usage error naming the file", "[host][sweep]") {
  // Found by tests/fuzz/sweep_fuzz.cpp: nlohmann reports it as out_of_range,
  // which escaped the parser as an internal error (exit 1).
  try {
    host::parse_sweep(R"({"name": "x", "workload": "w", "measure": {"blocks": 11e308}})",
                      "big.json");
    FAIL("no error");
  } catch (const UsageError& e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("big.json") &&
                             Catch::Matchers::Contains("11e308") &&
                             Catch::Matchers::Contains("fit a double"));
  }
}

TEST_CASE("repeat seeds: repeat 0 keeps the config's, the others differ and stay in range",
          "[host][sweep]") {
  CHECK(host::repeat_seed(7, 0, 0, 1000) == 7);
  std::set<uint64_t> seen;
  for (int64_t r = 1; r <= 200; ++r) {
    const uint64_t s = host::repeat_seed(7, r, 10, 1000);
    CHECK(s >= 10);
    CHECK(s <= 1000);
    CHECK(s == host::repeat_seed(7, r, 10, 1000));  // the same on every resume and shard
    seen.insert(s);
  }
  CHECK(seen.size() > 150);
  CHECK(host::repeat_seed(7, 1, 0, 1000) != host::repeat_seed(8, 1, 0, 1000));
}

TEST_CASE("a time-to-quality target is checked before anything runs: metric, value, budget",
          "[host][sweep][target]") {
  // A manifest that declares its quality metric's range, and one more metric.
  const auto manifest = host::PluginManifest::parse(nlohmann::json::parse(R"({
    "name": "clf", "version": "1.0.0", "unit": "images",
    "quality": {"metric": "accuracy", "higher_is_better": true},
    "metrics": [{"name": "accuracy", "min": 0, "max": 1},
                {"name": "val_loss", "higher_is_better": false, "min": 0}],
    "params": [{"name": "batch_size", "type": "int", "default": 64, "min": 1, "max": 4096}]})"));
  auto error = [&](const std::string& target, const std::string& more = "") {
    try {
      const SweepSpec s = parse_sweep(
          R"({"name": "t", "workload": "clf", "measure": {"target": )" + target + more + "}}",
          "t.json");
      validate_sweep(s, manifest);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // Good: the quality metric by default, or a declared one, with a budget.
  CHECK(error(R"({"value": 0.9, "max_s": 60})").empty());
  CHECK(error(R"({"metric": "val_loss", "value": 0.3, "max_steps": 5000})").empty());
  // Round trip: what is stored reads back the same.
  const SweepSpec good = parse_sweep(
      R"({"name": "t", "workload": "clf", "measure": {"target": {"metric": "val_loss",
          "value": 0.3, "direction": "min", "max_s": 60}}})",
      "t.json");
  REQUIRE(good.measure.target);
  CHECK(good.measure.timeout_s >= 2 * 60);  // raised to cover the budget
  const MeasureSpec back = MeasureSpec::from_json(good.measure.to_json(), "db");
  REQUIRE(back.target);
  CHECK(back.target->to_json() == good.measure.target->to_json());
  CHECK(back.timeout_s == good.measure.timeout_s);

  // A metric the workload does not report, with the ones it does.
  CHECK_THAT(error(R"({"metric": "acuracy", "value": 0.9, "max_s": 60})"),
             Contains("t.json") && Contains("measure.target.metric") &&
                 Contains("'acuracy' is not a metric workload 'clf' reports") &&
                 Contains("did you mean 'accuracy'") && Contains("accuracy, val_loss"));
  // A value outside the metric's range.
  CHECK_THAT(error(R"({"value": 90, "max_s": 60})"),
             Contains("measure.target.value") && Contains("outside what 'accuracy' can take") &&
                 Contains("[0, 1]"));
  CHECK_THAT(error(R"({"metric": "val_loss", "value": -1, "max_s": 60})"), Contains("[0, inf]"));
  // No budget.
  CHECK_THAT(error(R"({"value": 0.9})"),
             Contains("measure.target") && Contains("\"max_s\"") && Contains("\"max_steps\""));
  // Malformed pieces, each named.
  CHECK_THAT(error(R"({"max_s": 60})"), Contains("measure.target.value") && Contains("missing"));
  CHECK_THAT(error(R"({"value": "high", "max_s": 60})"), Contains("expected a number"));
  CHECK_THAT(error(R"({"value": 0.9, "max_s": 60, "direction": "up"})"),
             Contains("measure.target.direction"));
  CHECK_THAT(error(R"({"value": 0.9, "max_s": -5})"), Contains("measure.target.max_s"));
  CHECK_THAT(error(R"({"value": 0.9, "max_steps": 2.5})"), Contains("measure.target.max_steps"));
  CHECK_THAT(error(R"({"value": 0.9, "max_s": 60, "maxs": 1})"),
             Contains("measure.target.maxs") && Contains("did you mean 'max_s'"));
  CHECK_THAT(error("0.9"), Contains("measure.target") && Contains("expected an object"));
  // Adaptive capping: true is the default slack, a number its own; kept in
  // what is stored, so a resumed run caps alike.
  auto cap_of = [](const std::string& cap) {
    return parse_sweep(R"({"name": "t", "workload": "clf", "measure": {"target": {"value": 0.9,
        "max_s": 60, "cap": )" +
                           cap + "}}}",
                       "t.json")
        .measure.target->cap;
  };
  CHECK(cap_of("true") == kDefaultCapSlack);
  CHECK(cap_of("false") == 0);
  CHECK(cap_of("2.5") == 2.5);
  CHECK(MeasureSpec::from_json(
            parse_sweep(R"({"name": "t", "workload": "clf", "measure": {"target": {"value": 0.9,
        "max_s": 60, "cap": 2.5}}})",
                        "t.json")
                .measure.to_json(),
            "db")
            .target->cap == 2.5);
  CHECK_THAT(error(R"({"value": 0.9, "max_s": 60, "cap": 0.5})"),
             Contains("measure.target.cap") && Contains("from 1 to 100"));
  CHECK_THAT(error(R"({"value": 0.9, "max_s": 60, "cap": "yes"})"), Contains("measure.target.cap"));
  // A timeout shorter than the budget; precision rounds with a target.
  CHECK_THAT(error(R"({"value": 0.9, "max_s": 600})", R"(, "timeout_s": 300)"),
             Contains("measure.timeout_s") && Contains("at least 1260"));
  CHECK_THAT(error(R"({"value": 0.9, "max_s": 60})", R"(, "precision": 0.02)"),
             Contains("measure.precision") && Contains("measure.target"));
  // A claim on time_to_target needs a target.
  try {
    validate_sweep(parse_sweep(R"({"name": "t", "workload": "clf", "grid": {"batch_size": [1, 2]},
      "claims": [{"claim": "x", "change": {"batch_size": 2}, "metric": "time_to_target",
                  "expected": 0.5}]})",
                               "t.json"),
                   manifest);
    FAIL("a time_to_target claim without measure.target was accepted");
  } catch (const UsageError& e) {
    CHECK_THAT(e.what(), Contains("claims[0].metric") && Contains("needs measure.target"));
  }
}

TEST_CASE("measure.starts reads auto, serial or parallel, and stores only what was set",
          "[host][sweep]") {
  const auto starts = [](const std::string& v) {
    return parse_sweep(R"({"name": "a", "workload": "dqn", "measure": {"starts": ")" + v + R"("}})",
                       "s.json")
        .measure;
  };
  CHECK(starts("auto").starts == MeasureSpec::Starts::automatic);
  CHECK(starts("serial").starts == MeasureSpec::Starts::serial);
  const MeasureSpec parallel = starts("parallel");
  CHECK(parallel.starts == MeasureSpec::Starts::parallel);
  CHECK(MeasureSpec::from_json(parallel.to_json(), "db").starts == MeasureSpec::Starts::parallel);
  // auto is not stored: sweeps stored before measure.starts keep their hash.
  CHECK_FALSE(starts("auto").to_json().contains("starts"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "measure": {"starts": "eager"}})"),
             Contains("measure.starts") && Contains("\"serial\" or \"parallel\""));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "measure": {"starts": "parallel",
                         "target": {"metric": "mean_return", "value": 100, "max_s": 10}}})"),
             Contains("measure.starts") && Contains("training time"));
}

TEST_CASE("measure.block_s sizes blocks by time: one length at a time, not with a target",
          "[host][sweep]") {
  const SweepSpec timed = parse_sweep(
      R"({"name": "a", "workload": "dqn", "measure": {"block_s": 0.1, "min_warmup_s": 0.5}})",
      "t.json");
  CHECK(timed.measure.block_s == 0.1);
  CHECK(timed.measure.min_warmup_s == 0.5);
  CHECK(timed.measure.block_text() == "blocks of about 0.1 s");
  // A stored sweep reads back as given, the length one way only.
  const Json stored = timed.measure.to_json();
  CHECK(stored.at("block_s") == 0.1);
  CHECK_FALSE(stored.contains("steps_per_block"));
  CHECK(MeasureSpec::from_json(stored, "db").block_s == 0.1);
  // Without block_s the stored protocol is as before (its hash unchanged).
  const Json plain = parse_sweep(R"({"name": "a", "workload": "dqn"})", "p.json").measure.to_json();
  CHECK(plain.at("steps_per_block") == 20);
  CHECK_FALSE(plain.contains("block_s"));
  CHECK_FALSE(plain.contains("min_warmup_s"));

  CHECK_THAT(
      error_of(
          R"({"name": "a", "workload": "dqn", "measure": {"block_s": 0.1, "steps_per_block": 4}})"),
      Contains("measure.block_s") && Contains("not both"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "measure": {"block_s": 0.001,
                         "min_block_s": 0.01}})"),
             Contains("under measure.min_block_s"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "measure": {"block_s": -1}})"),
             Contains("measure.block_s") && Contains("0 or more"));
  CHECK_THAT(error_of(R"({"name": "a", "workload": "dqn", "measure": {"block_s": 0.1,
                         "target": {"metric": "mean_return", "value": 100, "max_s": 10}}})"),
             Contains("measure.block_s") && Contains("steps_per_block instead"));

  // --set gives the length one way and drops the other.
  SweepSpec spec = timed;
  apply_overrides(spec, {"measure.steps_per_block=8"});
  CHECK(spec.measure.block_s == 0);
  CHECK(spec.measure.steps_per_block == 8);
  apply_overrides(spec, {"measure.block_s=0.2"});
  CHECK(spec.measure.block_s == 0.2);
}
