// The sweep's measurement protocol ("measure", MeasureSpec and TargetSpec):
// its keys checked and read against their table (sweep_measure_keys.hpp),
// what precision and a target need and change, and the protocol's JSON for
// the database and for headings.
#include "spec/sweep_internal.hpp"

#include "spec/sweep_measure_keys.hpp"
#include "spec/units.hpp"

#include "support/error.hpp"
#include "support/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpusweep::host {

namespace detail {

namespace {

const std::vector<std::string> kTargetKeys = {"metric", "value",     "direction",
                                              "max_s",  "max_steps", "cap"};

// "file: measure.KEY: PROBLEM: give ALLOWED (or leave it out: default D)",
// the allowed values and the default from the keys' table.
[[noreturn]] void bad_value(const std::string& source, const MeasureKey& k,
                            const std::string& problem) {
  usage(source, "measure." + k.name,
        problem + ": give " + measure_allowed(k) + " (or leave it out: default " + k.default_text +
            ")");
}

// A size such as "2GiB", or a number of bytes, of at least the key's minimum.
double size_value(const std::string& source, const MeasureKey& k, const Json& v) {
  double bytes = 0;
  if (v.is_number()) {
    bytes = v.get<double>();
  } else if (v.is_string()) {
    try {
      bytes = parse_size(v.get<std::string>(), v.dump());
    } catch (const UsageError& e) {
      bad_value(source, k, e.what());
    }
  } else {
    bad_value(source, k, "got " + v.dump());
  }
  if (!(bytes >= k.min) || !std::isfinite(bytes)) {
    bad_value(source, k, v.dump() + " is below " + human_bytes(k.min));
  }
  return bytes;
}

// A value checked against its key's type and range in the table; keys that
// depend on each other are checked after all of them.
void check_value(const std::string& source, const MeasureKey& k, const Json& v) {
  const bool is_word = v.is_string() && std::find(k.words.begin(), k.words.end(),
                                                  v.get<std::string>()) != k.words.end();
  switch (k.type) {
    case MeasureType::integer:
      if (is_word) return;
      if (!v.is_number_integer()) bad_value(source, k, "got " + v.dump());
      if (v.get<int64_t>() < k.min) {
        bad_value(source, k, v.dump() + " is below the minimum " + fixed(k.min, 0));
      }
      if (v.get<int64_t>() > k.max) {
        bad_value(source, k, v.dump() + " is above the maximum " + fixed(k.max, 0));
      }
      return;
    case MeasureType::boolean:
      if (!v.is_boolean()) bad_value(source, k, "got " + v.dump());
      return;
    case MeasureType::seconds:
    case MeasureType::fraction: {
      const bool ok = v.is_number() && std::isfinite(v.get<double>()) &&
                      (k.min_exclusive ? v.get<double>() > k.min : v.get<double>() >= k.min) &&
                      (k.type == MeasureType::seconds || v.get<double>() < k.max);
      if (!ok) bad_value(source, k, "got " + v.dump());
      return;
    }
    case MeasureType::size:
      (void)size_value(source, k, v);
      return;
    case MeasureType::choice:
      if (!is_word) bad_value(source, k, "got " + v.dump());
      return;
    case MeasureType::object:
      return;  // measure.target: parse_target checks its keys
  }
}

// Sets field to the key's value when it was given (already checked).
template <typename T>
void read(const Json& m, const char* key, T& field) {
  if (auto it = m.find(key); it != m.end()) field = it->get<T>();
}

// measure.precision and what it needs: repeats to compare from the first
// look (3 when not given), and a budget (kDefaultBudgetS when not given).
void parse_precision(const std::string& source, const Json& m, MeasureSpec& s) {
  auto it = m.find("precision");
  if (it == m.end()) {
    if (m.contains("budget_s")) {
      usage(source, "measure.budget_s",
            "a budget needs measure.precision, the target it is spent on (e.g. 0.02)");
    }
    return;
  }
  s.precision = it->get<double>();
  if (!m.contains("repeats")) {
    s.repeats = 3;
  } else if (s.repeats < 3) {
    // With 2 the first look's variance rests on one degree of freedom, and
    // stopping when it happens to be small gives about 6% false verdicts
    // at a nominal 5% (precision_test's grid).
    usage(source, "measure.repeats",
          "measure.precision keeps its intervals' 95% coverage from 3 repeats on (with " +
              std::to_string(s.repeats) +
              " the rounds stop too often on a variance that happened to be small): give 3 or "
              "more, or leave repeats out (3)");
  }
  if (!m.contains("budget_s")) s.budget_s = kDefaultBudgetS;
}

// measure.target.cap: true (the default slack), false, or the slack.
double parse_cap(const std::string& source, const Json& c) {
  if (c.is_boolean()) return c.get<bool>() ? kDefaultCapSlack : 0;
  if (c.is_number() && c.get<double>() >= 1 && c.get<double>() <= 100) return c.get<double>();
  usage(source, "measure.target.cap",
        "expected true (adaptive capping at slack " + fixed(kDefaultCapSlack, 1) +
            "), false, or the slack: a number from 1 to 100 (a trial stops, censored, once it "
            "has trained slack times the best time to target of its round), got " +
            c.dump());
}

// What a target changes in the rest of measure: no precision rounds, no
// warmup unless asked, a timeout that covers the budget.
void fit_measure_to_target(const std::string& source, const Json& m, const TargetSpec& target,
                           MeasureSpec& s) {
  if (s.precision > 0) {
    usage(source, "measure.precision",
          "rounds until precise judge throughput ratios, not times to a target: leave "
          "measure.precision out of a sweep with measure.target (its repeats are the seeds "
          "compared)");
  }
  // Warmup steps train too, and count on a target's clock; none unless asked.
  if (!m.contains("warmup_steps")) s.warmup_steps = 0;
  if (target.max_s > 0 && !m.contains("timeout_s")) {
    // The default trial timeout, raised to cover the target's budget.
    s.timeout_s = std::max(s.timeout_s, 2 * target.max_s + 60);
  } else if (target.max_s > 0 && s.timeout_s <= 1.5 * target.max_s) {
    usage(source, "measure.timeout_s",
          fixed(s.timeout_s, 0) + " s would end a trial before its target's budget (max_s " +
              fixed(target.max_s, 0) +
              " s of training, plus setup, warmup and evaluations): set measure.timeout_s to "
              "at least " +
              fixed(2 * target.max_s + 60, 0));
  }
}

// measure.target, checked on its own (the manifest's checks are in
// validate_sweep): a number to reach, a known direction, and a budget.
void parse_target(const std::string& source, const Json& m, MeasureSpec& s) {
  auto it = m.find("target");
  if (it == m.end()) return;
  const Json& t = *it;
  const std::string fix_budget =
      "give \"max_s\" (training seconds) or \"max_steps\": a trial that has not reached the "
      "target by then ends, censored";
  if (!t.is_object()) {
    usage(source, "measure.target",
          "expected an object such as {\"metric\": \"val_loss\", \"value\": 0.5, "
          "\"max_s\": 600}, got " +
              t.dump());
  }
  for (const auto& [key, value] : t.items()) {
    if (std::find(kTargetKeys.begin(), kTargetKeys.end(), key) == kTargetKeys.end()) {
      usage(source, "measure.target." + key,
            "unknown key" + suggestion(key, kTargetKeys) + " (known: " + name_list(kTargetKeys) +
                ")");
    }
  }
  TargetSpec target;
  if (auto mt = t.find("metric"); mt != t.end()) {
    if (!mt->is_string() || mt->get<std::string>().empty()) {
      usage(source, "measure.target.metric",
            "expected the name of a metric the workload reports, got " + mt->dump() +
                " (leave it out for the workload's quality metric)");
    }
    target.metric = mt->get<std::string>();
  }
  auto v = t.find("value");
  if (v == t.end() || !v->is_number() || !std::isfinite(v->get<double>())) {
    usage(source, "measure.target.value",
          std::string(v == t.end() ? "missing" : "expected a number, got " + v->dump()) +
              ": the value of the metric that counts as reached");
  }
  target.value = v->get<double>();
  if (auto d = t.find("direction"); d != t.end()) {
    if (*d != "max" && *d != "min") {
      usage(source, "measure.target.direction",
            "expected \"max\" (reached at or above the value) or \"min\" (at or below), got " +
                d->dump());
    }
    target.higher_is_better = *d == "max";
  }
  if (auto ms = t.find("max_s"); ms != t.end()) {
    if (!ms->is_number() || !(ms->get<double>() > 0) || !std::isfinite(ms->get<double>())) {
      usage(source, "measure.target.max_s",
            "expected a positive number of training seconds, got " + ms->dump());
    }
    target.max_s = ms->get<double>();
  }
  if (auto st = t.find("max_steps"); st != t.end()) {
    if (!st->is_number_integer() || st->get<int64_t>() < 1) {
      usage(source, "measure.target.max_steps",
            "expected a whole number of steps, 1 or more, got " + st->dump());
    }
    target.max_steps = st->get<int64_t>();
  }
  if (target.max_s <= 0 && target.max_steps <= 0) usage(source, "measure.target", fix_budget);
  if (auto c = t.find("cap"); c != t.end()) {
    target.cap = parse_cap(source, *c);
    target.cap_given = true;
  }
  fit_measure_to_target(source, m, target, s);
  s.target = target;
}

// The block's length and the warmup's time: min_block_s, block_s (steps
// sized by time, or steps_per_block, not both) and min_warmup_s.
void parse_block_length(const std::string& source, const Json& m, MeasureSpec& s) {
  read(m, "min_block_s", s.min_block_s);
  read(m, "block_s", s.block_s);
  read(m, "min_warmup_s", s.min_warmup_s);
  if (s.block_s > 0 && m.contains("steps_per_block")) {
    usage(source, "measure.block_s",
          "give the block's length once: block_s (seconds, steps sized per config) or "
          "steps_per_block (steps), not both");
  }
  if (s.block_s > 0 && s.min_block_s > s.block_s) {
    usage(source, "measure.block_s",
          "blocks of " + std::to_string(s.block_s) + " s are under measure.min_block_s (" +
              std::to_string(s.min_block_s) + " s): raise block_s");
  }
}

void parse_starts(const std::string& source, const Json& m, MeasureSpec& s) {
  const auto it = m.find("starts");
  if (it == m.end()) return;
  if (*it == "auto") {
    s.starts = MeasureSpec::Starts::automatic;
  } else if (*it == "serial") {
    s.starts = MeasureSpec::Starts::serial;
  } else if (*it == "parallel") {
    s.starts = MeasureSpec::Starts::parallel;
  }
  if (s.target && s.starts == MeasureSpec::Starts::parallel) {
    usage(source, "measure.starts",
          "time-to-target trials take turns by training time, not in cycles of blocks, so "
          "their starts cannot wait for a cycle's end: leave starts out (or \"serial\")");
  }
}

}  // namespace

MeasureSpec parse_measure(const std::string& source, const Json& m) {
  if (!m.is_object()) usage(source, "measure", "expected an object, got " + m.dump());
  for (const auto& [key, value] : m.items()) {
    const MeasureKey* k = find_measure_key(key);
    if (k == nullptr) {
      const auto known = measure_key_names();
      usage(source, "measure." + key,
            "unknown measurement setting" + suggestion(key, known) +
                " (known: " + name_list(known) + ")");
    }
    check_value(source, *k, value);
  }
  MeasureSpec s;
  read(m, "warmup_steps", s.warmup_steps);
  read(m, "steps_per_block", s.steps_per_block);
  read(m, "blocks", s.blocks);
  read(m, "repeats", s.repeats);
  read(m, "eval_every_blocks", s.eval_every_blocks);
  if (auto it = m.find("order_seed"); it != m.end()) {
    s.order_seed = static_cast<uint64_t>(it->get<int64_t>());
  }
  if (auto it = m.find("interleave"); it != m.end() && !it->is_string()) {
    s.interleave = it->get<int64_t>();  // "auto" is 0, the default
  }
  read(m, "stable_warmup", s.stable_warmup);
  read(m, "vary_seed", s.vary_seed);
  read(m, "busy_share", s.busy_share);
  read(m, "timeout_s", s.timeout_s);
  read(m, "silence_s", s.silence_s);
  read(m, "budget_s", s.budget_s);
  if (auto it = m.find("max_memory"); it != m.end()) {
    s.max_memory_bytes = size_value(source, *find_measure_key("max_memory"), *it);
  }
  parse_block_length(source, m, s);
  parse_precision(source, m, s);
  parse_target(source, m, s);
  parse_starts(source, m, s);
  if (s.target && s.block_s > 0) {
    usage(source, "measure.block_s",
          "time-to-target trials train in the same blocks of steps for every config (the "
          "evaluations' cadence is in steps there): give measure.steps_per_block instead");
  }
  return s;
}

}  // namespace detail

using detail::parse_measure;

MeasureSpec MeasureSpec::from_json(const Json& j, const std::string& source) {
  return parse_measure(source, j);
}

std::string MeasureSpec::block_text() const {
  if (block_s > 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "blocks of about %.3g s", block_s);
    return buf;
  }
  return "blocks of " + std::to_string(steps_per_block) + " steps";
}

Json MeasureSpec::to_json() const {
  Json j{{"warmup_steps", warmup_steps},
         {"blocks", blocks},
         {"repeats", repeats},
         {"timeout_s", timeout_s},
         {"eval_every_blocks", eval_every_blocks},
         {"order_seed", order_seed}};
  // Only when set: sweeps stored before silence_s existed keep their hash
  // (and stay resumable).
  if (silence_s != MeasureSpec{}.silence_s) j["silence_s"] = silence_s;
  if (max_memory_bytes > 0) j["max_memory"] = max_memory_bytes;
  if (interleave > 0) j["interleave"] = interleave;
  if (stable_warmup) j["stable_warmup"] = true;
  if (min_block_s >= 0) j["min_block_s"] = min_block_s;
  // One of the two lengths: a stored sweep reads back as it was given.
  if (block_s > 0) {
    j["block_s"] = block_s;
  } else {
    j["steps_per_block"] = steps_per_block;
  }
  if (min_warmup_s > 0) j["min_warmup_s"] = min_warmup_s;
  if (busy_share) j["busy_share"] = true;
  if (starts != Starts::automatic) j["starts"] = starts == Starts::serial ? "serial" : "parallel";
  if (!vary_seed) j["vary_seed"] = false;
  if (precision > 0) {
    j["precision"] = precision;
    j["budget_s"] = budget_s;
  }
  if (target) j["target"] = target->to_json();
  return j;
}

Json TargetSpec::to_json() const {
  Json j{{"value", value}};
  if (!metric.empty()) j["metric"] = metric;
  if (higher_is_better) j["direction"] = *higher_is_better ? "max" : "min";
  if (max_s > 0) j["max_s"] = max_s;
  if (max_steps > 0) j["max_steps"] = max_steps;
  if (cap > 0) j["cap"] = cap;
  if (cap <= 0 && cap_given) j["cap"] = false;
  return j;
}

}  // namespace gpusweep::host
