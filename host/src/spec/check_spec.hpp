// A check's record as its run stores it (the spec's "check"): the two builds,
// the tolerances `check` or `history --confirm` was given, the budget. Its
// keys are spelt here and in check_spec.cpp only; every reader takes these
// fields (analysis/check.hpp's check_options fills the defaults).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace gpusweep::host {

using Json = nlohmann::json;

// The host's grid key that names a check's build (`gpusweep check`), and
// its two values.
inline constexpr char kBuildKey[] = "build";
inline constexpr char kBaseBuild[] = "base";
inline constexpr char kHeadBuild[] = "head";

// One build of a check as its record holds it.
struct CheckBuild {
  std::string label;    // a commit (git_label), the given --base-label, or a hash prefix
  std::string path;     // the file given (a Python module, for a build a bridge runs)
  std::string hash;     // the build's digest: what --resume must find again
  std::string version;  // its manifest's
  std::string abi;
  std::string plugin;  // the bridge plugin that runs path; empty for a plugin build

  Json to_json() const;
};

struct CheckSpec {
  CheckBuild base;
  CheckBuild head;
  // Left out of the record where the command gives none (history --confirm
  // gives only the tolerance): check_options' defaults then apply.
  std::optional<double> tolerance;
  std::optional<double> memory_tolerance;
  std::optional<double> max_quality_loss;
  std::optional<std::string> quality_guard;  // as --quality-guard spells it
  // Written by history --confirm: the run confirms a change point and is
  // not itself a point of history.
  bool confirm = false;
  std::optional<double> budget_s;  // make_check's: the seconds of measuring
  // Set once a finished check is resumed: the rounds it had run when it
  // first finished (analysis/check.hpp's CheckOptions).
  std::optional<int64_t> judged_rounds;

  // The build of a role (kBaseBuild or kHeadBuild); UsageError for another.
  const CheckBuild& build(const std::string& role) const;
  CheckBuild& build(const std::string& role);

  // The record as stored, the keys given only.
  Json to_json() const;
  // What makes a check the same run on --resume: its tolerances and its
  // builds' hashes; a new label (a commit since), path, budget or first
  // judgement continues it.
  Json identity() const;
};

// A stored spec's "check" object, checked: UsageError naming source and
// check.KEY for an unknown key or a value of the wrong type.
CheckSpec parse_check(const std::string& source, const Json& check);

}  // namespace gpusweep::host
