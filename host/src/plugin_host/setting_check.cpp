// plugins --check's declared settings that must act; see check_internal.hpp.
#include "plugin_host/check_internal.hpp"

#include "protocol/event_payloads.hpp"
#include "protocol/events.hpp"
#include "support/format.hpp"

#include <gpusweep/plugin.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace gpusweep::host::detail {

using Json = nlohmann::json;

namespace {

// What one run with settings tried showed: the first call that did not
// return OK (none when every call did), and the stats.
struct SettingRun {
  std::optional<event::End> failed;
  Json stats;
};

SettingRun run_with(const WorkerArgs& base, const Json& config, const std::vector<SettingTry>& set,
                    double timeout_s) {
  WorkerArgs args = base;
  Json c = config;
  for (const auto& t : set) c[t.name] = t.value;
  args.config_json = c.dump();
  // The SDK judges its settings after a trial's second step.
  args.check_steps = 3;
  const Captured run = run_worker_captured(args, timeout_s);
  SettingRun out;
  std::optional<event::Begin> open;
  for (const auto& e : event::parse(run.proto)) {
    if (const auto* b = std::get_if<event::Begin>(&e)) open = *b;
    const auto* ended = std::get_if<event::End>(&e);
    if (ended == nullptr) continue;
    open.reset();
    const event::End& end = *ended;
    if (end.status != GPUSWEEP_STATUS_OK && !out.failed) out.failed = end;
    if (end.fn == "stats") out.stats = end.stats.value_or(Json());
  }
  // The call that never returned, as one that failed saying how the worker ended.
  if (open && !out.failed) {
    event::End never;
    never.fn = open->fn;
    never.idx = open->idx;
    never.message = how_it_ended(run, timeout_s) + stderr_tail(run);
    out.failed = never;
  }
  return out;
}

// The part of the SDK's message about one setting ("grad_accum=2 did
// nothing: ...; fix: ..."; several are joined by "; also "), split into
// what was seen and the fix; the whole message where it has no such part.
std::pair<std::string, std::string> message_about(const std::string& message,
                                                  const std::string& name) {
  std::string part = message;
  size_t from = 0;
  while (from <= message.size()) {
    const size_t to = std::min(message.find("; also ", from), message.size());
    const std::string piece = message.substr(from, to - from);
    if (piece.find(name + "=") != std::string::npos) {
      part = piece;
      break;
    }
    from = to + 7;
  }
  if (const size_t at = part.find(name + "="); at != std::string::npos) part = part.substr(at);
  const size_t fix = part.find("; fix: ");
  if (fix == std::string::npos) {
    return {part, "see docs/writing-plugins.md, \"Settings that must act\""};
  }
  return {part.substr(0, fix), part.substr(fix + 7)};
}

std::string stat_text(const Json& stats, const char* key) {
  return number_text(stats[key].get<double>());
}

// The settings a script workload's watch observes in code gpusweep did not
// write (its stats name what it saw); false when the stats say nothing of t.
bool judge_seen(const SettingTry& t, const Json& stats, CheckItems& out) {
  const auto seen = [&](const char* k) -> std::optional<double> {
    if (!stats.is_object() || !stats.contains(k) || !stats[k].is_number()) return std::nullopt;
    return stats[k].get<double>();
  };
  const std::string label = t.label();
  const std::string fix =
      "map it to the flag the script's parser reads, and check that the "
      "script uses it";
  if (t.name == "precision") {
    const auto low = seen("forwards_low_precision");
    const auto all = seen("forwards_seen");
    if (!low) return false;
    if (*low > 0) {
      out.ok(label + " acts: " + number_text(*low) + " of " + number_text(all.value_or(*low)) +
             " module forward passes of the watched steps ran in " + t.value.get<std::string>() +
             " (autocast or weights)");
    } else {
      out.problem(label + " did nothing: no forward pass ran in " + t.value.get<std::string>(),
                  fix);
    }
  } else if (t.name == "compile") {
    const auto frames = seen("compiled_frames");
    if (!frames) return false;
    if (*frames > 0) {
      out.ok(label + " acts: torch.compile compiled " + number_text(*frames) + " frame(s)");
    } else {
      out.problem(label + " did nothing: torch.compile compiled no frame", fix);
    }
  } else if (t.name == "batch_size") {
    const auto samples = seen("samples_per_step");
    if (!samples) return false;
    const auto accum = seen("backward_passes_per_step").value_or(1);
    out.ok(label + " acts: each step took " + number_text(*samples) + " samples" +
           (accum > 1 ? " (" + number_text(accum) + " micro-batches)" : ""));
  } else if (t.name == "loader_workers") {
    const auto workers = seen("loader_num_workers");
    if (!workers) return false;
    if (*workers == t.value.get<double>()) {
      out.ok(label + " acts: the script's DataLoader ran " + number_text(*workers) +
             " worker process(es)");
    } else {
      out.problem(
          label + " did nothing: the script's DataLoader has num_workers=" + number_text(*workers),
          fix);
    }
  } else {
    return false;
  }
  return true;
}

// The stat by which the SDKs show that a setting the host tries acted, or
// nullptr for a setting the host does not try of its own accord.
const char* host_stat_of(const std::string& name) {
  if (name == "grad_accum") return "backward_passes_per_step";
  if (name == "channels_last") return "channels_last_weights";
  if (name == "zero_grad_to_none") return "zero_grad_calls_per_step";
  if (name == "loader_workers") return "input_batches";
  return nullptr;
}

// Judges one setting by what the run's stats observed.
void judge_setting(const SettingTry& t, const Json& stats, CheckItems& out) {
  const auto has = [&](const char* k) {
    return stats.is_object() && stats.contains(k) && stats[k].is_number();
  };
  const std::string label = t.label();
  if (t.name == "grad_accum" && has("backward_passes_per_step")) {
    const double passes = stats["backward_passes_per_step"].get<double>();
    const double g = t.value.get<double>();
    if (passes >= g && std::fmod(passes, g) == 0) {
      out.ok(label + " acts: " + stat_text(stats, "backward_passes_per_step") +
             " backward passes a step");
    } else {
      out.problem(label + " did nothing: " + stat_text(stats, "backward_passes_per_step") +
                      " backward pass(es) a step",
                  "run grad_accum micro-batches a step, each through GradStep's backward()");
    }
  } else if (t.name == "channels_last" && t.value == Json(false) && has("channels_last_weights")) {
    // A workload whose default is channels-last, tried without it.
    if (stats["channels_last_weights"].get<double>() == 0) {
      out.ok(label + " acts: none of the model's 4-D weights is channels-last");
    } else {
      out.problem(label + " did nothing: " + stat_text(stats, "channels_last_weights") +
                      " 4-D weights still channels-last",
                  "lay the model out with the settings' prepare(model)");
    }
  } else if (t.name == "channels_last" && has("channels_last_weights")) {
    // weights_4d, where reported (the Python SDK), says whether all are.
    const double last = stats["channels_last_weights"].get<double>();
    const double four = has("weights_4d") ? stats["weights_4d"].get<double>() : last;
    if (last > 0 && last == four) {
      out.ok(label + " acts: the model's " + stat_text(stats, "channels_last_weights") +
             " 4-D weights are channels-last");
    } else {
      out.problem(label + " did nothing: " + stat_text(stats, "channels_last_weights") +
                      " 4-D weights channels-last" +
                      (has("weights_4d") ? " of " + stat_text(stats, "weights_4d") : ""),
                  four > 0 ? "lay the model out with the settings' prepare(model)"
                           : "a model without 4-D weights cannot use it: declare "
                             "channels_last unsupported");
    }
  } else if (t.name == "zero_grad_to_none" && has("zero_grad_calls_per_step")) {
    if (stats["zero_grad_calls_per_step"].get<double>() >= 1) {
      out.ok(label + " acts: each step clears its gradients through the SDK (GradStep)");
    } else {
      out.problem(label + " did nothing: the step cleared no gradients through the SDK",
                  "clear them with GradStep or the settings' zero_grad(optimizer)");
    }
  } else if (t.name == "loader_workers" && has("input_batches")) {
    if (stats["input_batches"].get<double>() > 0) {
      out.ok(label + " acts: the steps took " + stat_text(stats, "input_batches") +
             " batches from the SDK's loader");
    } else {
      out.problem(label + " did nothing: no batch came from the SDK's loader",
                  "draw the step's batches from it (Python: next() of s.loader(dataset))");
    }
  } else if (judge_seen(t, stats, out)) {
    return;
  } else if (const char* stat = host_stat_of(t.name)) {
    out.note(label + ": not observable, stats() report no " + stat,
             "the Python SDK and torchkit report what they observe of the settings; without "
             "it a sweep of " +
                 t.name + " is taken on trust");
  } else if (t.name == "tf32" || t.name == "seed" || t.name == "cudnn_benchmark") {
    out.note(label +
                 ": the steps ran with it; the worker applies it to the process (torch's "
                 "own flag), and nothing in a step shows it",
             "a sweep of it measures what it does to the steps' time");
  } else {
    out.note(label + ": the steps ran with it; nothing they report shows whether it acted",
             "a sweep of it is taken on trust");
  }
}

}  // namespace

std::vector<SettingTry> settings_to_try(const Json& manifest) {
  std::vector<SettingTry> out;
  // A workload that names values to try names all it can show: the host's
  // own choices are for those that name none.
  const Json params = manifest.value("params", Json::array());
  const auto has_check_value = [](const Json& p) {
    return p.is_object() && p.contains("check_value") && !p["check_value"].is_null();
  };
  const bool chosen = std::any_of(params.begin(), params.end(), has_check_value);
  for (const auto& p : params) {
    if (!p.is_object() || !p.value("applies", true)) continue;
    const std::string name = p.value("name", "");
    // The workload's own choice of a value to try comes first.
    if (has_check_value(p)) {
      out.push_back({name, p["check_value"], true});
      continue;
    }
    if (chosen || !p.value("common", false)) continue;
    const Json def = p.value("default", Json());
    if ((name == "channels_last" || name == "zero_grad_to_none") && def.is_boolean()) {
      out.push_back({name, !def.get<bool>()});
    } else if (name == "grad_accum" && def.is_number_integer()) {
      const int64_t twice = 2 * def.get<int64_t>();
      if (!p.contains("max") || twice <= p["max"].get<double>()) out.push_back({name, twice});
    } else if (name == "loader_workers" && def == Json(0)) {
      out.push_back({name, 1});
    }
  }
  return out;
}

void try_settings(const WorkerArgs& base, const Json& config, std::vector<SettingTry> group,
                  double timeout_s, CheckItems& out) {
  while (!group.empty()) {
    const SettingRun run = run_with(base, config, group, timeout_s);
    if (!run.failed) {
      for (const auto& t : group) judge_setting(t, run.stats, out);
      return;
    }
    const std::string message = run.failed->message.value_or("");
    const std::string& status = run.failed->status_name;
    std::vector<SettingTry> named;
    std::vector<SettingTry> rest;
    for (const auto& t : group) {
      (message.find(t.name + "=") != std::string::npos ? named : rest).push_back(t);
    }
    if (named.empty() && group.size() > 1) {
      for (const auto& t : group) try_settings(base, config, {t}, timeout_s, out);
      return;
    }
    if (named.empty()) {
      const std::string what = "with " + group.front().label() + ", " +
                               call_name(run.failed->call()) + " returned " +
                               status_text(*run.failed);
      if (status == "skipped") {
        out.note(what, "the setting cannot be tried here; a sweep of it skips such trials too");
      } else {
        out.problem(what, "fix the error; run the check's steps with --set " +
                              group.front().label() + " to see it");
      }
      return;
    }
    for (const auto& t : named) {
      const auto [seen, fix] = message_about(message, t.name);
      out.problem(seen, fix);
    }
    group = rest;
  }
}

void try_declared_settings(const WorkerArgs& base, const Json& config, const Json& manifest,
                           double timeout_s, CheckItems& out) {
  std::vector<SettingTry> together;
  for (const auto& t : settings_to_try(manifest)) {
    if (t.alone) {
      try_settings(base, config, {t}, timeout_s, out);
    } else {
      together.push_back(t);
    }
  }
  if (!together.empty()) try_settings(base, config, together, timeout_s, out);
}

}  // namespace gpusweep::host::detail
