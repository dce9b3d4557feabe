// `gpusweep compare`: configs against the baseline, with statistics.
#include "analysis/claims.hpp"
#include "cli/cli.hpp"
#include "analysis/compare.hpp"
#include "support/error.hpp"
#include "report/output.hpp"
#include "report/results.hpp"
#include "support/stats.hpp"

#include <filesystem>
#include <iostream>

namespace gpusweep::host {

namespace {

Json parse_partial(const std::vector<std::string>& sets) {
  Json j = Json::object();
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError("--baseline " + s + ": expected key=value (for example replay_on_device=false)");
    }
    j[s.substr(0, eq)] = parse_cli_value(s.substr(eq + 1));
  }
  return j;
}

std::string percent(double v) { return (v >= 0 ? "+" : "") + fixed(100 * v, 1) + "%"; }

std::string settings_text(const Json& change) {
  std::string out;
  for (const auto& [k, v] : change.items()) {
    out += (out.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

// The claims table: each claim, what was measured, and the verdict.
std::string render_claims(const std::vector<ClaimResult>& results, OutputFormat format) {
  std::vector<Json> records;
  for (const auto& r : results) {
    const Claim& c = *r.claim;
    Json rec;
    rec["claim"] = c.text;
    rec["change"] = settings_text(c.change);
    rec["metric"] = c.metric;
    rec["expected"] = expected_text(c);
    rec["expected_low"] = c.low;
    rec["expected_high"] = c.high;
    rec["ratio"] = r.ratio ? Json(*r.ratio) : Json();
    rec["ci_low"] = std::isnan(r.low) ? Json() : Json(r.low);
    rec["ci_high"] = std::isnan(r.high) ? Json() : Json(r.high);
    rec["verdict"] = r.verdict;
    rec["reason"] = r.reason;
    rec["source"] = c.source;
    records.push_back(rec);
  }
  const bool machine = format == OutputFormat::csv || format == OutputFormat::json;
  std::vector<Column> cols = {{"claim", "claim", false, {}},
                              {"change", "change", false, {}},
                              {"metric", "metric", false, {}},
                              {"expected", "expected", true, {}}};
  if (machine) {
    cols.push_back({"expected_low", "expected_low", true, {}});
    cols.push_back({"expected_high", "expected_high", true, {}});
  }
  cols.push_back({"ratio", "measured", true, [](const Json& r) {
                    return r["ratio"].is_null() ? std::string("-")
                                                : fixed(r["ratio"].get<double>(), 3) + "x";
                  }});
  cols.push_back({"ci_low", "95% CI", true, [](const Json& r) {
                    return r["ci_low"].is_null() ? std::string("-")
                                                 : "[" + fixed(r["ci_low"].get<double>(), 3) + ", " +
                                                       fixed(r["ci_high"].get<double>(), 3) + "]";
                  }});
  if (machine) cols.push_back({"ci_high", "ci_high", true, {}});
  cols.push_back({"verdict", "verdict", false, [format](const Json& r) {
                    const std::string v = r["verdict"].get<std::string>();
                    if (format != OutputFormat::table) return v;
                    if (v == "confirmed") return colour(v, "32");
                    if (v == "refuted") return colour(v, "31");
                    return v;
                  }});
  cols.push_back({"reason", "why", false, {}});
  cols.push_back({"source", "source", false, {}});
  return render(records, cols, format);
}

}  // namespace

int cmd_compare(const Args& args) {
  po::options_description o;
  o.add_options()("sweep", po::value<std::string>(), "sweep name (default: the latest run)");
  add_db_option(o);
  o.add_options()("baseline", po::value<std::vector<std::string>>()->composing(),
                  "key=value settings of the baseline config (default: the sweep's baseline)")(
      "max-quality-loss", po::value<double>()->default_value(0.01, "0.01"),
      "largest relative quality loss still called non-inferior")(
      "alpha", po::value<double>()->default_value(0.05, "0.05"), "significance level of the U test")(
      "format", po::value<std::string>()->default_value("table"), "table, csv, json or md")(
      "claims", "only the sweep's claims: each against its measured ratio, with a verdict");
  po::positional_options_description pos;
  pos.add("sweep", 1);
  auto p = parse_command(
      "compare",
      "[--sweep NAME] [--baseline key=value ...] [--max-quality-loss 0.01] [--claims] [--format F]",
      "Compares every config of a sweep with its baseline: the throughput ratio (geometric\n"
      "means of the block samples, repeats pooled) with a 95% confidence interval, a\n"
      "two-sided Mann-Whitney U test, and a verdict (faster, slower, or no significant\n"
      "difference: both the test and the interval must agree). Quality change is shown\n"
      "next to speed, with a non-inferiority check. A sweep file's claims (a guide's\n"
      "promised ratio for a change) are shown against the measured ratio and its\n"
      "interval: confirmed, refuted, inconclusive, or not measurable here (and why).",
      o, pos, args);
  if (p.help) return 0;
  const auto& vm = p.vm;
  const OutputFormat format = parse_output_format(vm["format"].as<std::string>());
  const OpenedSweep run = open_sweep(vm);
  db::Store& store = *run.store;
  const db::SweepRecord* sweep = &run.sweep;
  const SweepSpec spec = stored_spec(*sweep);
  CompareOptions opt;
  opt.baseline = vm.count("baseline") != 0U
                     ? parse_partial(vm["baseline"].as<std::vector<std::string>>())
                     : spec.baseline;
  opt.alpha = vm["alpha"].as<double>();
  opt.max_quality_loss = vm["max-quality-loss"].as<double>();
  if (vm.count("claims") != 0U) {
    if (spec.claims.empty()) {
      throw UsageError("sweep '" + sweep->name + "' carries no claims (add \"claims\" to its sweep "
                       "file; see README.md)");
    }
    std::cout << render_claims(evaluate_claims(store, *sweep, spec), format);
    return 0;
  }
  const auto configs = gather_configs(store, sweep->id);
  const auto rows = compare_configs(configs, opt);
  std::vector<std::string> keys = varying_keys(spec);

  std::vector<Json> records;
  for (const auto& r : rows) {
    const auto& c = *r.config;
    Json rec;
    rec["config"] = c.config_index + 1;
    for (const auto& k : keys) rec[k] = c.config.contains(k) ? c.config.at(k) : Json();
    rec["baseline"] = r.baseline;
    rec["trials_ok"] = c.ok;
    rec["blocks"] = c.throughput.size();
    rec["unit"] = c.unit;
    rec["throughput_median"] = c.throughput.empty() ? Json() : Json(quantile(c.throughput, 0.5));
    rec["ratio"] = r.ratio ? Json(r.ratio->ratio) : Json();
    rec["ci_low"] = r.ratio ? Json(r.ratio->low) : Json();
    rec["ci_high"] = r.ratio ? Json(r.ratio->high) : Json();
    rec["p_value"] = r.test ? Json(r.test->p) : Json();
    rec["verdict"] = r.baseline ? "baseline"
                     : r.verdict ? to_string(*r.verdict)
                     : c.ok == 0 ? c.problem
                                 : "too few samples";
    rec["quality_change"] = r.quality_change ? Json(*r.quality_change) : Json();
    rec["non_inferior"] = r.non_inferior ? Json(*r.non_inferior) : Json();
    rec["peak_memory_bytes"] = c.peak_memory_bytes ? Json(*c.peak_memory_bytes) : Json();
    // Noise is reported, not hidden: a config whose blocks vary by more than 10%.
    double cv = 0;
    if (c.throughput.size() >= 2) cv = describe(c.throughput).cv;
    rec["cv"] = cv;
    rec["noisy"] = cv > 0.10;
    records.push_back(rec);
  }
  std::vector<Column> cols = {{"config", "#", true, {}}};
  for (const auto& k : keys) cols.push_back({k, k, false, {}});
  cols.push_back({"throughput_median", "throughput", true, [](const Json& r) {
                    return r["throughput_median"].is_null()
                               ? std::string("-")
                               : human_rate(r["throughput_median"].get<double>(),
                                            r["unit"].get<std::string>());
                  }});
  cols.push_back({"ratio", "ratio", true, [](const Json& r) {
                    return r["ratio"].is_null() ? std::string(r["baseline"].get<bool>() ? "1.00x" : "-")
                                                : fixed(r["ratio"].get<double>(), 3) + "x";
                  }});
  cols.push_back({"ci_low", "95% CI", true, [](const Json& r) {
                    return r["ci_low"].is_null() ? std::string("-")
                                                 : "[" + fixed(r["ci_low"].get<double>(), 3) + ", " +
                                                       fixed(r["ci_high"].get<double>(), 3) + "]";
                  }});
  const bool machine = format == OutputFormat::csv || format == OutputFormat::json;
  if (machine) cols.push_back({"ci_high", "ci_high", true, {}});
  cols.push_back({"p_value", "p", true, [](const Json& r) {
                    if (r["p_value"].is_null()) return std::string("-");
                    const double pv = r["p_value"].get<double>();
                    return pv < 0.001 ? std::string("<0.001") : fixed(pv, 3);
                  }});
  cols.push_back({"verdict", "verdict", false, [format](const Json& r) {
                    const std::string v = r["verdict"].get<std::string>();
                    if (format != OutputFormat::table) return v;
                    if (v == "faster") return colour(v, "32");
                    if (v == "slower") return colour(v, "31");
                    return v;
                  }});
  cols.push_back({"quality_change", "quality", true, [](const Json& r) {
                    if (r["quality_change"].is_null()) return std::string("-");
                    return percent(r["quality_change"].get<double>()) +
                           (r["non_inferior"].get<bool>() ? "" : " (worse)");
                  }});
  cols.push_back({"peak_memory_bytes", "peak mem", true, [](const Json& r) {
                    return r["peak_memory_bytes"].is_null()
                               ? std::string("-")
                               : human_bytes(r["peak_memory_bytes"].get<double>());
                  }});
  cols.push_back({"noisy", "note", false, [](const Json& r) {
                    return r["noisy"].get<bool>() ? colour("noisy: cv > 10%", "33") : std::string();
                  }});
  if (machine) {
    cols.push_back({"blocks", "blocks", true, {}});
    cols.push_back({"trials_ok", "trials ok", true, {}});
    cols.push_back({"baseline", "baseline", false, {}});
    cols.push_back({"non_inferior", "non-inferior", false, {}});
    cols.push_back({"unit", "unit", false, {}});
    cols.push_back({"cv", "cv", true, {}});
  }
  if (format == OutputFormat::table) {
    std::cout << "sweep '" << sweep->name << "' (run " << sweep->id << "), baseline "
              << (opt.baseline.empty() ? std::string("config #1") : config_label(opt.baseline, [&] {
                    std::vector<std::string> k;
                    for (const auto& [key, v] : opt.baseline.items()) k.push_back(key);
                    return k;
                  }()))
              << "\n";
  }
  std::cout << render(records, cols, format);
  const auto knobs = ablation(configs, spec.grid);
  if (format == OutputFormat::table && !knobs.empty()) {
    std::cout << "\nwhich knob matters (each value against the knob's first, the other knobs held "
                 "at each of their values):\n";
    Table t({"knob", "from", "to", "pairs", "ratio", "95% CI"});
    t.right_align(3);
    t.right_align(4);
    t.right_align(5);
    auto text = [](const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
    for (const auto& k : knobs) {
      t.add_row({k.knob, text(k.from), text(k.to), std::to_string(k.pairs),
                 k.pairs > 0 ? fixed(k.ratio, 3) + "x" : "-",
                 std::isnan(k.low) ? "-" : "[" + fixed(k.low, 3) + ", " + fixed(k.high, 3) + "]"});
    }
    std::cout << t.render();
  }
  if (format == OutputFormat::table && !spec.claims.empty()) {
    std::cout << "\nclaims (the ratio each promises for its change, against the measured one):\n"
              << render_claims(evaluate_claims(store, *sweep, spec), format);
  }
  if (format == OutputFormat::table) {
    std::cout << "ratio: geometric mean throughput vs the baseline's over all blocks; quality: "
                 "relative change (+ is better), (worse) beyond --max-quality-loss "
              << fixed(100 * opt.max_quality_loss, 1) << "%\n";
  }
  return 0;
}

}  // namespace gpusweep::host
