// Where a trial is: the worker's phases, as its `phase` events announce them
// and its `result` names where it ended. The host's collector starts at
// `start` (nothing heard yet); a data-parallel trial's followers fail in
// `step` or `window`.
#pragma once

#include <optional>
#include <string_view>

namespace gpusweep::host {

enum class Phase { start, args, load, setup, warmup, measure, evaluate, stats, step, window };

inline constexpr Phase kPhases[] = {Phase::start,  Phase::args,    Phase::load,     Phase::setup,
                                    Phase::warmup, Phase::measure, Phase::evaluate, Phase::stats,
                                    Phase::step,   Phase::window};

// The phase's name on the wire and in messages ("measure").
constexpr const char* phase_name(Phase p) {
  switch (p) {
    case Phase::start:
      return "start";
    case Phase::args:
      return "args";
    case Phase::load:
      return "load";
    case Phase::setup:
      return "setup";
    case Phase::warmup:
      return "warmup";
    case Phase::measure:
      return "measure";
    case Phase::evaluate:
      return "evaluate";
    case Phase::stats:
      return "stats";
    case Phase::step:
      return "step";
    case Phase::window:
      return "window";
  }
  return "?";
}

// The phase a name reads as; nothing for a name that is none.
inline std::optional<Phase> phase_of(std::string_view name) {
  for (Phase p : kPhases) {
    if (name == phase_name(p)) return p;
  }
  return std::nullopt;
}

}  // namespace gpusweep::host
