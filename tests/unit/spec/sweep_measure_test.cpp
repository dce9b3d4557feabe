// The measure keys' table: the parser's errors, its defaults and --help all
// come from it, so a key the parser reads and the table lists agree.
#include "spec/sweep.hpp"
#include "spec/sweep_measure_keys.hpp"

#include "support/error.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace gpusweep;
using namespace gpusweep::host;
using Catch::Matchers::Contains;

namespace {

// The message of the UsageError that reading `measure` from file raises.
std::string measure_error(const std::string& measure, const std::string& file = "m.json") {
  try {
    (void)parse_sweep(R"({"name": "a", "workload": "w", "measure": )" + measure + "}", file);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("an unknown measure key is named, with the close one and every known key",
          "[host][sweep][measure]") {
  const std::string e = measure_error(R"({"repeat": 3})");
  CHECK_THAT(
      e, Contains("m.json") && Contains("measure.repeat:") && Contains("did you mean 'repeats'"));
  for (const auto& name : measure_key_names()) CHECK_THAT(e, Contains(name));
  // Far from every key: named, with no guess.
  CHECK_THAT(measure_error(R"({"zzzzzz": 1})"),
             Contains("measure.zzzzzz") && !Contains("did you mean"));
}

TEST_CASE("a bad measure value names the file, the key, the allowed values and the fix",
          "[host][sweep][measure]") {
  CHECK_THAT(measure_error(R"({"blocks": 3})", "s.json"),
             Contains("s.json: measure.blocks: 3 is below the minimum 5") &&
                 Contains("give an integer, 5 or more") &&
                 Contains("(or leave it out: default 10)"));
  CHECK_THAT(measure_error(R"({"interleave": 65})"),
             Contains("measure.interleave") && Contains("above the maximum 64") &&
                 Contains("\"auto\" or an integer from 1 to 64"));
  CHECK_THAT(measure_error(R"({"precision": 1.5})"),
             Contains("measure.precision") && Contains("between 0 and 1"));
  CHECK_THAT(measure_error(R"({"max_memory": "12 parsecs"})"),
             Contains("measure.max_memory") && Contains("a size such as"));
  CHECK_THAT(measure_error(R"({"max_memory": 1000})"),
             Contains("measure.max_memory") && Contains("is below 1.00 MiB"));
  CHECK(
      measure_error(R"({"interleave": "auto", "starts": "serial", "max_memory": "1GiB"})").empty());
}

TEST_CASE("every key in the table is one the parser reads, checked as the table says",
          "[host][sweep][measure]") {
  for (const auto& k : measure_keys()) {
    INFO(k.name);
    // A value of no key's type: the error is the table's allowed values.
    const std::string e = measure_error(R"({")" + k.name + R"(": [1]})");
    CHECK_THAT(e, Contains("measure." + k.name));
    CHECK_THAT(e, !Contains("unknown measurement setting"));
    if (k.type != MeasureType::object) CHECK_THAT(e, Contains(measure_allowed(k)));
  }
  // Whatever to_json stores is a key of the table (a spec with every field set).
  MeasureSpec all;
  all.max_memory_bytes = 1 << 30;
  all.interleave = 2;
  all.stable_warmup = all.busy_share = true;
  all.vary_seed = false;
  all.min_block_s = 0.001;
  all.min_warmup_s = 1;
  all.precision = 0.02;
  all.budget_s = 60;
  all.silence_s = 10;
  all.starts = MeasureSpec::Starts::serial;
  std::set<std::string> stored;
  const Json fixed_blocks = all.to_json();
  for (const auto& [key, value] : fixed_blocks.items()) stored.insert(key);
  all.block_s = 0.1;
  all.target = TargetSpec{};
  const Json timed_blocks = all.to_json();
  for (const auto& [key, value] : timed_blocks.items()) stored.insert(key);
  CHECK(stored.size() >= 18);
  for (const auto& key : stored) CHECK(find_measure_key(key) != nullptr);
}

TEST_CASE("the table's defaults are what a sweep without the key runs", "[host][sweep][measure]") {
  const Json defaults = MeasureSpec{}.to_json();
  int compared = 0;
  for (const auto& k : measure_keys()) {
    INFO(k.name);
    const Json shown = Json::parse(k.default_text, nullptr, false);
    if (shown.is_discarded() || !defaults.contains(k.name)) continue;
    CHECK(shown == defaults[k.name]);
    ++compared;
  }
  CHECK(compared >= 6);  // warmup_steps, steps_per_block, blocks, repeats, timeout_s, ...
  CHECK(find_measure_key("blocks")->default_text == "10");
  CHECK(find_measure_key("repeats")->default_text == "3");
  CHECK(find_measure_key("interleave")->default_text == "\"auto\"");
  CHECK(find_measure_key("vary_seed")->default_text == "true");
}

TEST_CASE("--help lists every measure key with its allowed values and default",
          "[host][sweep][measure]") {
  const std::string help = measure_keys_help();
  for (const auto& k : measure_keys()) {
    CHECK_THAT(help, Contains("  " + k.name + " "));
    CHECK_THAT(help, Contains(measure_allowed(k) + " (default " + k.default_text + ")"));
  }
}
