// The "measure" keys' table; see sweep_measure_keys.hpp. Defaults and limits
// come from MeasureSpec's initialisers and sweep.hpp's constants, so the
// table cannot say other than the parser does.
#include "spec/sweep_measure_keys.hpp"

#include "spec/sweep.hpp"

#include "support/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace gpusweep::host {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// 600, 0.05, 1e-04 as a person writes them.
std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string flag(bool v) { return v ? "true" : "false"; }

std::string quoted(const std::vector<std::string>& words) {
  std::vector<std::string> q;
  for (const auto& w : words) q.push_back("\"" + w + "\"");
  return name_list(q);
}

// A key of the table by its type, its default and meaning; min, above (an
// exclusive minimum), max, words and when (what it needs beyond its range)
// add what a key has beyond the type's usual range (0 up, no words).
struct Key {
  MeasureKey k;
  Key& min(double v) {
    k.min = v;
    return *this;
  }
  Key& above(double v) {
    k.min = v;
    k.min_exclusive = true;
    return *this;
  }
  Key& max(double v) {
    k.max = v;
    return *this;
  }
  Key& words(std::vector<std::string> w) {
    k.words = std::move(w);
    return *this;
  }
  Key& when(std::string condition) {
    k.condition = std::move(condition);
    return *this;
  }
  operator MeasureKey() const { return k; }  // NOLINT: the table lists Keys as keys
};

Key key(std::string name, MeasureType type, std::string default_text, std::string meaning) {
  Key k;
  k.k.name = std::move(name);
  k.k.type = type;
  k.k.default_text = std::move(default_text);
  k.k.meaning = std::move(meaning);
  return k;
}

// Long by design: the table, one entry per key; splitting it would split the
// one place a key is described.
std::vector<MeasureKey> make_table() {
  using T = MeasureType;
  const MeasureSpec d;
  const std::string auto_text = "\"auto\"";
  return {
      key("warmup_steps", T::integer, number(d.warmup_steps),
          "steps each trial trains before its first block, untimed (none by default under "
          "target, where they would count on the training clock)"),
      key("steps_per_block", T::integer, number(d.steps_per_block),
          "steps in a measured block; each block is one throughput sample")
          .min(1)
          .when("not with block_s"),
      key("blocks", T::integer, number(d.blocks), "measured blocks per trial").min(5),
      key("repeats", T::integer, number(d.repeats),
          "trials per config, each in a fresh process, round by round; intervals count "
          "process-to-process variation from 2 on")
          .min(1)
          .when("3 or more with precision"),
      key("order_seed", T::integer, number(static_cast<double>(d.order_seed)),
          "seeds each round's shuffled trial order (and the turns' order when interleaved)"),
      key("timeout_s", T::seconds, number(d.timeout_s),
          "a trial running longer ends, status timeout (interleaved: its own turns only; under "
          "target, when not given, raised to twice max_s plus 60)")
          .above(0),
      key("silence_s", T::seconds, number(d.silence_s),
          "a worker that sent no heartbeat (twice a second) for this long is ended, status "
          "timeout")
          .above(0),
      key("eval_every_blocks", T::integer, number(d.eval_every_blocks),
          "evaluate quality every this many blocks; 0: once, after the last block"),
      key("max_memory", T::size, "none",
          "caps what each trial may allocate (a CUDA device's caching allocator, else the "
          "address space): a runaway trial ends oom")
          .min(1024.0 * 1024),
      key("precision", T::fraction, "none",
          "rounds of repeats until every config's ratio to the baseline has a 95% interval of at "
          "most this half-width (0.02: within ±2%), or is clearly apart from 1, or budget_s is "
          "spent")
          .above(0)
          .max(1)
          .when("not with target"),
      key("budget_s", T::seconds, number(kDefaultBudgetS),
          "wall time this run may spend on precision's rounds")
          .above(0)
          .when("only with precision"),
      key("stable_warmup", T::boolean, flag(d.stable_warmup),
          "after warmup_steps, warm up in windows of a quarter block until the last three agree "
          "within " +
              number(kStableWarmupTolerance * 100) + "% (at most " + number(kMaxWarmupWindows) +
              " windows); off by default because those steps train, as many as timing says"),
      key("vary_seed", T::boolean, flag(d.vary_seed),
          "each repeat trains from its own seed (repeat 0 keeps the config's seed; the others "
          "record theirs as the stat seed), shared by config and baseline, so that quality's "
          "spread over repeats is seed-to-seed variation; false: every repeat from the config's "
          "seed"),
      key("block_s", T::seconds, number(d.block_s),
          "blocks sized by time: the worker picks the steps per block that last about this long "
          "(recorded as the stat block_steps); 0: blocks of steps_per_block")
          .when("not with steps_per_block or target"),
      key("min_warmup_s", T::seconds, number(d.min_warmup_s),
          "warm up at least this long after warmup_steps, in windows of a quarter block"),
      key("min_block_s", T::seconds, "automatic",
          "the shortest median block a trial may measure, else it fails with the steps_per_block "
          "that would do; automatic: " +
              human_seconds(kMinBlockCpuS) + " on the CPU, " +
              human_seconds(kMinBlockInterleavedCpuS) + " on the CPU interleaved, " +
              human_seconds(kMinBlockDeviceS) + " where a device clock times the blocks; 0: any"),
      key("interleave", T::integer, auto_text,
          "trials alive at once, taking turns block by block; 1: one after another; \"auto\": as "
          "many as the sweep has configs, up to " +
              number(kAutoInterleave) + " (on a GPU, as many as its memory holds)")
          .min(1)
          .max(static_cast<double>(kMaxInterleave))
          .words({"auto"}),
      key("starts", T::choice, auto_text,
          "how interleaved trials set up and finish: \"serial\", one at a time; \"parallel\", all "
          "at once between cycles; \"auto\": parallel on a GPU, serial on the CPU")
          .words({"auto", "serial", "parallel"})
          .when("not \"parallel\" with target"),
      key("busy_share", T::boolean, flag(d.busy_share),
          "on CUDA trials, one more block of warmup steps with the device's activity recorded, "
          "stored as the stat gpu_busy_share (docs/diagnose.md); off by default because the "
          "profiler's start costs each trial time, while diagnose trials always do it"),
      key("target", T::object, "none",
          "time to quality: train until an evaluation reaches a value, or a budget ends "
          "(docs/time-to-target.md)"),
  };
}

}  // namespace

const std::vector<MeasureKey>& measure_keys() {
  static const std::vector<MeasureKey> keys = make_table();
  return keys;
}

const MeasureKey* find_measure_key(const std::string& name) {
  for (const auto& k : measure_keys()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::vector<std::string> measure_key_names() {
  std::vector<std::string> names;
  for (const auto& k : measure_keys()) names.push_back(k.name);
  return names;
}

std::string measure_allowed(const MeasureKey& key) {
  std::string text;
  switch (key.type) {
    case MeasureType::integer:
      text = std::isinf(key.max) ? "an integer, " + number(key.min) + " or more"
                                 : "an integer from " + number(key.min) + " to " + number(key.max);
      if (!key.words.empty()) text = quoted(key.words) + " or " + text;
      break;
    case MeasureType::boolean:
      text = "true or false";
      break;
    case MeasureType::seconds:
      text = key.min_exclusive ? "seconds, above " + number(key.min)
                               : "seconds, " + number(key.min) + " or more";
      break;
    case MeasureType::fraction:
      text = "a number between " + number(key.min) + " and " + number(key.max) + ", exclusive";
      break;
    case MeasureType::size:
      text = "a size such as \"8GiB\" or \"512MiB\", or bytes; at least " + human_bytes(key.min);
      break;
    case MeasureType::choice:
      text = quoted(key.words);
      break;
    case MeasureType::object:
      text = "an object";
      break;
  }
  return key.condition.empty() ? text : text + "; " + key.condition;
}

std::string measure_keys_help() {
  size_t width = 0;
  for (const auto& k : measure_keys()) width = std::max(width, k.name.size());
  std::string out =
      "Measure keys (the sweep file's \"measure\", or --set measure.KEY=VALUE); their\n"
      "meanings: gpusweep settings --measure, or docs/sweep-file.md.\n";
  for (const auto& k : measure_keys()) {
    out += "  " + k.name + std::string(width + 2 - k.name.size(), ' ') + measure_allowed(k) +
           " (default " + k.default_text + ")";
    if (&k != &measure_keys().back()) out += "\n";
  }
  return out;
}

}  // namespace gpusweep::host
