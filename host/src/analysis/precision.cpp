// Rounds until precise; see precision.hpp.
#include "analysis/precision.hpp"

#include "analysis/significance.hpp"
#include "support/format.hpp"

#include <algorithm>
#include <cmath>

namespace gpusweep::host {

double separation_level(int look) {
  const double k = std::max(1, look);
  return 1 - kSeparationAlpha * 6 / (M_PI * M_PI * k * k);
}

PrecisionStatus precision_status(const std::vector<ConfigSamples>& configs, const Json& baseline,
                                 double target, int look, const std::set<int64_t>& done_before) {
  PrecisionStatus s;
  const ConfigSamples* base = nullptr;
  for (const auto& c : configs) {
    if (is_baseline(baseline, c.config_index, c.config)) base = &c;
  }
  std::vector<double> widths;
  s.done = true;
  for (const auto& c : configs) {
    ConfigPrecision p;
    p.config_index = c.config_index;
    p.baseline = &c == base;
    p.earlier = done_before.count(c.config_index) != 0;
    if (!p.baseline && base != nullptr) {
      const auto e = estimate_ratio(base->runs, c.runs, kSequentialLevel);
      if (e && e->ratio > 0) {
        p.half_width = e->relative_half_width();
        p.precise = *p.half_width <= target;
        const RatioEstimate strict = with_level(*e, separation_level(look));
        p.separated = strict.low > 1 + target || strict.high < 1 - target;
        widths.push_back(*p.half_width);
        if (!p.done() && !(s.widest_half_width >= *p.half_width)) {
          s.widest_half_width = *p.half_width;
          s.widest_config = c.config_index;
        }
      } else {
        // Nothing to pair with: no ok trial on either side, so more rounds
        // of the same would not help.
        p.no_data = c.ok == 0 || base->ok == 0;
      }
    }
    s.done = s.done && p.done();
    s.configs.push_back(p);
  }
  if (!widths.empty()) {
    std::sort(widths.begin(), widths.end());
    const size_t n = widths.size();
    s.median_half_width = n % 2 ? widths[n / 2] : (widths[n / 2 - 1] + widths[n / 2]) / 2;
  }
  return s;
}

std::optional<int64_t> rounds_needed(double half_width, int64_t rounds, double target,
                                     int64_t max_rounds) {
  if (!(half_width > 0) || !(target > 0) || rounds < 2) return std::nullopt;
  if (half_width <= target) return rounds;
  const double q = 0.5 + kSequentialLevel / 2;
  const double spread = half_width * std::sqrt(static_cast<double>(rounds)) /
                        t_quantile(q, static_cast<double>(rounds - 1));
  for (int64_t n = rounds + 1; n <= max_rounds; ++n) {
    const double dn = static_cast<double>(n);
    if (t_quantile(q, dn - 1) * spread / std::sqrt(dn) <= target) return n;
  }
  return std::nullopt;
}

std::string precision_summary(const PrecisionStatus& s, double target) {
  size_t compared = 0, done = 0;
  for (const auto& c : s.configs) {
    if (c.baseline) continue;
    ++compared;
    done += c.done();
  }
  std::string out = std::to_string(done) + " of " + std::to_string(compared) + " configs within ±" +
                    fixed(100 * target, 1) + "% or clearly apart";
  if (!std::isnan(s.median_half_width))
    out += "; median ±" + fixed(100 * s.median_half_width, 1) + "%";
  if (!std::isnan(s.widest_half_width)) {
    out += ", widest open ±" + fixed(100 * s.widest_half_width, 1) + "% (#" +
           std::to_string(s.widest_config + 1) + ")";
  }
  return out;
}

}  // namespace gpusweep::host
