// check's views; see check_view.hpp.
#include "report/check_view.hpp"

#include "report/output.hpp"
#include "report/report.hpp"
#include "report/run_view.hpp"
#include "spec/sweep.hpp"
#include "support/error.hpp"
#include "support/exit_code.hpp"
#include "support/format.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace gpusweep::host {

CheckFormat parse_check_format(const std::string& text) {
  if (text == "text" || text == "table") return CheckFormat::text;
  if (text == "md") return CheckFormat::md;
  if (text == "json") return CheckFormat::json;
  if (text == "junit") return CheckFormat::junit;
  throw UsageError("--format " + text + ": give text, md, json or junit");
}

namespace {

std::string label_of(const CheckRunReport& r, const CheckPair& p) {
  const std::string l = config_label(p.config, r.keys);
  return l.empty() ? "the sweep's config" : l;
}

std::string build_line(const CheckBuild& build) {
  std::string out = build.label;
  out += (out.empty() ? "" : ": ") + build.path;
  out += " (version " + build.version;
  if (!build.hash.empty()) out += ", build " + build.hash.substr(0, 12);
  return out + ")";
}

// A pair's reason and notes, one line.
std::string why_of(const CheckPair& p) {
  std::string why = p.reason;
  for (const auto& n : p.notes) why += "; " + n;
  return why;
}

Json pair_record(const CheckRunReport& r, const CheckPair& p) {
  Json rec = Json::object();
  rec["config"] = label_of(r, p);
  rec["base"] = json_or_null(config_throughput(*p.base));
  rec["head"] = json_or_null(config_throughput(*p.head));
  rec["ratio"] = p.ratio ? Json(p.ratio->ratio) : Json();
  rec["low"] = p.ratio ? Json(p.ratio->low) : Json();
  rec["high"] = p.ratio ? Json(p.ratio->high) : Json();
  rec["verdict"] = to_string(p.verdict);
  rec["why"] = why_of(p);
  return rec;
}

// The ratio's interval, at the level it was taken at.
Column level_interval_column() {
  Column c = interval_column("low", "high");
  c.header = fixed(100 * kSequentialLevel, 1) + "% interval";
  return c;
}

std::vector<Column> columns(const CheckRunReport& r, OutputFormat format) {
  const std::string unit = r.pairs.empty() ? "" : r.pairs.front().base->unit;
  const std::string per_s = unit.empty() ? "/s" : unit + "/s";
  return {{"config", "config", false, nullptr},
          {"base", "base " + per_s, true, nullptr},
          {"head", "head " + per_s, true, nullptr},
          ratio_column("ratio", "head/base"),
          level_interval_column(),
          verdict_column("verdict", format, "improvement", "regression"),
          {"why", "why", false, nullptr}};
}

std::string headline(const CheckRunReport& r) {
  std::string out =
      "check '" + r.sweep + "' (run " + std::to_string(r.run_id) + "): " + to_string(r.verdict);
  if (r.interrupted) out += " (interrupted)";
  return out;
}

std::string tolerances(const CheckRunReport& r) {
  return "tolerance " + fixed(100 * r.options.tolerance, 1) + "% throughput, " +
         fixed(100 * r.options.memory_tolerance, 1) + "% peak memory, " +
         fixed(100 * r.options.max_quality_loss, 1) + "% quality (guard " +
         to_string(r.options.quality_guard) + "); intervals at " +
         fixed(100 * kSequentialLevel, 1) + "%, a config's rounds stop once it is within ±" +
         fixed(100 * r.options.tolerance * kCheckPrecisionShare, 1) +
         "% or clearly apart from 1 - tolerance";
}

std::string text_view(const CheckRunReport& r, OutputFormat format) {
  std::vector<Json> records;
  for (const auto& p : r.pairs) records.push_back(pair_record(r, p));
  std::ostringstream out;
  const bool md = format == OutputFormat::md;
  out << (md ? "### gpusweep " : "") << headline(r) << "\n\n";
  out << (md ? "- " : "") << "base " << build_line(r.check.base) << "\n";
  out << (md ? "- " : "") << "head " << build_line(r.check.head) << "\n";
  out << (md ? "- " : "") << tolerances(r) << "\n";
  if (!r.stopped.empty()) out << (md ? "- " : "") << "rounds: " << r.stopped << "\n";
  out << "\n" << render(records, columns(r, format), format);
  if (!md) {
    out << "exit " << r.exit_code << ": " << to_string(r.verdict);
    if (r.verdict == CheckVerdict::inconclusive) {
      out << (!r.inconclusive_fails ? " (--inconclusive pass)"
              : r.round_cap         ? "; more rounds cannot be added: a larger --tolerance "
                                      "decides it (or --inconclusive pass)"
                                    : "; a bigger --budget-s (or --resume) or --tolerance decides "
                                      "it (or --inconclusive pass)");
    }
    out << "\n";
  } else {
    out << "\n<sub>`gpusweep compare --sweep " << r.sweep << " --db " << r.db_path
        << "` shows every config; exit " << r.exit_code << ".</sub>\n";
  }
  return out.str();
}

std::string json_view(const CheckRunReport& r) {
  Json j = Json::object();
  j["sweep"] = r.sweep;
  j["run"] = r.run_id;
  j["db"] = r.db_path;
  j["verdict"] = to_string(r.verdict);
  j["exit"] = r.exit_code;
  j["interrupted"] = r.interrupted;
  j["stopped"] = r.stopped;
  j["tolerance"] = r.options.tolerance;
  j["memory_tolerance"] = r.options.memory_tolerance;
  j["max_quality_loss"] = r.options.max_quality_loss;
  j["level"] = kSequentialLevel;
  j["quality_guard"] = to_string(r.options.quality_guard);
  j["judged_rounds"] = json_or_null(r.options.judged_rounds);
  j["base"] = r.check.base.to_json();
  j["head"] = r.check.head.to_json();
  j["configs"] = Json::array();
  for (const auto& p : r.pairs) {
    Json c = pair_record(r, p);
    c["settings"] = p.config;
    c["reason"] = p.reason;
    c["notes"] = p.notes;
    c["throughput_verdict"] = to_string(p.throughput);
    c["quality_loss"] = p.quality_loss;
    c["quality_verdict"] = p.quality ? Json(to_string(p.quality->verdict)) : Json();
    // A bound nothing could be learnt for is NaN: null in JSON.
    auto number = [](double v) { return std::isnan(v) ? Json() : Json(v); };
    c["quality_change"] = p.quality ? number(p.quality->change) : Json();
    c["quality_low"] = p.quality ? number(p.quality->low) : Json();
    c["quality_high"] = p.quality ? number(p.quality->high) : Json();
    c["head_failing"] = p.head_failing;
    c["precise"] = p.precise;
    c["apart"] = p.apart;
    c["memory_ratio"] = json_or_null(p.memory_ratio);
    c["memory_growth"] = p.memory_growth;
    c["base_trials"] = p.base->trials;
    c["head_trials"] = p.head->trials;
    c["base_config_index"] = p.base->config_index;
    c["head_config_index"] = p.head->config_index;
    c.erase("why");
    j["configs"].push_back(std::move(c));
  }
  return j.dump(2) + "\n";
}

// JUnit XML as CI systems read it: a test case a config, a regression a
// failure, an inconclusive config skipped (or a failure, when the check
// fails on inconclusive). html_escape's entities are XML's too.
std::string junit_view(const CheckRunReport& r) {
  int failures = 0, skipped = 0;
  for (const auto& p : r.pairs) {
    failures += p.verdict == CheckVerdict::regression ||
                (p.verdict == CheckVerdict::inconclusive && r.inconclusive_fails);
    skipped += p.verdict == CheckVerdict::inconclusive && !r.inconclusive_fails;
  }
  std::ostringstream out;
  const std::string suite = html_escape("gpusweep check " + r.sweep);
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"" << suite << "\" tests=\""
      << r.pairs.size() << "\" failures=\"" << failures << "\" skipped=\"" << skipped
      << "\">\n  <testsuite name=\"" << suite << "\" tests=\"" << r.pairs.size() << "\" failures=\""
      << failures << "\" skipped=\"" << skipped << "\">\n";
  for (const auto& p : r.pairs) {
    out << "    <testcase classname=\"gpusweep.check." << html_escape(r.sweep) << "\" name=\""
        << html_escape(label_of(r, p)) << "\">\n";
    const std::string message = html_escape(std::string(to_string(p.verdict)) + ": " + why_of(p));
    if (p.verdict == CheckVerdict::regression ||
        (p.verdict == CheckVerdict::inconclusive && r.inconclusive_fails)) {
      out << "      <failure message=\"" << message << "\" type=\"" << to_string(p.verdict)
          << "\"/>\n";
    } else if (p.verdict == CheckVerdict::inconclusive) {
      out << "      <skipped message=\"" << message << "\"/>\n";
    } else {
      out << "      <system-out>" << message << "</system-out>\n";
    }
    out << "    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
  return out.str();
}

int64_t rounds_of(const std::vector<StoredTrial>& trials) {
  int64_t rounds = 0;
  for (const auto& t : trials) rounds = std::max(rounds, t.row.plan.repeat + 1);
  return rounds;
}

// What the check's rounds came to, for the report's header: what stopped
// them while a config was open, the budget or the cap on rounds.
std::string stopped_text(const CheckRunReport& r, double budget_s, int64_t rounds) {
  std::string out = std::to_string(rounds) + (rounds == 1 ? " round" : " rounds");
  if (r.options.judged_rounds) {
    out += " (resumed after it finished at " + std::to_string(*r.options.judged_rounds) +
           ": later rounds decide a config only once it is precise or clearly apart)";
  }
  bool open = false;
  for (const auto& p : r.pairs) open = open || p.verdict == CheckVerdict::inconclusive;
  if (!open) return out + "; every config decided";
  if (r.round_cap) {
    return out + "; the most rounds a run adds (" + std::to_string(kMaxRounds) +
           ") ended before every config was decided";
  }
  return out + "; --budget-s " + fixed(budget_s, 0) + " s ended before every config was decided";
}

}  // namespace

CheckRunReport check_report(db::Store& store, const db::SweepRecord& run, const SweepSpec& spec,
                            const std::string& db_path, bool complete, bool inconclusive_fails) {
  const auto trials = stored_trials(store, run.id, db::TrialFields::brief);
  CheckRunReport r;
  r.sweep = spec.name;
  r.run_id = run.id;
  r.db_path = db_path;
  r.check = spec.check.value_or(CheckSpec{});
  for (const auto& k : varying_keys(spec)) {
    if (k != kBuildKey) r.keys.push_back(k);
  }
  r.options = check_options(r.check);
  r.configs = gather_configs(store, run.id, trials);
  r.pairs = check_pairs(r.configs, r.options);
  r.interrupted = !complete;
  r.verdict = overall(r.pairs);
  r.inconclusive_fails = inconclusive_fails;
  const int64_t rounds = rounds_of(trials);
  r.round_cap = rounds >= kMaxRounds;
  r.stopped = stopped_text(r, r.check.budget_s.value_or(0.0), rounds);
  r.exit_code = !complete                                                       ? kExitInterrupted
                : r.verdict == CheckVerdict::regression                         ? kExitFailed
                : r.verdict == CheckVerdict::inconclusive && inconclusive_fails ? kExitTrialsFailed
                                                                                : 0;
  return r;
}

std::string check_view(const CheckRunReport& r, CheckFormat format) {
  switch (format) {
    case CheckFormat::text:
      return text_view(r, OutputFormat::table);
    case CheckFormat::md:
      return text_view(r, OutputFormat::md);
    case CheckFormat::json:
      return json_view(r);
    case CheckFormat::junit:
      return junit_view(r);
  }
  return "";
}

CheckFormat format_for_file(const std::string& path, CheckFormat otherwise) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".md") return CheckFormat::md;
  if (ext == ".json") return CheckFormat::json;
  if (ext == ".xml") return CheckFormat::junit;
  if (ext == ".txt") return CheckFormat::text;
  return otherwise;
}

void write_check(const CheckRunReport& r, CheckFormat format, const std::vector<std::string>& files,
                 std::ostream& out) {
  out << "\n";
  for (const auto& file : files) {
    std::ofstream f(file, std::ios::binary);
    if (!(f << check_view(r, format_for_file(file, format))) || !f.flush()) {
      throw Error("--output " + file + ": cannot write the verdicts there");
    }
  }
  if (!files.empty() || format == CheckFormat::text) {
    out << check_view(r, CheckFormat::text);
  } else {
    std::cout << check_view(r, format) << std::flush;
  }
  if (r.interrupted) {
    out << "interrupted: finished trials are saved; continue with the same command and --resume\n";
  }
}

}  // namespace gpusweep::host
