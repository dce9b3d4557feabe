// Sweep files: parsing, --set overrides, validation against a plugin
// manifest, grid expansion and the (seeded, interleaved) trial order.
#pragma once

#include "spec/check_spec.hpp"
#include "spec/manifest.hpp"
#include "spec/tune_spec.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gpusweep::host {

// The most trials that take turns at once (measure.interleave), and the
// most that "auto" keeps alive: each holds its memory while it waits.
constexpr int64_t kMaxInterleave = 64;
constexpr int64_t kAutoInterleave = 8;
// measure.target.cap: true's slack (adaptive capping; run/runner.hpp Capping).
constexpr double kDefaultCapSlack = 1.5;
// measure.budget_s when measure.precision is set without one, and the most
// rounds a run adds.
constexpr double kDefaultBudgetS = 600;
constexpr int64_t kMaxRounds = 100;

// The automatic minimum block (MeasureSpec::min_block_s): a block's fixed
// cost is about a microsecond on the CPU (two clock reads, the step loop's
// calls) and tens of microseconds on a GPU (a device sync, two events), so
// these keep it near 1%.
constexpr double kMinBlockCpuS = 1e-4;
constexpr double kMinBlockDeviceS = 5e-3;
// Interleaved on the CPU, a block also starts cold: another trial's turn
// used the caches. The automatic minimum is then long enough for that start
// to be a small share of the block: bench/run.py interleave_cost measured dqn
// at one thread 0.03-0.3 ms slower a block of 2-32 steps taking turns (and
// a few percent slower per step, alike for every config), so 5 ms keeps the
// start within a few percent; the default 20 steps of dqn (5.6 ms) pass.
constexpr double kMinBlockInterleavedCpuS = 5e-3;

// The seed repeat `repeat` of a config with seed `seed` trains from
// (MeasureSpec::vary_seed): `seed` itself for repeat 0, else a SplitMix64
// draw from both, within the seed parameter's range [low, high].
uint64_t repeat_seed(uint64_t seed, int64_t repeat, uint64_t low, uint64_t high);

// Stable warmup (MeasureSpec::stable_warmup).
constexpr double kStableWarmupTolerance = 0.05;
constexpr int64_t kMaxWarmupWindows = 20;

// Time to quality (measure.target): a trial trains, block after block, until
// an evaluation reaches `value` of `metric` or its training budget ends (then
// it is censored: its time is a lower bound). The training clock is the
// blocks' time; evaluations are timed apart.
// Under measure.target, each evaluation's training clock is stored beside
// its metrics (kind eval, at its step) as "gpusweep.train_s" and
// "gpusweep.samples": a prefix no plugin metric has.
inline constexpr char kCurvePrefix[] = "gpusweep.";

struct TargetSpec {
  std::string metric;  // a metric evaluate() reports; "" = the workload's quality metric
  double value = 0;
  // "direction": "max" (reached at or above value) or "min"; nothing: the
  // metric's own direction in the manifest.
  std::optional<bool> higher_is_better;
  double max_s = 0;       // training seconds before the trial is censored; 0: none
  int64_t max_steps = 0;  // measured steps before it is censored; 0: none
  // Adaptive capping's slack (run/runner.hpp Capping): a trial stops,
  // censored, once it has trained cap x the best time to target of its
  // round; 0: no capping.
  double cap = 0;
  // "cap" was given (true, false or a slack): tune caps by default only
  // where it was not.
  bool cap_given = false;

  // Adaptive capping at kDefaultCapSlack unless "cap" was given: what tune
  // and tune-batch's target stage race with.
  void cap_by_default() {
    if (!cap_given) cap = kDefaultCapSlack;
  }

  Json to_json() const;
};

// A sweep file's "measure", checked (sweep_measure.cpp). What each key means,
// its allowed values and default are in one place, the table in
// sweep_measure_keys.cpp (docs/sweep-file.md, `gpusweep run --help`); the
// comments here say only how a field encodes what the file says.
struct MeasureSpec {
  int64_t warmup_steps = 10;
  bool stable_warmup = false;
  int64_t steps_per_block = 20;
  double block_s = 0;  // 0: blocks of steps_per_block steps
  double min_warmup_s = 0;
  int64_t blocks = 10;
  int64_t repeats = 3;
  double timeout_s = 600;
  double silence_s = 30;
  double max_memory_bytes = 0;  // 0: no cap
  int64_t eval_every_blocks = 0;
  uint64_t order_seed = 0;
  // 0: "auto" (see auto_interleave).
  int64_t interleave = 0;
  enum class Starts { automatic, serial, parallel };
  Starts starts = Starts::automatic;
  bool busy_share = false;  // through the plugin's GPUSWEEP_EXT_DEVICE_BUSY
  double precision = 0;     // 0: the planned repeats only
  double budget_s = 0;      // kDefaultBudgetS once precision is set without one
  // Negative: automatic (kMinBlockCpuS, kMinBlockInterleavedCpuS or
  // kMinBlockDeviceS, decided where the trials run); 0: no minimum.
  double min_block_s = -1;
  bool vary_seed = true;             // repeat r trains from repeat_seed(seed, r, ...)
  std::optional<TargetSpec> target;  // nothing: the fixed blocks above

  // "blocks of 20 steps" or "blocks of about 0.2 s" (for headings).
  std::string block_text() const;

  Json to_json() const;
  // Reads to_json()'s document back (or a sweep file's "measure"), checked as
  // a sweep file is; throws UsageError naming source.
  static MeasureSpec from_json(const Json& j, const std::string& source);
};

// A claim from a tuning guide, carried by the sweep that tests it: changing
// `change` (against `baseline`, or the sweep's baseline) moves `metric` by the
// `expected` ratio (changed / baseline), according to `source`.
struct Claim {
  std::string text;                // the claim in words: "60-80% less transfer time"
  Json change = Json::object();    // settings that differ from the claim's baseline
  Json baseline = Json::object();  // partial config; empty: the sweep's baseline
  std::string metric = "throughput";
  double low = 1;  // expected ratio range, low <= high
  double high = 1;
  std::string source;  // where the claim comes from
  // "requires" in the file (a C++20 keyword, so not the field's name): the
  // features the claim needs ("cuda", "xla", ...).
  std::vector<std::string> required_features;

  Json to_json() const;
};

// Features a claim may require.
const std::vector<std::string>& claim_features();

struct SweepSpec {
  std::string source;  // file path, for messages
  std::string name;
  std::string workload;
  std::string description;
  Json base = Json::object();
  Json grid = Json::object();
  Json baseline = Json::object();
  MeasureSpec measure;
  std::vector<Claim> claims;
  // `gpusweep tune`'s settings as the file gives them, or a race's own
  // (tune.race); absent when the file has none.
  std::optional<TuneSpec> tune;
  // A check's two builds and tolerances (`gpusweep check` writes it, with a
  // grid axis "build": ["base", "head"]); absent for any other run.
  std::optional<CheckSpec> check;
  // The base keys a command's --set gave (apply_overrides): an error in
  // one is told against --set, not the file.
  std::vector<std::string> overridden;

  // The sweep as it will run (after overrides), for the database.
  Json to_json() const;
};

// Whether the run of this spec is a race (`gpusweep tune` wrote tune.race).
inline bool is_tune_run(const SweepSpec& spec) { return spec.tune && spec.tune->race; }

// UsageError for a check's sweep (spec.check set) given to a command that
// runs one build (run, resume): it would hand the build axis to the
// workload as one of its settings. validate_sweep calls it first.
void refuse_check(const SweepSpec& spec);

// What a check refuses in the sweep it is given (UsageError naming the
// file, key and fix): a check's stored sweep, a setting named `build`,
// measure.target, fewer than 3 repeats.
void validate_check_sweep(const SweepSpec& spec);

// The sweep as a check of two builds runs it: the build axis last in the
// grid, the baseline on base, no precision rounds of its own (the check's
// rounds replace them), budget_s its budget, and `check` (the builds and
// tolerances) stored with it.
void make_check(SweepSpec& spec, CheckSpec check, double budget_s);

// The largest grid gpusweep expands; bigger sweeps are refused up front.
constexpr uint64_t kMaxConfigs = 100000;

// Parses sweep text. Throws UsageError naming source, the key path or the
// line and column, and the fix. Duplicate keys are errors.
SweepSpec parse_sweep(const std::string& text, const std::string& source);
SweepSpec load_sweep_file(const std::string& path);

// Applies "key=value" overrides: plain keys set base (and pin a grid axis of
// that name to the one value), "measure.key" sets the protocol, "name" and
// "workload" replace those.
void apply_overrides(SweepSpec& spec, const std::vector<std::string>& sets);

// Number of grid points, saturating at UINT64_MAX.
uint64_t grid_size(const SweepSpec& spec);

// Checks every key and value against the manifest. Throws UsageError.
void validate_sweep(const SweepSpec& spec, const PluginManifest& manifest);

// Resolved configs (defaults, then base, then the grid point), grid order:
// the last grid key varies fastest.
std::vector<Json> expand_configs(const SweepSpec& spec, const PluginManifest& manifest);

// True when every key of partial has the same value in config.
bool matches(const Json& config, const Json& partial);

// Whether a config is the baseline: the one matching `baseline` (settings,
// possibly partial), or the first config (index 0) when baseline is empty.
// The one rule for compare, results, best and the claims.
bool is_baseline(const Json& baseline, int64_t config_index, const Json& config);

struct PlannedTrial {
  int64_t ordinal = 0;
  int64_t config_index = 0;
  int64_t repeat = 0;
  Json config;
  std::string config_hash;
};

// The order round `round` of a run runs its configs in (their trials'
// ordinals, which the runner follows). Rounds come in pairs: rounds 2m and
// 2m + 1 run the same order forwards and then backwards (a mirror design, as
// ABBA), so that a position effect linear in the place cancels within each
// pair. Pairs come in blocks of k / 2 (k configs, even) or k (odd): a
// block's pairs share one order, drawn from (order_seed, block, config),
// each pair's shifted along the places (0, then about half a round, ...),
// so that over a block every config takes every place, and from one pair to
// the next a config at the ends moves to the middle. Every round of a run is
// ordered so (the first grid's repeats, precision's, tune's racing and
// confirmation rounds): no config holds one place in every round, where a
// position effect (a GPU's boost after the host's pause, a card heating
// through a round, a warm cache, the first or last trial of a round) would
// add the same bias to every round's ratio. A mirror alone kept a config at
// the ends or in the middle in both rounds of a pair: an effect symmetric
// in place (ends against middle) was then one draw a pair, and a t over 3
// rounds called 23-27% of A/A pairs different (the ttq review's L2; now
// 1-2%: tests/unit/analysis/position_test.cpp, bench/position). A fresh
// shuffle per round would only average out (two configs shuffled run in the
// same order three rounds out of three a quarter of the time). Two configs
// make blocks of one pair: a new order each pair, as before. A config's key
// does not depend on which others share the round; the function is pure,
// so a resumed or replayed run orders the round the same way.
std::vector<uint64_t> round_order(std::vector<uint64_t> configs, uint64_t order_seed,
                                  int64_t round);

// Every config times every repeat. Repeat r of all configs runs before repeat
// r+1 of any, each round in its own seeded shuffle, so that drift on a noisy
// machine favours no config.
std::vector<PlannedTrial> plan_trials(const SweepSpec& spec, const PluginManifest& manifest);

// Keys whose value differs between configs (the grid axes, in order).
std::vector<std::string> varying_keys(const SweepSpec& spec);

// "key=value key=value" of the keys that vary, for one config.
std::string config_label(const Json& config, const std::vector<std::string>& keys);
// The same of every key the object holds (a claim's change, in its order).
std::string config_label(const Json& config);

}  // namespace gpusweep::host
