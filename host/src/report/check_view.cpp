// check's views; see check_view.hpp.
#include "report/check_view.hpp"

#include "report/output.hpp"
#include "support/error.hpp"
#include "support/format.hpp"

#include <cmath>
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

std::string label_of(const CheckReport& r, const CheckPair& p) {
  const std::string l = config_label(p.config, r.keys);
  return l.empty() ? "the sweep's config" : l;
}

std::string build_line(const Json& build) {
  std::string out = build.value("label", "");
  out += (out.empty() ? "" : ": ") + build.value("path", std::string("?"));
  const std::string hash = build.value("hash", "");
  out += " (version " + build.value("version", std::string("?"));
  if (!hash.empty()) out += ", build " + hash.substr(0, 12);
  return out + ")";
}

Json pair_record(const CheckReport& r, const CheckPair& p) {
  Json rec = Json::object();
  rec["config"] = label_of(r, p);
  rec["base"] = json_or_null(config_throughput(*p.base));
  rec["head"] = json_or_null(config_throughput(*p.head));
  rec["ratio"] = p.ratio ? Json(p.ratio->ratio) : Json();
  rec["low"] = p.ratio ? Json(p.ratio->low) : Json();
  rec["high"] = p.ratio ? Json(p.ratio->high) : Json();
  rec["verdict"] = to_string(p.verdict);
  std::string why = p.reason;
  for (const auto& n : p.notes) why += "; " + n;
  rec["why"] = why;
  return rec;
}

// The ratio's interval, at the level it was taken at.
Column level_interval_column() {
  Column c = interval_column("low", "high");
  c.header = fixed(100 * kSequentialLevel, 1) + "% interval";
  return c;
}

std::vector<Column> columns(const CheckReport& r, OutputFormat format) {
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

std::string headline(const CheckReport& r) {
  std::string out = "check '" + r.sweep + "' (run " + std::to_string(r.run_id) + "): " +
                    to_string(r.verdict);
  if (r.interrupted) out += " (interrupted)";
  return out;
}

std::string tolerances(const CheckReport& r) {
  return "tolerance " + fixed(100 * r.options.tolerance, 1) + "% throughput, " +
         fixed(100 * r.options.memory_tolerance, 1) + "% peak memory, " +
         fixed(100 * r.options.max_quality_loss, 1) + "% quality; intervals at " +
         fixed(100 * kSequentialLevel, 1) + "% (rounds stop once decided)";
}

std::string text_view(const CheckReport& r, OutputFormat format) {
  std::vector<Json> records;
  for (const auto& p : r.pairs) records.push_back(pair_record(r, p));
  std::ostringstream out;
  const bool md = format == OutputFormat::md;
  out << (md ? "### gpusweep " : "") << headline(r) << "\n\n";
  out << (md ? "- " : "") << "base " << build_line(r.check.value("base", Json::object())) << "\n";
  out << (md ? "- " : "") << "head " << build_line(r.check.value("head", Json::object())) << "\n";
  out << (md ? "- " : "") << tolerances(r) << "\n";
  if (!r.stopped.empty()) out << (md ? "- " : "") << "rounds: " << r.stopped << "\n";
  out << "\n" << render(records, columns(r, format), format);
  if (!md) {
    out << "exit " << r.exit_code << ": " << to_string(r.verdict);
    if (r.verdict == CheckVerdict::inconclusive) {
      out << (!r.inconclusive_fails ? " (--inconclusive pass)"
                               : "; a bigger --budget-s or --tolerance decides it (or "
                                 "--inconclusive pass)");
    }
    out << "\n";
  } else {
    out << "\n<sub>`gpusweep compare --sweep " << r.sweep << " --db " << r.db_path
        << "` shows every config; exit " << r.exit_code << ".</sub>\n";
  }
  return out.str();
}

Json build_json(const Json& build) { return build.is_object() ? build : Json::object(); }

std::string json_view(const CheckReport& r) {
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
  j["base"] = build_json(r.check.value("base", Json::object()));
  j["head"] = build_json(r.check.value("head", Json::object()));
  j["configs"] = Json::array();
  for (const auto& p : r.pairs) {
    Json c = pair_record(r, p);
    c["settings"] = p.config;
    c["reason"] = p.reason;
    c["notes"] = p.notes;
    c["throughput_verdict"] = to_string(p.throughput);
    c["quality_loss"] = p.quality_loss;
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

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// JUnit XML as CI systems read it: a test case a config, a regression a
// failure, an inconclusive config skipped (or a failure, when the check
// fails on inconclusive).
std::string junit_view(const CheckReport& r) {
  int failures = 0, skipped = 0;
  for (const auto& p : r.pairs) {
    failures += p.verdict == CheckVerdict::regression ||
                (p.verdict == CheckVerdict::inconclusive && r.inconclusive_fails);
    skipped += p.verdict == CheckVerdict::inconclusive && !r.inconclusive_fails;
  }
  std::ostringstream out;
  const std::string suite = xml_escape("gpusweep check " + r.sweep);
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"" << suite
      << "\" tests=\"" << r.pairs.size() << "\" failures=\"" << failures << "\" skipped=\""
      << skipped << "\">\n  <testsuite name=\"" << suite << "\" tests=\"" << r.pairs.size()
      << "\" failures=\"" << failures << "\" skipped=\"" << skipped << "\">\n";
  for (const auto& p : r.pairs) {
    std::string why = p.reason;
    for (const auto& n : p.notes) why += "; " + n;
    out << "    <testcase classname=\"gpusweep.check." << xml_escape(r.sweep) << "\" name=\""
        << xml_escape(label_of(r, p)) << "\">\n";
    const std::string message = xml_escape(std::string(to_string(p.verdict)) + ": " + why);
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

}  // namespace

std::string check_view(const CheckReport& r, CheckFormat format) {
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

}  // namespace gpusweep::host
