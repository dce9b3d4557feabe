// Sweep parsing, validation and expansion; see sweep.hpp.
#include "model/sweep.hpp"
#include "model/tune.hpp"

#include "model/metrics.hpp"
#include "model/units.hpp"

#include "model/hashing.hpp"
#include "support/error.hpp"
#include "support/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <gpusweep/random.hpp>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <tuple>

namespace gpusweep::host {

namespace {

const std::vector<std::string> kTopKeys = {"name", "workload", "description", "base",
                                           "grid", "measure",  "baseline",    "claims",
                                           "tune", "$comment"};
const std::vector<std::string> kMeasureKeys = {
    "warmup_steps",  "steps_per_block",   "blocks",     "repeats",
    "timeout_s",     "eval_every_blocks", "order_seed", "silence_s",
    "max_memory",    "interleave",        "precision",  "budget_s",
    "stable_warmup", "min_block_s",       "vary_seed",  "target",
    "block_s",       "min_warmup_s"};
const std::vector<std::string> kTargetKeys = {"metric", "value",     "direction",
                                              "max_s",  "max_steps", "cap"};

[[noreturn]] void usage(const std::string& source, const std::string& where,
                        const std::string& what) {
  throw UsageError(source + ": " + (where.empty() ? "" : where + ": ") + what);
}

std::string suggestion(const std::string& key, const std::vector<std::string>& known) {
  if (auto s = did_you_mean(key, known)) return "; did you mean '" + *s + "'?";
  return "";
}

// "line L, column C" of a byte offset in text.
std::string position_of(const std::string& text, size_t offset) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

int64_t measure_int(const std::string& source, const Json& m, const char* key, int64_t fallback,
                    int64_t min) {
  auto it = m.find(key);
  if (it == m.end()) return fallback;
  if (!it->is_number_integer()) {
    usage(source, std::string("measure.") + key, "expected an integer, got " + it->dump());
  }
  const auto v = it->get<int64_t>();
  if (v < min) {
    usage(source, std::string("measure.") + key,
          std::to_string(v) + " is below the minimum " + std::to_string(min));
  }
  return v;
}

const std::vector<std::string> kClaimKeys = {"claim",    "change", "baseline", "metric",
                                             "expected", "source", "requires", "$comment"};

// "expected": a ratio (0.5) or a range ([0.2, 0.4]) of positive numbers.
std::pair<double, double> parse_expected(const std::string& source, const std::string& where,
                                         const Json& e) {
  auto positive = [&](const Json& v) {
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>())) {
      usage(source, where, "expected a positive ratio (changed / baseline), got " + v.dump());
    }
    return v.get<double>();
  };
  if (e.is_array()) {
    if (e.size() != 2) {
      usage(source, where,
            "a range is two ratios [low, high], for example [1.2, 1.3]; got " + e.dump());
    }
    const double lo = positive(e[0]), hi = positive(e[1]);
    if (lo > hi) usage(source, where, "the range " + e.dump() + " has low above high");
    return {lo, hi};
  }
  const double v = positive(e);
  return {v, v};
}

Claim parse_claim(const std::string& source, const std::string& where, const Json& c) {
  if (!c.is_object()) usage(source, where, "expected an object, got " + c.dump());
  for (const auto& [key, value] : c.items()) {
    if (std::find(kClaimKeys.begin(), kClaimKeys.end(), key) == kClaimKeys.end()) {
      usage(source, where + "." + key,
            "unknown claim key" + suggestion(key, kClaimKeys) +
                " (a claim has claim, change, baseline, metric, expected, source, requires)");
    }
  }
  Claim out;
  // A claim about something no setting expresses (XLA, torch.compile) has no
  // change, only what it requires.
  const bool change_optional = c.contains("requires");
  for (const char* key : {"claim", "change", "expected"}) {
    if (!c.contains(key) && !(change_optional && std::string(key) == "change")) {
      usage(source, where + "." + key,
            std::string("missing; a claim needs \"claim\" (its words), \"change\" (the settings "
                        "it changes) and \"expected\" (the ratio it promises)"));
    }
  }
  if (!c["claim"].is_string() || c["claim"].get<std::string>().empty()) {
    usage(source, where + ".claim", "expected the claim in words, got " + c["claim"].dump());
  }
  out.text = c["claim"].get<std::string>();
  if (c.contains("change")) {
    if (!c["change"].is_object() || c["change"].empty()) {
      usage(source, where + ".change",
            "expected an object of the settings the claim changes, got " + c["change"].dump());
    }
    out.change = c["change"];
  }
  if (auto it = c.find("baseline"); it != c.end()) {
    if (!it->is_object())
      usage(source, where + ".baseline", "expected an object, got " + it->dump());
    out.baseline = *it;
  }
  if (auto it = c.find("metric"); it != c.end()) {
    const std::vector<std::string> known = claim_metric_names();
    const bool is_stat = it->is_string() && it->get<std::string>().rfind("stat:", 0) == 0 &&
                         it->get<std::string>().size() > 5;
    if (!it->is_string() || (!is_stat && std::find(known.begin(), known.end(),
                                                   it->get<std::string>()) == known.end())) {
      const std::string got = it->is_string() ? it->get<std::string>() : it->dump();
      usage(source, where + ".metric",
            "unknown metric " + it->dump() + suggestion(got, known) + " (known: " +
                name_list(known) + ", or stat:NAME for a statistic the plugin reports)");
    }
    out.metric = it->get<std::string>();
  }
  std::tie(out.low, out.high) = parse_expected(source, where + ".expected", c["expected"]);
  if (auto it = c.find("source"); it != c.end()) {
    if (!it->is_string()) usage(source, where + ".source", "expected text, got " + it->dump());
    out.source = it->get<std::string>();
  }
  if (auto it = c.find("requires"); it != c.end()) {
    if (!it->is_array()) usage(source, where + ".requires", "expected a list, got " + it->dump());
    const auto& known = claim_features();
    for (const auto& f : *it) {
      const std::string name = f.is_string() ? f.get<std::string>() : f.dump();
      if (!f.is_string() || std::find(known.begin(), known.end(), name) == known.end()) {
        usage(source, where + ".requires",
              "unknown feature " + f.dump() + suggestion(name, known) +
                  " (known: cuda, tensor_cores, xla, torch_compile)");
      }
      out.required_features.push_back(name);
    }
  }
  return out;
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
  if (!it->is_number() || !(it->get<double>() > 0 && it->get<double>() < 1)) {
    usage(source, "measure.precision",
          "expected the target half-width of the ratios' 95% intervals, between 0 and 1 "
          "(0.02: within ±2%), got " +
              it->dump());
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
            "unknown key" + suggestion(key, kTargetKeys) +
                " (known: metric, value, direction, max_s, max_steps, cap)");
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
  for (auto [key, field, what] : {std::tuple<const char*, double*, const char*>{
                                      "min_block_s", &s.min_block_s, " (0: no minimum)"},
                                  {"block_s", &s.block_s, " (0: blocks of steps_per_block steps)"},
                                  {"min_warmup_s", &s.min_warmup_s, " (0: warmup_steps alone)"}}) {
    auto it = m.find(key);
    if (it == m.end()) continue;
    if (!it->is_number() || !(it->get<double>() >= 0) || !std::isfinite(it->get<double>())) {
      usage(source, std::string("measure.") + key,
            std::string("expected a number of seconds, 0 or more") + what + ", got " + it->dump());
    }
    *field = it->get<double>();
  }
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

MeasureSpec parse_measure(const std::string& source, const Json& m) {
  if (!m.is_object()) usage(source, "measure", "expected an object, got " + m.dump());
  for (const auto& [key, value] : m.items()) {
    if (std::find(kMeasureKeys.begin(), kMeasureKeys.end(), key) == kMeasureKeys.end()) {
      usage(source, "measure." + key,
            "unknown measurement setting" + suggestion(key, kMeasureKeys) +
                " (known: warmup_steps, steps_per_block, blocks, "
                "repeats, timeout_s, silence_s, eval_every_blocks, "
                "order_seed, max_memory, interleave, precision, budget_s, stable_warmup, "
                "min_block_s, block_s, min_warmup_s, vary_seed, target)");
    }
  }
  MeasureSpec s;
  s.warmup_steps = measure_int(source, m, "warmup_steps", s.warmup_steps, 0);
  for (auto [key, field] : {std::pair<const char*, bool*>{"stable_warmup", &s.stable_warmup},
                            std::pair<const char*, bool*>{"vary_seed", &s.vary_seed}}) {
    auto it = m.find(key);
    if (it == m.end()) continue;
    if (!it->is_boolean()) {
      usage(source, std::string("measure.") + key, "expected true or false, got " + it->dump());
    }
    *field = it->get<bool>();
  }
  s.steps_per_block = measure_int(source, m, "steps_per_block", s.steps_per_block, 1);
  s.blocks = measure_int(source, m, "blocks", s.blocks, 5);
  s.repeats = measure_int(source, m, "repeats", s.repeats, 1);
  s.eval_every_blocks = measure_int(source, m, "eval_every_blocks", s.eval_every_blocks, 0);
  s.order_seed = static_cast<uint64_t>(measure_int(source, m, "order_seed", 0, 0));
  if (auto it = m.find("interleave"); it != m.end() && it->is_string() && *it != "auto") {
    usage(source, "measure.interleave",
          "expected \"auto\" or a number of trials (1: no interleaving), got " + it->dump());
  }
  if (auto it = m.find("interleave"); it != m.end() && !it->is_string()) {
    s.interleave = measure_int(source, m, "interleave", 0, 1);
    if (s.interleave > kMaxInterleave) {
      usage(source, "measure.interleave",
            "at most " + std::to_string(kMaxInterleave) + " trials take turns, got " + it->dump());
    }
  }
  for (auto [key, field] : {std::pair<const char*, double*>{"timeout_s", &s.timeout_s},
                            std::pair<const char*, double*>{"silence_s", &s.silence_s},
                            std::pair<const char*, double*>{"budget_s", &s.budget_s}}) {
    auto it = m.find(key);
    if (it == m.end()) continue;
    if (!it->is_number() || !(it->get<double>() > 0) || !std::isfinite(it->get<double>())) {
      usage(source, std::string("measure.") + key,
            "expected a positive number of seconds, got " + it->dump());
    }
    *field = it->get<double>();
  }
  if (auto it = m.find("max_memory"); it != m.end()) {
    const std::string fix = "give a size such as \"2GiB\" or \"512MiB\", or a number of bytes";
    if (it->is_number()) {
      s.max_memory_bytes = it->get<double>();
    } else if (it->is_string()) {
      try {
        s.max_memory_bytes = parse_size(it->get<std::string>(), it->dump());
      } catch (const UsageError& e) {
        usage(source, "measure.max_memory", std::string(e.what()) + "; " + fix);
      }
    } else {
      usage(source, "measure.max_memory", "expected a size, got " + it->dump() + ": " + fix);
    }
    if (!(s.max_memory_bytes >= 1024 * 1024) || !std::isfinite(s.max_memory_bytes)) {
      usage(source, "measure.max_memory", "the cap " + it->dump() + " is below 1 MiB: " + fix);
    }
  }
  parse_block_length(source, m, s);
  parse_precision(source, m, s);
  parse_target(source, m, s);
  if (s.target && s.block_s > 0) {
    usage(source, "measure.block_s",
          "time-to-target trials train in the same blocks of steps for every config (the "
          "evaluations' cadence is in steps there): give measure.steps_per_block instead");
  }
  return s;
}

// Parses JSON refusing duplicate object keys (nlohmann keeps the last one
// silently, which hides typos in long sweep files).
Json parse_strict(const std::string& text, const std::string& source) {
  std::vector<std::set<std::string>> seen;
  std::string duplicate;
  auto callback = [&](int /*depth*/, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        seen.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!seen.empty()) seen.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!seen.empty() && !seen.back().insert(parsed.get<std::string>()).second &&
            duplicate.empty()) {
          duplicate = parsed.get<std::string>();
        }
        break;
      default:
        break;
    }
    return true;
  };
  try {
    Json j = Json::parse(text, callback, /*allow_exceptions=*/true, /*ignore_comments=*/false);
    if (!duplicate.empty()) {
      usage(source, "", "key '" + duplicate + "' appears twice in one object; keep one");
    }
    return j;
  } catch (const Json::parse_error& e) {
    std::string msg = e.what();
    // nlohmann's text: "[json.exception.parse_error.101] parse error at line 3, column 5: ..."
    const auto colon = msg.find(": ", msg.find("parse error"));
    const std::string detail = colon == std::string::npos ? msg : msg.substr(colon + 2);
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
      usage(source, "", "the file is empty; a sweep file is a JSON object (see README.md)");
    }
    usage(source, position_of(text, e.byte > 0 ? e.byte - 1 : 0), "not valid JSON: " + detail);
  } catch (const Json::exception& e) {
    // A number beyond a double ("1e999") is out_of_range, not a parse error
    // (found by the fuzzer: it escaped as an internal error).
    std::string msg = e.what();
    const auto bracket = msg.find("] ");
    usage(source, "",
          (bracket == std::string::npos ? msg : msg.substr(bracket + 2)) +
              "; numbers in a sweep file must fit a double");
  }
}

}  // namespace

uint64_t repeat_seed(uint64_t seed, int64_t repeat, uint64_t low, uint64_t high) {
  if (repeat == 0 || high <= low) return seed;
  random::SplitMix64 rng(seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(repeat));
  return low + random::uniform_below(rng, high - low + 1);
}

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

const std::vector<std::string>& claim_features() {
  static const std::vector<std::string> f = {"cuda", "tensor_cores", "xla", "torch_compile"};
  return f;
}

Json Claim::to_json() const {
  Json j{{"claim", text}, {"metric", metric}};
  if (!change.empty()) j["change"] = change;
  if (!baseline.empty()) j["baseline"] = baseline;
  j["expected"] = low == high ? Json(low) : Json::array({low, high});
  if (!source.empty()) j["source"] = source;
  if (!required_features.empty()) j["requires"] = required_features;
  return j;
}

Json SweepSpec::to_json() const {
  Json j{{"name", name}, {"workload", workload}, {"description", description},  {"base", base},
         {"grid", grid}, {"baseline", baseline}, {"measure", measure.to_json()}};
  // Only when present: sweeps stored before claims existed keep their hash.
  if (!claims.empty()) {
    j["claims"] = Json::array();
    for (const auto& c : claims) j["claims"].push_back(c.to_json());
  }
  if (!tune.is_null()) j["tune"] = tune;
  return j;
}

SweepSpec parse_sweep(const std::string& text, const std::string& source) {
  const Json j = parse_strict(text, source);
  if (!j.is_object())
    usage(source, "", std::string("the top level must be a JSON object, got ") + j.type_name());
  for (const auto& [key, value] : j.items()) {
    if (std::find(kTopKeys.begin(), kTopKeys.end(), key) == kTopKeys.end()) {
      usage(source, key,
            "unknown key" + suggestion(key, kTopKeys) +
                " (a sweep has name, workload, description, base, grid, measure, "
                "baseline, claims, tune)");
    }
  }
  SweepSpec s;
  s.source = source;
  for (const char* key : {"name", "workload"}) {
    auto it = j.find(key);
    if (it == j.end()) usage(source, key, "missing; add \"" + std::string(key) + "\": \"...\"");
    if (!it->is_string() || it->get<std::string>().empty()) {
      usage(source, key, "expected a non-empty string, got " + it->dump());
    }
  }
  s.name = j.at("name").get<std::string>();
  s.workload = j.at("workload").get<std::string>();
  if (auto it = j.find("description"); it != j.end()) {
    if (!it->is_string()) usage(source, "description", "expected a string");
    s.description = it->get<std::string>();
  }
  for (auto [key, target] : {std::pair<const char*, Json*>{"base", &s.base},
                             {"grid", &s.grid},
                             {"baseline", &s.baseline}}) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    if (!it->is_object()) usage(source, key, "expected an object, got " + it->dump());
    *target = *it;
  }
  for (auto& [key, values] : s.grid.items()) {
    // A range of a numeric knob ({"min", "max", "scale"}): its values.
    if (values.is_object()) values = expand_range(source, key, values);
    if (!values.is_array() || values.empty()) {
      usage(source, "grid." + key,
            "expected a non-empty array of values or a range {\"min\", \"max\", \"scale\"}, "
            "got " +
                values.dump() + " (a single value belongs in \"base\")");
    }
  }
  if (auto it = j.find("tune"); it != j.end()) {
    parse_tune(source, *it);  // refused here, with the sweep file's other mistakes
    s.tune = *it;
  }
  if (auto it = j.find("measure"); it != j.end()) s.measure = parse_measure(source, *it);
  if (auto it = j.find("claims"); it != j.end()) {
    if (!it->is_array()) usage(source, "claims", "expected a list of claims, got " + it->dump());
    for (size_t i = 0; i < it->size(); ++i) {
      s.claims.push_back(parse_claim(source, "claims[" + std::to_string(i) + "]", (*it)[i]));
    }
  }
  return s;
}

SweepSpec load_sweep_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw UsageError(path + ": cannot open the sweep file (does it exist?)");
  // A sweep file is a few lines; a big one is the wrong file (a results
  // dump, a dataset), refused before it is read into memory and parsed.
  constexpr std::streamoff kMaxBytes = 16 << 20;
  if (const std::streamoff size = in.tellg(); size > kMaxBytes) {
    char mib[32];
    std::snprintf(mib, sizeof mib, "%.1f MiB", static_cast<double>(size) / (1 << 20));
    throw UsageError(path + ": " + mib +
                     " is too big for a sweep file (at most 16 MiB); is it "
                     "the right file?");
  }
  in.seekg(0);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_sweep(text.str(), path);
}

void apply_overrides(SweepSpec& spec, const std::vector<std::string>& sets) {
  for (const auto& set : sets) {
    try {
      (void)Json(set).dump();
    } catch (const Json::type_error&) {
      throw UsageError("--set " + Json(set).dump(-1, ' ', false, Json::error_handler_t::replace) +
                       ": not valid UTF-8 text; write the key and value in UTF-8");
    }
    const auto eq = set.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError("--set " + set + ": expected key=value (for example --set batch_size=128)");
    }
    const std::string key = set.substr(0, eq);
    const std::string text = set.substr(eq + 1);
    if (key == "name" || key == "workload") {
      (key == "name" ? spec.name : spec.workload) = text;
    } else if (key.rfind("measure.", 0) == 0) {
      Json m = spec.measure.to_json();
      // A block's length given one way replaces the other way's.
      if (key == "measure.steps_per_block") m.erase("block_s");
      if (key == "measure.block_s") m.erase("steps_per_block");
      m[key.substr(8)] = parse_cli_value(text);
      spec.measure = parse_measure("--set", m);
    } else {
      spec.base[key] = parse_cli_value(text);
      spec.grid.erase(key);
    }
  }
}

uint64_t grid_size(const SweepSpec& spec) {
  uint64_t n = 1;
  for (const auto& [key, values] : spec.grid.items()) {
    const uint64_t k = values.size();
    if (k != 0 && n > std::numeric_limits<uint64_t>::max() / k) {
      return std::numeric_limits<uint64_t>::max();
    }
    n *= k;
  }
  return n;
}

// Long by design: the checks of a sweep against the manifest in the order a
// user reads the file (grid size, base, grid, baseline, claims), sharing the
// expanded configs and the check and count helpers; each is a few lines.
namespace {

// measure.target against the manifest: a metric the workload declares (its
// quality metric, or one of its "metrics"), a value it can take, and a
// direction where the manifest gives none.
void validate_target(const SweepSpec& spec, const PluginManifest& manifest) {
  const TargetSpec& t = *spec.measure.target;
  const std::string name = t.metric.empty() ? manifest.quality_metric : t.metric;
  const std::string where = t.metric.empty() ? "measure.target" : "measure.target.metric";
  const auto known = manifest.target_metric_names();
  std::string listed;
  for (const auto& n : known) listed += (listed.empty() ? "" : ", ") + n;
  if (name.empty()) {
    usage(spec.source, where,
          "workload '" + manifest.name +
              "' declares no quality metric: name the metric to reach (\"metric\")");
  }
  const auto info = manifest.target_metric(name);
  if (!info) {
    usage(spec.source, where,
          "'" + name + "' is not a metric workload '" + manifest.name + "' reports" +
              suggestion(name, known) + " (it declares: " + (listed.empty() ? "none" : listed) +
              "; gpusweep plugins " + manifest.name + ")");
  }
  const bool out_of_range =
      (info->min && t.value < *info->min) || (info->max && t.value > *info->max);
  if (out_of_range) {
    const std::string range = std::string("[") + (info->min ? number_text(*info->min) : "-inf") +
                              ", " + (info->max ? number_text(*info->max) : "inf") + "]";
    usage(spec.source, "measure.target.value",
          number_text(t.value) + " is outside what '" + name + "' can take, " + range +
              ": no trial could reach it; give a value inside it");
  }
}

// Each claim compares two configs of this sweep: both must be in it.
// `check` judges a setting against the manifest (validate_sweep's).
void validate_claims(
    const SweepSpec& spec, const PluginManifest& manifest,
    const std::function<void(const std::string&, const std::string&, const Json&)>& check) {
  if (spec.claims.empty()) return;
  const auto configs = expand_configs(spec, manifest);
  auto count = [&](const Json& partial) {
    return std::count_if(configs.begin(), configs.end(),
                         [&](const Json& c) { return matches(c, partial); });
  };
  for (size_t i = 0; i < spec.claims.size(); ++i) {
    const Claim& c = spec.claims[i];
    const std::string where = "claims[" + std::to_string(i) + "]";
    if (c.metric == "time_to_target" && !spec.measure.target) {
      usage(spec.source, where + ".metric",
            "time_to_target needs measure.target (the value to train to and its budget); add "
            "it, or claim on another metric");
    }
    if (c.change.empty()) continue;  // nothing to compare here (see Claim::required_features)
    for (const auto& [key, value] : c.change.items()) check(where + ".change." + key, key, value);
    for (const auto& [key, value] : c.baseline.items())
      check(where + ".baseline." + key, key, value);
    Json from = c.baseline.empty() ? spec.baseline : c.baseline;
    if (from.empty() && !configs.empty()) from = configs.front();
    Json to = from;
    for (const auto& [key, value] : c.change.items()) to[key] = value;
    for (const auto& [what, partial] :
         {std::pair<const char*, const Json&>{"baseline", from}, {"changed", to}}) {
      const auto n_match = count(partial);
      if (n_match != 1) {
        usage(spec.source, where,
              std::string("its ") + what + " config " + partial.dump() + " matches " +
                  std::to_string(n_match) +
                  " of the sweep's configurations; a claim compares "
                  "exactly two: put the changed values in the grid, and pin the other knobs "
                  "in the claim's \"baseline\"");
      }
    }
  }
}

}  // namespace

void validate_sweep(const SweepSpec& spec, const PluginManifest& manifest) {
  // The size first: a billion-config grid is refused with its count, before
  // any per-value work.
  const uint64_t n = grid_size(spec);
  if (n > kMaxConfigs) {
    usage(spec.source, "grid",
          "the grid has " +
              (n == std::numeric_limits<uint64_t>::max() ? std::string("over 2^64")
                                                         : std::to_string(n)) +
              " configurations, more than the " + std::to_string(kMaxConfigs) +
              " gpusweep runs in one sweep; split it or drop values");
  }
  const auto names = manifest.param_names();
  auto check = [&](const std::string& where, const std::string& key, const Json& value) {
    const ParamSpec* p = manifest.find(key);
    if (p == nullptr) {
      usage(spec.source, where,
            "'" + key + "' is not a setting of workload '" + manifest.name + "'" +
                suggestion(key, names) + " (list them with: gpusweep plugins " + manifest.name +
                ")");
    }
    if (auto problem = p->check(value)) usage(spec.source, where, *problem);
  };
  for (const auto& [key, value] : spec.base.items()) check("base." + key, key, value);
  for (const auto& [key, values] : spec.grid.items()) {
    for (size_t i = 0; i < values.size(); ++i) {
      check("grid." + key + "[" + std::to_string(i) + "]", key, values[i]);
    }
    std::set<std::string> distinct;
    for (const auto& v : values) {
      if (!distinct.insert(v.dump()).second) {
        usage(spec.source, "grid." + key, "value " + v.dump() + " is listed twice");
      }
    }
  }
  for (const auto& [key, value] : spec.baseline.items()) check("baseline." + key, key, value);

  {
    // Values that differ only in spelling (1 and 1.0 for a float) make the
    // same config twice; each config must be distinct.
    std::map<std::string, size_t> seen;
    const auto configs = expand_configs(spec, manifest);
    for (size_t i = 0; i < configs.size(); ++i) {
      auto [it, fresh] = seen.emplace(canonical_json(configs[i]), i);
      if (!fresh) {
        usage(spec.source, "grid",
              "configs #" + std::to_string(it->second + 1) + " and #" + std::to_string(i + 1) +
                  " are the same settings (" + configs[i].dump() + "); drop the duplicate value");
      }
    }
  }
  validate_claims(spec, manifest, check);
  if (spec.measure.target) validate_target(spec, manifest);
  if (!spec.baseline.empty()) {
    bool any = false;
    for (const auto& c : expand_configs(spec, manifest)) any = any || matches(c, spec.baseline);
    if (!any) {
      usage(spec.source, "baseline",
            spec.baseline.dump() + " matches none of the " + std::to_string(n) +
                " configurations; use values that appear in base or grid");
    }
  }
}

std::vector<Json> expand_configs(const SweepSpec& spec, const PluginManifest& manifest) {
  Json base = manifest.defaults();
  for (const auto& [key, value] : spec.base.items()) base[key] = value;
  std::vector<Json> out{base};
  for (const auto& [key, values] : spec.grid.items()) {
    std::vector<Json> next;
    next.reserve(out.size() * values.size());
    for (const auto& partial : out) {
      for (const auto& v : values) {
        Json c = partial;
        c[key] = v;
        next.push_back(std::move(c));
      }
    }
    out = std::move(next);
  }
  // A float written as 1 or 1.0 is the same setting: one identity, one hash.
  for (auto& c : out) {
    for (const auto& p : manifest.params) {
      if (p.type == ParamType::real && c[p.name].is_number()) c[p.name] = c[p.name].get<double>();
    }
  }
  return out;
}

bool matches(const Json& config, const Json& partial) {
  for (const auto& [key, value] : partial.items()) {
    auto it = config.find(key);
    if (it == config.end() || *it != value) return false;
  }
  return true;
}

bool is_baseline(const Json& baseline, int64_t config_index, const Json& config) {
  return baseline.empty() ? config_index == 0 : matches(config, baseline);
}

namespace {

// The shift of the w-th pair of a block of k configs' rounds (see
// round_order). Even k: the even shifts, the one nearest k / 2 second (half
// a round on: the ends of the first pair run in the middle), then the rest.
// Odd k: multiples of (k - 1) / 2, coprime with k, so that every shift comes
// once a block, each about half a round from the one before.
int64_t block_shift(int64_t k, int64_t w) {
  if (k <= 2) return 0;
  if (k % 2 == 1) return (w * ((k - 1) / 2)) % k;
  const int64_t half = (k / 2) % 2 == 0 ? k / 2 : k / 2 - 1;  // the even shift nearest k / 2
  if (w == 0) return 0;
  if (w == 1) return half;
  int64_t s = 2 * (w - 1);  // 2, 4, ... skipping half
  if (s >= half) s += 2;
  return s % k;
}

}  // namespace

std::vector<uint64_t> round_order(std::vector<uint64_t> configs, uint64_t order_seed,
                                  int64_t round) {
  // Rounds come in pairs, a seeded order then its mirror image, and pairs in
  // blocks: a block's pairs share one seeded order, each pair's shifted so
  // that over the block every config takes every place (a cyclic Latin
  // square of mirrored pairs). k configs take k / 2 pairs a block (shifts
  // 0, 2, 4, ...: a place p then visits p + s and its mirror k - 1 - p - s
  // for every even s, all k places), an odd k takes k pairs (every shift,
  // each place twice).
  const int64_t pair = round >= 0 ? round / 2 : (round - 1) / 2;
  const bool mirror = round - 2 * pair == 1;
  const auto k = static_cast<int64_t>(configs.size());
  const int64_t pairs_a_block = k <= 1 ? 1 : (k % 2 == 0 ? k / 2 : k);
  const int64_t block = pair >= 0 ? pair / pairs_a_block : (pair + 1) / pairs_a_block - 1;
  const int64_t within = pair - block * pairs_a_block;
  const int64_t shift = block_shift(k, within);
  // Each config's key, drawn once a block: the block's order.
  std::vector<std::pair<uint64_t, uint64_t>> keyed;  // (key, config)
  keyed.reserve(configs.size());
  for (uint64_t c : configs) {
    random::SplitMix64 rng(order_seed * 1000003ULL + static_cast<uint64_t>(block) +
                           c * 0x9E3779B97F4A7C15ULL);
    keyed.push_back({random::bits64(rng), c});
  }
  std::sort(keyed.begin(), keyed.end());
  for (int64_t i = 0; i < k; ++i) {
    const int64_t place = (i + shift) % k;
    configs[static_cast<size_t>(mirror ? k - 1 - place : place)] =
        keyed[static_cast<size_t>(i)].second;
  }
  return configs;
}

std::vector<PlannedTrial> plan_trials(const SweepSpec& spec, const PluginManifest& manifest) {
  const auto configs = expand_configs(spec, manifest);
  std::vector<PlannedTrial> out;
  out.reserve(configs.size() * static_cast<size_t>(spec.measure.repeats));
  std::vector<uint64_t> all(configs.size());
  std::iota(all.begin(), all.end(), 0);
  int64_t ordinal = 0;
  for (int64_t r = 0; r < spec.measure.repeats; ++r) {
    for (uint64_t idx : round_order(all, spec.measure.order_seed, r)) {
      PlannedTrial t;
      t.ordinal = ordinal++;
      t.config_index = static_cast<int64_t>(idx);
      t.repeat = r;
      t.config = configs[idx];
      t.config_hash = config_hash(manifest.name, manifest.version, t.config);
      out.push_back(std::move(t));
    }
  }
  return out;
}

std::vector<std::string> varying_keys(const SweepSpec& spec) {
  std::vector<std::string> keys;
  for (const auto& [key, values] : spec.grid.items()) {
    if (values.size() > 1) keys.push_back(key);
  }
  return keys;
}

std::string config_label(const Json& config, const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) {
    if (!out.empty()) out += " ";
    const Json& v = config.contains(k) ? config.at(k) : Json();
    out += k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

}  // namespace gpusweep::host
