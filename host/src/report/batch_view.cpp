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
  if (v.recommended) {
    out << "recommended: " << *v.recommended << " = largest fit less the "
        << fixed(100 * search.margin, 1) << "% margin, re-verified with a full measurement ("
        << verify_measure.warmup_steps << " warmup steps, " << verify_measure.blocks
        << " blocks of " << verify_measure.steps_per_block << " steps)\n";
  } else {
    out << "recommended: none: the re-verification of the largest fit less the margin "
           "failed; see the probes above\n";
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

}  // namespace gpusweep::host
