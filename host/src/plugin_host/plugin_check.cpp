// Plugin validation for `gpusweep plugins --check`; see plugin_check.hpp.
#include "plugin_host/plugin_check.hpp"
#include "plugin_host/check_internal.hpp"
#include "protocol/event_payloads.hpp"
#include "protocol/events.hpp"
#include "protocol/worker_args.hpp"

#include "plugin_host/registry.hpp"
#include "support/error.hpp"
#include "support/format.hpp"
#include "support/spawn.hpp"

#include <gpusweep/stat_names.hpp>

#include <gpusweep/plugin.h>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>

namespace gpusweep::host {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using Level = CheckItem::Level;

int PluginCheckReport::count(Level level) const {
  return static_cast<int>(std::count_if(items.begin(), items.end(),
                                        [level](const CheckItem& i) { return i.level == level; }));
}

namespace detail {

// How the worker ended, for a message: "was killed by SIGSEGV (...)".
std::string how_it_ended(const Captured& c, double timeout_s) {
  if (c.timed_out) return "did not return within " + number_text(timeout_s) + " s";
  if (WIFSIGNALED(c.status)) return "crashed the worker: " + signal_description(WTERMSIG(c.status));
  return "ended the worker (exit code " + std::to_string(WEXITSTATUS(c.status)) + ")";
}

std::string stderr_tail(const Captured& c) {
  if (c.err.empty()) return "";
  std::string tail = c.err.size() > 600 ? "..." + c.err.substr(c.err.size() - 600) : c.err;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  return "; stderr: " + tail;
}

std::string call_name(const event::Begin& call) {
  std::string fn = (call.fn.empty() ? "?" : call.fn) + "()";
  if (call.idx) fn += " (step " + std::to_string(*call.idx + 1) + ")";
  return fn;
}

std::string status_text(const event::End& end) {
  const std::string message = end.message.value_or("");
  return end.status_name + (message.empty() ? "" : ": " + message);
}

}  // namespace detail

using detail::call_name;
using detail::how_it_ended;
using detail::status_text;
using detail::stderr_tail;

namespace {

// Four significant digits: what a person reads in a one-line summary.
std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// Values of a JSON object that are not finite numbers, as "key (why)".
std::vector<std::string> non_numbers(const Json& obj) {
  std::vector<std::string> bad;
  for (const auto& [k, v] : obj.items()) {
    if (v.is_null()) {
      bad.push_back("'" + k + "' is not finite (NaN or infinity)");
    } else if (!v.is_number()) {
      bad.push_back("'" + k + "' is " + v.dump() + ", not a number");
    }
  }
  return bad;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

std::string metrics_text(const Json& obj, size_t limit) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : obj.items()) {
    if (parts.size() == limit) {
      parts.push_back("...");
      break;
    }
    parts.push_back(k + "=" + (v.is_number_float() ? short_number(v.get<double>()) : v.dump()));
  }
  return join(parts, ", ");
}

// The smoke run's report, one ABI function at a time: each "end" event is
// judged by the method for its function; the steps are summarised together.
class SmokeCheck {
 public:
  SmokeCheck(const std::string& path, const Json& manifest, const Json& config, CheckItems& out)
      : manifest_(manifest), out_(out) {
    rerun_ = "reproduce it outside gpusweep's supervision with: " + worker_executable() +
             " --check --plugin " + path + " --config '" + config.dump() +
             "' --proto-fd 1 (under gdb if it crashes)";
    unit_ = json_string(manifest, "unit").value_or("");
    if (unit_.empty()) unit_ = "samples";
    secondary_unit_ = json_string(manifest, "secondary_unit").value_or("");
  }

  void judge(const event::End& end) {
    const std::string& fn = end.fn;
    const bool ok = end.status == GPUSWEEP_STATUS_OK;
    const double seconds = end.seconds;
    if (fn == "create") {
      create(end, ok, seconds);
    } else if (fn == "step") {
      step(end, ok, seconds);
    } else if (fn == "synchronize" || fn == "destroy") {
      if (!ok) late_.problem(fn + "() returned " + status_text(end), "fix the error; " + rerun_);
    } else if (fn == "evaluate") {
      evaluate(end, ok);
    } else if (fn == "stats") {
      stats(end, ok);
    }
  }

  // The steps' summary, then what followed them.
  void finish() {
    summarise_steps();
    for (auto& item : late_.all()) out_.all().push_back(std::move(item));
  }

  const std::string& rerun() const { return rerun_; }
  size_t steps_seen() const { return samples_.size(); }

 private:
  void create(const event::End& end, bool ok, double seconds) {
    if (!ok) {
      out_.problem("create() with the smallest config returned " + status_text(end),
                   end.status_name == "skipped"
                       ? "the defaults must run on any machine (device auto, fp32, no CUDA-only "
                         "setting); make the default of the refused setting one that applies"
                       : "fix the error; " + rerun_);
    } else if (!end.instance.value_or(false)) {
      out_.problem("create() returned OK without an instance",
                   "set *out to the new instance before returning GPUSWEEP_STATUS_OK");
    } else {
      out_.ok("create() with the smallest config took " + human_seconds(seconds));
    }
  }

  void step(const event::End& end, bool ok, double seconds) {
    if (!ok) {
      out_.problem(call_name(end.call()) + " returned " + status_text(end),
                   "fix the error; " + rerun_);
      return;
    }
    // Not finite (null on the wire) or missing: judged as a bad count.
    samples_.push_back(end.samples.value_or(std::nan("")));
    secondary_.push_back(end.secondary_samples.value_or(std::nan("")));
    step_seconds_.push_back(seconds);
  }

  void evaluate(const event::End& end, bool ok) {
    if (!ok) {
      late_.problem("evaluate() returned " + status_text(end), "fix the error; " + rerun_);
      return;
    }
    const Json metrics = end.metrics.value_or(Json());
    if (!metrics.is_object()) {
      late_.problem("evaluate() returned " + metrics.dump() + ", not a JSON object of numbers",
                    "return gpusweep::Metrics {{\"name\", value}, ...}");
      return;
    }
    for (const auto& bad : non_numbers(metrics)) {
      late_.problem("evaluate(): " + bad, "return finite numbers only");
    }
    bool complete = true;
    if (auto q = manifest_.find("quality"); q != manifest_.end() && q->is_object()) {
      for (const char* key : {"metric", "reference"}) {
        const std::string k = json_string(*q, key).value_or("");
        if (!k.empty() && !metrics.contains(k)) {
          complete = false;
          late_.problem("evaluate() did not return '" + k + "', the manifest's quality " + key,
                        "return it from evaluate() ({\"" + k +
                            "\", value}), or change "
                            "m.quality." +
                            key);
        }
      }
    }
    if (complete) late_.ok("evaluate(): " + metrics_text(metrics, 6));
  }

  void stats(const event::End& end, bool ok) {
    if (!ok) {
      late_.problem("stats() returned " + status_text(end), "fix the error; " + rerun_);
      return;
    }
    const Json stats = end.stats.value_or(Json());
    if (!stats.is_object()) {
      late_.problem("stats() returned " + stats.dump() + ", not a JSON object of numbers",
                    "return gpusweep::Metrics from stats()");
      return;
    }
    for (const auto& bad : non_numbers(stats)) {
      late_.problem("stats(): " + bad, "return finite numbers only");
    }
    if (!stats.contains(stat::peak_memory_bytes)) {
      late_.note("stats() reports no peak_memory_bytes, so the memory columns stay empty",
                 "derive from torchkit::TorchWorkload (it reports peak memory), or add "
                 "torchkit::peak_memory_bytes(device) to stats()");
    }
  }

  void summarise_steps() {
    if (samples_.empty()) return;
    const auto n = static_cast<int64_t>(samples_.size());
    const bool all_zero =
        std::all_of(samples_.begin(), samples_.end(), [](double v) { return v == 0; });
    const bool any_bad = std::any_of(samples_.begin(), samples_.end(),
                                     [](double v) { return !std::isfinite(v) || v < 0; });
    if (all_zero) {
      out_.problem("step() reported 0 samples in each of its " + std::to_string(n) + " steps",
                   "return what the step processed, in the manifest's unit (" + unit_ +
                       "): return {/*samples=*/double(batch_size), /*secondary_samples=*/0}; "
                       "throughput is samples per second, so 0 makes every trial's throughput 0");
    } else if (any_bad) {
      out_.problem("step() reported a negative or non-finite number of samples",
                   "return the count of samples the step processed (>= 0)");
    } else {
      std::vector<double> sorted = step_seconds_;
      std::sort(sorted.begin(), sorted.end());
      const double median = sorted[sorted.size() / 2];
      const bool same = std::all_of(samples_.begin(), samples_.end(),
                                    [&](double v) { return v == samples_.front(); });
      out_.ok(
          "step() x" + std::to_string(n) + ": " +
          (same ? number_text(samples_.front()) + " " + unit_ + " each"
                : "between " + number_text(*std::min_element(samples_.begin(), samples_.end())) +
                      " and " + number_text(*std::max_element(samples_.begin(), samples_.end())) +
                      " " + unit_) +
          ", median " + human_seconds(median));
      if (std::any_of(samples_.begin(), samples_.end(), [](double v) { return v == 0; })) {
        out_.note("some steps reported 0 samples",
                  "fine if those steps really process nothing; each step should be one unit of "
                  "training work (see docs/writing-plugins.md, \"What one step is\")");
      }
    }
    const bool any_secondary =
        std::any_of(secondary_.begin(), secondary_.end(), [](double v) { return v != 0; });
    if (!secondary_unit_.empty() && !any_secondary) {
      out_.note("the manifest declares secondary_unit '" + secondary_unit_ +
                    "' but step() reported 0 of it",
                "return it as StepResult::secondary_samples, or drop m.secondary_unit");
    } else if (secondary_unit_.empty() && any_secondary) {
      out_.note("step() reports secondary samples but the manifest has no secondary_unit",
                "set m.secondary_unit so that they are shown, or return 0");
    }
  }

  const Json& manifest_;
  CheckItems& out_;
  CheckItems late_;  // what follows the steps, reported after their summary
  std::string rerun_;
  std::string unit_;
  std::string secondary_unit_;
  std::vector<double> samples_;
  std::vector<double> secondary_;
  std::vector<double> step_seconds_;
};

void check_smoke(const std::string& path, const std::vector<event::Event>& events,
                 const Captured& c, const Json& manifest, const Json& config, int64_t steps,
                 double timeout_s, CheckItems& out) {
  SmokeCheck check(path, manifest, config, out);
  std::vector<event::End> ends;
  std::optional<event::Begin> open;  // a call that began and never ended
  Json runtime;
  for (const auto& e : events) {
    if (const auto* b = std::get_if<event::Begin>(&e)) open = *b;
    if (const auto* end = std::get_if<event::End>(&e)) {
      ends.push_back(*end);
      open.reset();
      check.judge(ends.back());
    }
    if (const auto* r = std::get_if<event::Runtime>(&e)) runtime = r->runtime;
  }
  check.finish();
  const std::string& rerun = check.rerun();
  if (open) {
    out.problem(call_name(*open) + " " + how_it_ended(c, timeout_s) + stderr_tail(c), rerun);
  }
  // Every call returned: say so once rather than per function.
  const bool all_ok = std::all_of(
      ends.begin(), ends.end(), [](const event::End& e) { return e.status == GPUSWEEP_STATUS_OK; });
  if (!open && all_ok && static_cast<int64_t>(check.steps_seen()) == steps && !ends.empty() &&
      ends.back().fn == "destroy") {
    out.ok("synchronize(), stats() and destroy() returned");
  }
  if (runtime.is_object() && runtime.empty()) {
    out.note("runtime() reports nothing, so the environment table lacks LibTorch's details",
             "derive from torchkit::TorchWorkload (its runtime() reports them)");
  } else if (!runtime.is_null() && !runtime.is_object()) {
    out.problem("runtime() returned " + runtime.dump().substr(0, 80) + ", not a JSON object",
                "return a JSON object (\"{}\" when unknown)");
  }
  if (!open && c.timed_out) {
    out.problem("the smoke run did not finish within " + number_text(timeout_s) + " s",
                "make setup and steps quicker at the smallest config, or pass --timeout-s");
  }
}

// Loads the plugin in a describe worker: its "loaded" event, or none after
// saying in out why it does not load.
std::optional<event::Loaded> load_in_worker(const std::string& path, const Json& selection,
                                            double timeout_s, CheckItems& out) {
  WorkerArgs describe;
  describe.mode = WorkerMode::describe;
  describe.plugin_path = path;
  if (!selection.empty()) describe.config_json = selection.dump();
  const Captured d = run_worker_captured(describe, timeout_s);
  std::optional<event::Loaded> loaded;
  std::optional<event::Result> failure;
  for (const auto& e : event::parse(d.proto)) {
    if (const auto* l = std::get_if<event::Loaded>(&e)) loaded = *l;
    if (const auto* r = std::get_if<event::Result>(&e)) failure = *r;
  }
  if (!loaded) {
    if (failure) {
      const std::string reason = failure->reason.value_or(failure->message.value_or(""));
      std::string fix =
          "rebuild it against this gpusweep's SDK (find_package(gpusweep) from this "
          "installation)";
      if (reason.find("cannot load") != std::string::npos) {
        fix = "a missing library or undefined symbol: check `ldd -r " + path +
              "`; gpusweep_add_plugin links with --no-undefined so that this shows at build time";
      } else if (reason.find("not a gpusweep plugin") != std::string::npos) {
        fix = "export the entry with GPUSWEEP_EXPORT_WORKLOAD(YourClass) in one source file";
      } else if (reason.find("No module named") != std::string::npos) {
        // A Python workload or script importing what its interpreter lacks.
        fix =
            "install it into the Python the workload runs in (GPUSWEEP_PYTHON, else the "
            "project's .venv/bin/python3), or set GPUSWEEP_PYTHON to the python of an "
            "environment that has it, with the same torch (docs/your-script.md)";
      }
      out.problem("it does not load: " + reason, fix);
    } else {
      out.problem("loading it " + how_it_ended(d, timeout_s) + stderr_tail(d),
                  "something runs when the library loads (a static initialiser, or "
                  "gpusweep_plugin_entry itself) and fails; entry must be cheap and side-effect "
                  "free");
    }
  }
  return loaded;
}

// A run's end events, in order.
std::vector<event::End> ends_of(const std::vector<event::Event>& events) {
  std::vector<event::End> ends;
  for (const auto& e : events) {
    if (const auto* end = std::get_if<event::End>(&e)) ends.push_back(*end);
  }
  return ends;
}

// What the smoke run's evaluate() returned (null when it did not return).
Json evaluated(const std::vector<event::Event>& events) {
  for (const auto& end : ends_of(events)) {
    if (end.fn == "evaluate" && end.status == GPUSWEEP_STATUS_OK) {
      return end.metrics.value_or(Json());
    }
  }
  return Json();
}

// Two runs of the same config and seed: each metric bit for bit the same.
void judge_determinism(const Json& first, const Json& second, CheckItems& out) {
  if (!first.is_object() || !second.is_object()) {
    out.problem("the manifest claims determinism, but evaluate() did not return in both runs",
                "fix evaluate() first (see above)");
    return;
  }
  std::vector<std::string> differ;
  for (const auto& [k, v] : first.items()) {
    if (!second.contains(k) || second[k] != v) {
      differ.push_back(k + " " + v.dump() + " then " +
                       (second.contains(k) ? second[k].dump() : "absent"));
    }
  }
  if (differ.empty()) {
    out.ok("deterministic: a second run with the same config and seed evaluated to the same " +
           std::to_string(first.size()) + (first.size() == 1 ? " metric" : " metrics"));
  } else {
    out.problem(
        "the manifest claims determinism, but two runs with the same config and seed "
        "evaluated differently: " +
            join(differ, "; "),
        "draw all randomness from generators seeded by config's seed (data, "
        "initialisation, dropout, shuffling), or drop the claim (deterministic=False)");
  }
}

// The manifest, every problem at once (the worker passes text that is not
// JSON on as {"unparsed": text}); false when it cannot be read at all.
bool judge_manifest(const Json& manifest, const std::string& expected, CheckItems& out) {
  if (manifest.is_object() && manifest.contains("unparsed") && manifest["unparsed"].is_string()) {
    std::string why;
    try {
      [[maybe_unused]] const Json parsed = Json::parse(manifest["unparsed"].get<std::string>());
    } catch (const Json::parse_error& e) {
      why = e.what();
    }
    out.problem("the manifest is not valid JSON (" + why + ")",
                "build the manifest with gpusweep::Manifest and GPUSWEEP_EXPORT_WORKLOAD, which "
                "write valid JSON; a hand-written manifest() must return one complete JSON "
                "object");
    return false;
  }
  const auto manifest_items = check_manifest(manifest, expected);
  const bool manifest_ok =
      std::none_of(manifest_items.begin(), manifest_items.end(),
                   [](const CheckItem& i) { return i.level == Level::problem; });
  if (manifest_ok) {
    std::string quality;
    if (manifest.contains("quality") && manifest["quality"].is_object()) {
      const auto metric = json_string(manifest["quality"], "metric").value_or("");
      if (!metric.empty()) {
        quality = ", quality " + metric + " (" +
                  (manifest["quality"].value("higher_is_better", true) ? "higher" : "lower") +
                  " is better)";
      }
    }
    out.ok("manifest: " + manifest.value("name", "") + " " + manifest.value("version", "") +
           ", throughput in " + manifest.value("unit", "") + "/s, " +
           std::to_string(manifest["params"].size()) +
           (manifest["params"].size() == 1 ? " parameter" : " parameters") + quality);
  }
  for (const auto& item : manifest_items) out.all().push_back(item);
  return true;
}

// Whether a smoke run reached destroy() with every call returning OK.
bool every_call_returned(const std::vector<event::Event>& events) {
  const std::vector<event::End> ends = ends_of(events);
  return std::any_of(ends.begin(), ends.end(),
                     [](const event::End& e) { return e.fn == "destroy"; }) &&
         std::none_of(ends.begin(), ends.end(),
                      [](const event::End& e) { return e.status != GPUSWEEP_STATUS_OK; });
}

}  // namespace

PluginCheckReport check_plugin(const std::string& path, int64_t steps, double timeout_s,
                               const Json& selection) {
  PluginCheckReport report;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw UsageError("plugins --check: no plugin file at '" + path +
                     "' (give the path of a gpusweep_<name>.so)");
  }
  report.path = fs::absolute(path).lexically_normal().string();
  CheckItems out;

  const std::string file = fs::path(path).filename().string();
  std::string expected;
  if (file.size() > 12 && file.rfind("gpusweep_", 0) == 0 &&
      file.compare(file.size() - 3, 3, ".so") == 0) {
    expected = file.substr(9, file.size() - 12);
  } else {
    out.problem("the file name " + file + " is not gpusweep_<name>.so",
                "the host only finds files named gpusweep_<name>.so; build it with "
                "gpusweep_add_plugin(<name> ...), which names it so");
  }

  // 1. Load and read the manifest, as the registry does.
  const auto loaded = load_in_worker(report.path, selection, timeout_s, out);
  if (!loaded) {
    report.items = std::move(out.all());
    return report;
  }
  const std::string host_abi =
      std::to_string(GPUSWEEP_ABI_MAJOR) + "." + std::to_string(GPUSWEEP_ABI_MINOR);
  const std::string abi = loaded->abi.value_or("?");
  out.ok("loads in a worker process: plugin ABI " + abi + ", this gpusweep's ABI " + host_abi);

  // 2. The manifest, every problem at once.
  const Json manifest = loaded->manifest;
  if (!judge_manifest(manifest, expected, out)) {
    report.items = std::move(out.all());
    return report;
  }

  // A bridge's own manifest: the workload to check is one it selects.
  if (selection.empty()) {
    for (const auto& p : manifest.value("params", Json::array())) {
      if (p.is_object() && p.value("selects", false)) {
        const std::string name = p.value("name", "");
        out.note("'" + name +
                     "' selects the workload this plugin runs; none was given, so "
                     "nothing ran",
                 "check one: plugins --check " + expected + " --set " + name + "=VALUE");
        report.items = std::move(out.all());
        return report;
      }
    }
  }
  // 3. The smoke run, in a second worker.
  report.config = smallest_config(manifest);
  report.config.update(selection);
  WorkerArgs check;
  check.mode = WorkerMode::plugin_check;
  check.plugin_path = report.path;
  check.config_json = report.config.dump();
  check.check_steps = steps;
  const Captured s = run_worker_captured(check, timeout_s);
  const std::vector<event::Event> first = event::parse(s.proto);
  check_smoke(report.path, first, s, manifest, report.config, steps, timeout_s, out);
  // 4. Determinism, where the workload claims it: a second run, the same metrics.
  if (manifest.value("deterministic", false)) {
    const Captured again = run_worker_captured(check, timeout_s);
    judge_determinism(evaluated(first), evaluated(event::parse(again.proto)), out);
  }
  // 5. Each setting the workload declares acts: the steps again with each at
  // a value other than its default, and what its stats observed.
  // Only after a smoke run whose every call returned: else its problems come first.
  const bool smoke_ok = !s.timed_out && every_call_returned(first);
  if (smoke_ok) detail::try_declared_settings(check, report.config, manifest, timeout_s, out);
  report.items = std::move(out.all());
  return report;
}

}  // namespace gpusweep::host
