// Sweep file parsing (sweep.hpp): the file read and parsed strictly (no
// duplicate keys), its top-level keys and claims checked, and the sweep's
// and its claims' JSON for the database; with the errors' wording (usage,
// suggestion) the other parts share through sweep_internal.hpp.
#include "spec/sweep_internal.hpp"
#include "spec/tune.hpp"

#include "spec/metrics.hpp"

#include "support/error.hpp"
#include "support/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

namespace gpusweep::host {

namespace detail {

[[noreturn]] void usage(const std::string& source, const std::string& where,
                        const std::string& what) {
  throw UsageError(source + ": " + (where.empty() ? "" : where + ": ") + what);
}

std::string suggestion(const std::string& key, const std::vector<std::string>& known) {
  if (auto s = did_you_mean(key, known)) return "; did you mean '" + *s + "'?";
  return "";
}

}  // namespace detail

using detail::parse_measure;
using detail::suggestion;
using detail::usage;

namespace {

const std::vector<std::string> kTopKeys = {"name", "workload", "description", "base",
                                           "grid", "measure",  "baseline",    "claims",
                                           "tune", "check",    "$comment"};

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
      const std::string got = value_text(*it);
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
      const std::string name = value_text(f);
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
      usage(source, "",
            "the file is empty; a sweep file is a JSON object (see docs/sweep-file.md)");
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
  if (tune) j["tune"] = tune->to_json();
  if (check) j["check"] = check->to_json();
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
    s.tune = parse_tune(source, *it);
  }
  if (auto it = j.find("check"); it != j.end()) s.check = parse_check(source, *it);
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

}  // namespace gpusweep::host
