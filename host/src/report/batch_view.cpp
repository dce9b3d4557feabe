// tune-batch's views; see batch_view.hpp.
#include "report/batch_view.hpp"

#include "report/output.hpp"
#include "support/format.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace gpusweep::host {

namespace {

std::string bar(double value, double max, size_t width) {
  const auto n =
      max > 0 ? static_cast<size_t>(std::lround(value / max * static_cast<double>(width))) : 0;
  return std::string(n, '#') + std::string(width - std::min(n, width), ' ');
}

}  // namespace

std::string probe_line(const BatchProbe& p) {
  std::ostringstream out;
  out << "  " << (p.verify ? "verify" : "probe ") << " batch " << p.batch << ": "
      << db::status_name(p.status);
  if (p.summary) {
    out << ", " << human_rate(p.summary->throughput_median, p.summary->unit);
    if (p.summary->peak_memory_bytes)
      out << ", peak " << human_bytes(*p.summary->peak_memory_bytes);
  } else if (!p.error.empty()) {
    out << " (" << truncate(p.error, 110) << ")";
  }
  return out.str();
}

std::string render_tune_batch(const BatchTuneResult& v, const SearchOptions& search,
                              const MeasureSpec& verify_measure) {
  const BatchCurve curve = throughput_curve(v.probes);
  std::ostringstream out;
  out << "\nthroughput curve (" << curve.unit << "/s, probes that fit; * = verified):\n";
  Table t({"batch", "throughput", "", "step time", "peak mem", "trial"});
  t.right_align(0);
  t.right_align(1);
  for (size_t i : curve.points) {
    const BatchProbe& p = v.probes[i];
    const auto& s = *p.summary;
    t.add_row({std::to_string(p.batch) + (p.verify ? "*" : ""), human_count(s.throughput_median),
               bar(s.throughput_median, curve.best_rate, 30), human_seconds(s.step_time_median_s),
               s.peak_memory_bytes ? human_bytes(*s.peak_memory_bytes) : "-",
               std::to_string(p.trial_id)});
  }
  for (const auto& p : v.probes) {
    if (p.status != db::TrialStatus::ok) {
      t.add_row({std::to_string(p.batch), db::status_name(p.status), truncate(p.error, 30), "", "",
                 std::to_string(p.trial_id)});
    }
  }
  out << t.render() << "\n";
  if (v.interrupted) {
    out << "interrupted: the probes so far are in the database\n";
    return out.str();
  }
  if (!v.largest_fit) {
    out << "no batch size fits: even --min " << search.min << " failed ("
        << (v.probes.empty() ? ""
                             : db::status_name(v.probes.front().status) + std::string(": ") +
                                   v.probes.front().error)
        << ")\n";
    return out.str();
  }
  out << "largest that fits: " << *v.largest_fit;
  if (v.first_failure) {
    out << " (first failure: " << *v.first_failure << ")";
  } else if (v.reached_max) {
    out << " (reached --max; larger sizes were not tried)";
  }
  out << "\n";
  const int64_t cap = size_with_margin(*v.largest_fit, search);
  if (v.recommended) {
    out << "recommended: " << *v.recommended << " = the fastest size that fits with the "
        << fixed(100 * search.margin, 1) << "% margin (at most " << cap
        << "; a larger one only within " << fixed(100 * kLargerWithin, 0)
        << "% of the fastest), re-verified with a full measurement (" << verify_measure.warmup_steps
        << " warmup steps, " << verify_measure.blocks << " " << verify_measure.block_text()
        << ")\n";
  } else {
    out << "recommended: none: no size at or below " << cap
        << " (the largest fit less the margin) verified ok; see the probes above\n";
  }
  if (curve.best_batch > 0) {
    out << "best throughput: batch " << curve.best_batch << " at "
        << human_rate(curve.best_rate, curve.unit);
    if (curve.saturation_batch) {
      out << " (batch " << *curve.saturation_batch << " already reaches 95% of it)";
    }
    out << "\n";
  }
  if (v.recommended) out << "use it with: --set batch_size=" << *v.recommended << "\n";
  return out.str();
}

nlohmann::json tune_batch_json(const BatchTuneResult& v, const SearchOptions& search) {
  const BatchCurve curve = throughput_curve(v.probes);
  nlohmann::json probes = nlohmann::json::array();
  for (const auto& p : v.probes) {
    nlohmann::json j = {{"batch_size", p.batch},
                        {"status", p.status},
                        {"verify", p.verify},
                        {"trial_id", p.trial_id}};
    if (!p.error.empty()) j["error"] = p.error;
    if (p.summary) {
      j["throughput"] = p.summary->throughput_median;
      j["unit"] = p.summary->unit;
      j["step_time_s"] = p.summary->step_time_median_s;
      j["peak_memory_bytes"] = json_or_null(p.summary->peak_memory_bytes);
    }
    probes.push_back(j);
  }
  return {{"probes", probes},
          {"largest_fit", json_or_null(v.largest_fit)},
          {"first_failure", json_or_null(v.first_failure)},
          {"reached_max", v.reached_max},
          {"margin", search.margin},
          {"recommended", json_or_null(v.recommended)},
          {"best_throughput_batch",
           curve.best_batch > 0 ? nlohmann::json(curve.best_batch) : nlohmann::json()},
          {"best_throughput",
           curve.best_batch > 0 ? nlohmann::json(curve.best_rate) : nlohmann::json()},
          {"unit", curve.unit},
          {"saturation_batch", json_or_null(curve.saturation_batch)},
          {"interrupted", v.interrupted}};
}

std::string tune_batch_header(const std::string& workload, const SearchOptions& search,
                              double max_memory_bytes, const std::string& sweep_name,
                              int64_t sweep_id, const std::string& db_path) {
  std::ostringstream out;
  out << "tune-batch " << workload << ": batch sizes doubling from " << search.min
      << (search.mode == SearchMode::binsearch ? ", then bisection" : "") << ", up to "
      << search.max.value_or(0)
      << (max_memory_bytes > 0 ? ", each probe capped at " + human_bytes(max_memory_bytes) : "")
      << "; probes are sweep '" << sweep_name << "' (run " << sweep_id << ") in " << db_path
      << "\n";
  return out.str();
}

namespace {

int64_t batch_of(const TargetRow& r) { return r.config->config.value("batch_size", int64_t{0}); }

nlohmann::json time_json(const TimeSummary& t) {
  nlohmann::json j{{"seeds", t.n}, {"reached", t.reached}};
  j["median_s"] = t.median ? nlohmann::json(*t.median) : nlohmann::json();
  j["median_lower_end_s"] =
      std::isfinite(t.median_low) ? nlohmann::json(t.median_low) : nlohmann::json();
  j["diverged"] = t.diverged;
  if (t.interval) {
    j["low_s"] = t.low;
    j["high_s"] = std::isfinite(t.high) ? nlohmann::json(t.high) : nlohmann::json();
  }
  return j;
}

std::string time_text(const TimeSummary& t) {
  if (t.n == 0) return "no trial finished (see the run's results)";
  if (!t.median) return median_text(t) + " (over half never reached it)";
  std::string s = median_text(t);
  if (t.interval) {
    s += " [" + human_seconds(t.low) + ", " +
         (std::isfinite(t.high) ? human_seconds(t.high) : std::string("inf")) + "]";
  }
  return s + ", " + std::to_string(t.reached) + "/" + std::to_string(t.n) + " seeds reached it";
}

const TargetRow* baseline_row(const std::vector<TargetRow>& rows) {
  for (const auto& r : rows) {
    if (r.baseline) return &r;
  }
  return nullptr;
}

}  // namespace

std::string render_batch_target(const std::vector<TargetRow>& rows, const std::string& sweep) {
  std::ostringstream out;
  const TargetRow* best = baseline_row(rows);
  const auto first = first_to_target(rows);
  out << "time to target (sweep '" << sweep << "'; `gpusweep compare --sweep " << sweep
      << " --target` shows every batch size):\n";
  if (best != nullptr) {
    out << "  most samples/s:       batch " << batch_of(*best) << ", " << time_text(best->times)
        << "\n";
  }
  if (!first) {
    out << "  first to the target:  none: every batch size's median is beyond its budget\n";
    return out.str();
  }
  const TargetRow& f = rows[*first];
  out << "  first to the target:  batch " << batch_of(f) << ", " << time_text(f.times) << "\n";
  if (best == nullptr || &f == best) {
    out << "  the batch with the most samples/s is also the first to the target\n";
    return out.str();
  }
  if (f.ratio) {
    out << "  batch " << batch_of(f) << " takes " << fixed(f.ratio->ratio, 3) << "x";
    if (f.ratio->interval) {
      out << " [" << fixed(f.ratio->low, 3) << ", "
          << (std::isfinite(f.ratio->high) ? fixed(f.ratio->high, 3) : std::string("inf")) << "]";
    }
    out << " batch " << batch_of(*best) << "'s time, paired by seed: " << f.verdict;
    if (f.inversion) out << "; INVERSION: fewer samples a second, sooner at the target";
    out << "\n";
  }
  return out.str();
}

nlohmann::json batch_target_json(const std::vector<TargetRow>& rows, const std::string& sweep) {
  nlohmann::json j{{"sweep", sweep}, {"batches", nlohmann::json::array()}};
  for (const auto& r : rows) {
    nlohmann::json b{{"batch_size", batch_of(r)},
                     {"most_samples_per_s", r.baseline},
                     {"time_to_target", time_json(r.times)}};
    if (r.ratio && !r.baseline) {
      b["time_ratio"] = {
          {"ratio", r.ratio->ratio},
          {"low", r.ratio->interval ? nlohmann::json(r.ratio->low) : nullptr},
          {"high", r.ratio->interval && std::isfinite(r.ratio->high) ? nlohmann::json(r.ratio->high)
                                                                     : nullptr},
          {"verdict", r.verdict},
          {"inversion", r.inversion}};
    }
    j["batches"].push_back(b);
  }
  const auto first = first_to_target(rows);
  j["first_to_target"] = first ? nlohmann::json(batch_of(rows[*first])) : nlohmann::json();
  const TargetRow* best = baseline_row(rows);
  j["most_samples_per_s"] = best != nullptr ? nlohmann::json(batch_of(*best)) : nlohmann::json();
  return j;
}

void report_batch_target(db::Store& store, const std::string& name, const Json& baseline, bool json,
                         nlohmann::json& out, std::ostream& text) {
  const auto sweep = store.latest_sweep(name);
  if (!sweep) return;
  CompareOptions opt;
  opt.baseline = baseline;
  // The rows point into configs: it must outlive them.
  const auto configs = gather_configs(store, sweep->id);
  const auto rows = compare_targets(compare_configs(configs, opt), opt);
  if (json) {
    out["time_to_target"] = batch_target_json(rows, name);
    out["time_to_target"]["selection_data"] = true;
  } else {
    text << "\n" << render_batch_target(rows, name);
    // The first was picked on the same seeds that then compare it with the
    // baseline: among equally fast sizes, the pick is called faster in 3-5%
    // of sweeps, so the ratio is labelled for what it is.
    text << "  (selection data: the first was picked among the sizes on these seeds; "
            "confirm it on fresh ones, with `gpusweep run` and other seeds)\n";
  }
}

}  // namespace gpusweep::host
