// tune's output; see tune_view.hpp.
#include "report/tune_view.hpp"

#include "report/output.hpp"
#include "support/format.hpp"

#include <cmath>
#include <optional>
#include <sstream>

namespace gpusweep::host {

namespace {

std::string interval(const RatioEstimate& e) {
  return fixed(e.ratio, 3) + "x " + interval_text(e.low, e.high);
}

// The config's level over the baseline's, from the race's fit (no interval:
// the confirmation gives that).
std::optional<double> level_ratio(const RaceStatus& s, uint64_t c, uint64_t baseline) {
  std::optional<double> a, b;
  for (const auto& [config, y] : s.levels) {
    if (config == c) a = y;
    if (config == baseline) b = y;
  }
  if (!a || !b) return std::nullopt;
  return std::exp(*a - *b);
}

std::string phase_name(RacePhase p) {
  switch (p) {
    case RacePhase::racing:
      return "racing";
    case RacePhase::confirming:
      return "confirming";
    case RacePhase::done:
      return "done";
  }
  return "?";
}

// The sweep's base with the winner's values: a snippet to reuse.
Json snippet(const TuneSpace& space, uint64_t winner, const SweepSpec& spec) {
  Json base = spec.base;
  const auto d = space.digits(winner);
  for (size_t k = 0; k < space.knobs(); ++k) base[space.name(k)] = space.levels(k)[d[k]];
  return {{"base", base}};
}

// Config c as compare, results and the report's charts number it (from 1).
std::string number(uint64_t c) { return "config " + std::to_string(c + 1); }

Json estimate_json(const std::optional<RatioEstimate>& e) {
  if (!e) return nullptr;
  return {{"ratio", e->ratio}, {"low", e->low}, {"high", e->high}, {"repeats", e->repeats}};
}

}  // namespace

std::string race_progress(const TuneSpace& space, const RaceStatus& status, uint64_t baseline,
                          size_t from, double spent_s, double budget_s, bool to_target) {
  std::ostringstream out;
  out << "after round " << status.rounds;
  if (status.confirm_rounds > 0) out << " (+" << status.confirm_rounds << " confirming)";
  out << ", " << fixed(spent_s / 60, 1) << " of " << fixed(budget_s / 60, 1) << " min: ";
  if (status.leader) {
    out << "leader " << number(*status.leader) << " (" << space.label(*status.leader) << ")";
    if (auto r = level_ratio(status, *status.leader, baseline)) {
      out << (to_target ? " at least ~" : " ~") << fixed(*r, 2) << "x the baseline"
          << (to_target ? "'s speed to the target (capped trials count at their caps)" : "");
    }
  } else {
    out << "no leader yet (each candidate needs two rounds)";
  }
  out << "; " << status.live.size() << " racing, " << status.tried.size() << " of " << space.size()
      << " configs tried; " << phase_name(status.phase);
  if (!status.next.empty()) out << ", next: " << status.next.size() << " trials";
  for (size_t i = from; i < status.events.size(); ++i) {
    const RaceEvent& e = status.events[i];
    if (e.kind == RaceEventKind::joined && e.round == 0) continue;  // the first round, said before
    out << "\n  " << event_name(e.kind) << " " << number(e.config) << " (" << space.label(e.config)
        << "): " << e.reason;
  }
  return out.str();
}

std::string render_tune(const TuneSpace& space, const RaceStatus& status, uint64_t baseline,
                        const SweepSpec& spec, const TuneSpec& tune) {
  std::ostringstream out;
  if (!status.winner) {
    out << "no winner: " << status.stop << "\n";
    return out.str();
  }
  const uint64_t w = *status.winner;
  const bool to_target = tune.to_target();
  out << "best " << objective_name(tune.objective) << ": " << number(w) << " (" << space.label(w)
      << ")\n";
  out << "  the race: " << status.stop << ", after " << status.rounds << " rounds; "
      << status.tried.size() << " of " << space.size() << " configs tried\n";
  if (w == baseline) {
    out << "  the baseline itself: no change beat it\n";
  } else if (status.vs_baseline) {
    out << "  vs the baseline (" << space.label(baseline) << "): " << interval(*status.vs_baseline)
        << (to_target ? " as fast to the target" : "") << ", from " << status.vs_baseline->repeats
        << " fresh paired rounds"
        << (to_target ? " (the sign test's 95% interval of the paired time ratios)" : "") << "\n";
  } else if (to_target) {
    out << "  vs the baseline (" << space.label(baseline)
        << "): no interval (the confirmation's seeds were too few, or censored on both sides)\n";
  }
  if (status.runner_up) {
    out << "  vs the runner-up " << number(*status.runner_up) << " ("
        << space.label(*status.runner_up) << "): "
        << (status.vs_runner_up ? interval(*status.vs_runner_up) : std::string("no interval"))
        << "\n";
    if (status.vs_runner_up && status.vs_runner_up->low <= 1) {
      out << "  (the confirmation does not separate it from the runner-up: either is as good, "
             "within the interval)\n";
    }
  }
  out << "\nsweep-file snippet:\n" << snippet(space, w, spec).dump(2) << "\n";
  return out.str();
}

nlohmann::json tune_json(const TuneSpace& space, const RaceStatus& status, uint64_t baseline,
                         const SweepSpec& spec, const TuneSpec& tune) {
  Json events = Json::array();
  for (const RaceEvent& e : status.events) {
    Json j = {{"round", e.round},
              {"event", event_name(e.kind)},
              {"config", e.config + 1},
              {"settings", space.label(e.config)},
              {"reason", e.reason}};
    if (e.evidence) j["evidence"] = estimate_json(e.evidence);
    events.push_back(j);
  }
  Json j = {{"objective", objective_name(tune.objective)},
            {"phase", phase_name(status.phase)},
            {"stop", status.stop},
            {"rounds", status.rounds},
            {"confirm_rounds", status.confirm_rounds},
            {"space_size", space.size()},
            {"tried", status.tried.size()},
            {"baseline", {{"config", baseline + 1}, {"settings", space.label(baseline)}}},
            {"events", events},
            {"winner", nullptr}};
  if (status.winner) {
    j["winner"] = {{"config", *status.winner + 1},
                   {"settings", space.label(*status.winner)},
                   {"vs_baseline", estimate_json(status.vs_baseline)},
                   {"snippet", snippet(space, *status.winner, spec)}};
  }
  if (status.runner_up) {
    j["runner_up"] = {{"config", *status.runner_up + 1},
                      {"settings", space.label(*status.runner_up)},
                      {"winner_vs_runner_up", estimate_json(status.vs_runner_up)}};
  }
  return j;
}

}  // namespace gpusweep::host
