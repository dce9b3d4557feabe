// Each command's options, parsed by its table, made into the request it
// runs: defaults equal to the library's own, values given taken, bad ones
// refused by name, before anything runs.
#include "cli/requests.hpp"
#include "analysis/check.hpp"
#include "cli/commands.hpp"
#include "support/error.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep;
using namespace gpusweep::host;
using Catch::Matchers::Contains;

namespace {

po::variables_map parse(const std::string& command, const Args& args) {
  const CommandDef* c = find_command(command);
  REQUIRE(c != nullptr);
  return parse_args(*c, args);
}

SweepSpec spec() {
  return parse_sweep(R"({"name": "s", "workload": "noop", "grid": {"spin_us": [0, 1]}})", "s.json");
}

}  // namespace

TEST_CASE("check's command line judges as the library does unless told otherwise", "[cli]") {
  const CheckOptions given = check_options(check_spec_of(parse("check", {"s.json"})));
  const CheckOptions library;
  CHECK(given.tolerance == library.tolerance);
  CHECK(given.memory_tolerance == library.memory_tolerance);
  CHECK(given.max_quality_loss == library.max_quality_loss);
  CHECK(given.quality_guard == library.quality_guard);

  const CheckSpec set = check_spec_of(
      parse("check", {"s.json", "--tolerance", "2%", "--memory-tolerance", "0.2",
                      "--max-quality-loss", "5%", "--quality-guard", "non-inferiority"}));
  CHECK(*set.tolerance == Approx(0.02));
  CHECK(*set.memory_tolerance == Approx(0.2));
  CHECK(*set.max_quality_loss == Approx(0.05));
  CHECK(check_options(set).quality_guard == QualityGuard::non_inferiority);
  CHECK_THROWS_WITH(check_spec_of(parse("check", {"--tolerance", "0"})), Contains("--tolerance 0"));
  CHECK_THROWS_WITH(check_spec_of(parse("check", {"--quality-guard", "loose"})),
                    Contains("--quality-guard loose"));
  CHECK_THROWS_WITH(parse("check", {"--tolerance"}), Contains("gpusweep check"));
}

TEST_CASE("run's command line says where and how its trials run", "[cli]") {
  RunRequest r = run_request_of(parse("run", {"s.json"}), spec());
  const RunRequest library;
  CHECK(r.db_path == "gpusweep.db");
  CHECK(r.jobs == library.jobs);
  CHECK(r.fork_server == library.fork_server);
  CHECK_FALSE(r.resume);
  CHECK_FALSE(r.shard);

  r = run_request_of(parse("run", {"s.json", "-j", "2", "--fresh-workers", "--resume", "--gpus",
                                   "0,1", "--allow-plugin-change"}),
                     spec());
  CHECK(r.jobs == 2);
  CHECK_FALSE(r.fork_server);
  CHECK(r.resume);
  CHECK(r.gpus == std::optional<std::string>("0,1"));
  CHECK(r.allow_plugin_change);

  // A shard writes its own database unless --db names one, under a key
  // every shard of the same sweep shares.
  r = run_request_of(parse("run", {"s.json", "--shard", "2/3"}), spec());
  REQUIRE(r.shard);
  CHECK(r.shard->index == 2);
  CHECK(r.db_path == "gpusweep-shard-2-of-3.db");
  CHECK(r.run_key == run_request_of(parse("run", {"s.json", "--shard", "1/3"}), spec()).run_key);
  CHECK(
      run_request_of(parse("run", {"s.json", "--shard", "2/3", "--db", "x.db"}), spec()).db_path ==
      "x.db");
  CHECK_THROWS_WITH(run_request_of(parse("run", {"s.json", "--run-key", "k"}), spec()),
                    Contains("--shard"));
  CHECK_THROWS_AS(run_request_of(parse("run", {"s.json", "--jobs", "0"}), spec()), UsageError);
}

TEST_CASE("compare's command line makes its comparison's options", "[cli]") {
  const SweepSpec s = spec();
  CompareOptions o = compare_options_of(parse("compare", {}), s);
  const CompareOptions library = options_for(s);
  CHECK(o.alpha == library.alpha);
  CHECK(o.max_quality_loss == library.max_quality_loss);
  CHECK(o.min_effect == library.min_effect);
  CHECK(o.baseline == s.baseline);
  o = compare_options_of(parse("compare", {"--baseline", "spin_us=1", "--alpha", "0.1",
                                           "--min-effect", "0", "--across-machines"}),
                         s);
  CHECK(o.baseline == Json{{"spin_us", 1}});
  CHECK(o.alpha == Approx(0.1));
  CHECK(o.min_effect == 0);
  CHECK(o.across_machines);
  CHECK_THROWS_WITH(compare_options_of(parse("compare", {"--min-effect", "1"}), s),
                    Contains("--min-effect"));
}

TEST_CASE("history's command line sets the change-point search", "[cli]") {
  ChangePointOptions o = change_point_options_of(parse("history", {}));
  const ChangePointOptions library;
  CHECK(o.max_p == library.max_p);
  CHECK(o.min_segment == library.min_segment);
  o = change_point_options_of(parse("history", {"--max-p", "0.01", "--min-segment", "5"}));
  CHECK(o.max_p == Approx(0.01));
  CHECK(o.min_segment == 5);
  CHECK_THROWS_WITH(change_point_options_of(parse("history", {"--min-segment", "0"})),
                    Contains("--min-segment 0"));
  CHECK_THROWS_WITH(change_point_options_of(parse("history", {"--max-p", "1"})),
                    Contains("--max-p"));
}

TEST_CASE("launch's command line makes the job script's Slurm options", "[cli]") {
  LaunchRequest r = launch_request_of(parse("launch", {"s.json", "--slurm"}));
  CHECK(r.trials_per_task == LaunchRequest{}.trials_per_task);
  CHECK_FALSE(r.script.gpus_per_task);
  r = launch_request_of(
      parse("launch", {"s.json", "--slurm", "--partition", "gpu", "--gpus-per-task", "2", "--time",
                       "30", "--sbatch-arg=--qos=high"}));
  CHECK(r.script.partition == "gpu");
  CHECK(r.script.gpus_per_task == std::optional<int64_t>(2));
  CHECK(r.script.time_min == std::optional<int64_t>(30));
  CHECK(r.script.extra == std::vector<std::string>{"--qos=high"});
  CHECK_THROWS_WITH(launch_request_of(parse("launch", {"s.json", "--time", "0"})),
                    Contains("--time 0"));
}

TEST_CASE("serve's command line makes the server's options", "[cli]") {
  HttpOptions o = http_options_of(parse("serve", {"--token", "0123456789abcdef"}));
  const HttpOptions library;
  CHECK(o.port == library.port);
  CHECK(o.bind == library.bind);
  CHECK(o.token == "0123456789abcdef");
  o = http_options_of(parse("serve", {"--port", "0", "--bind", "0.0.0.0", "--allow-host", "box",
                                      "--token", "0123456789abcdef"}));
  CHECK(o.port == 0);
  CHECK(o.bind == "0.0.0.0");
  CHECK(o.allowed_hosts == std::vector<std::string>{"box"});
  CHECK_THROWS_WITH(http_options_of(parse("serve", {"--port", "70000"})), Contains("--port"));
  CHECK_THROWS_WITH(http_options_of(parse("serve", {"--token", "short"})), Contains("--token"));
}

TEST_CASE("tune's command line sets only what it names over the file's tune", "[cli]") {
  TuneOverrides o = tune_overrides_of(parse("tune", {"s.json"}));
  CHECK_FALSE(o.objective);
  CHECK_FALSE(o.budget_s);
  CHECK_FALSE(o.constraints);
  o = tune_overrides_of(parse("tune", {"s.json", "--budget", "1h30m", "--objective", "memory",
                                       "--constraint", "quality>=0.9", "--seed", "7"}));
  CHECK(o.budget_s == std::optional<double>(5400));
  CHECK(o.objective == std::optional<std::string>("memory"));
  CHECK(o.constraints == std::vector<std::string>{"quality>=0.9"});
  CHECK(o.seed == std::optional<uint64_t>(7));
  CHECK_THROWS_WITH(tune_overrides_of(parse("tune", {"s.json", "--budget", "soon"})),
                    Contains("--budget"));
}

TEST_CASE("tune-batch's command line sets the batch search", "[cli]") {
  SearchOptions o = search_options_of(parse("tune-batch", {"noop"}));
  const SearchOptions library;
  CHECK(o.mode == library.mode);
  CHECK(o.margin == library.margin);
  CHECK(o.min == library.min);
  CHECK_FALSE(o.max);
  o = search_options_of(
      parse("tune-batch", {"noop", "--mode", "binsearch", "--min", "4", "--max", "64"}));
  CHECK(o.mode == SearchMode::binsearch);
  CHECK(o.min == 4);
  CHECK(o.max == std::optional<int64_t>(64));
  CHECK_THROWS_AS(search_options_of(parse("tune-batch", {"noop", "--mode", "linear"})), UsageError);
}
