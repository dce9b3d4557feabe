// The `script` workload: a user's own training script (a transformers
// Trainer, a Lightning Trainer, a plain loop), run as `python train.py ARGS`
// would run it, in the trial's worker, and measured one optimiser step at a
// time under the same protocol as every workload (docs/your-script.md).
//
// The sweep names the script in base.script and its arguments in base.args;
// the trial's settings reach it as its own flags (base.flags: a built-in map
// or the sweep's own) or through gpusweep.setting(). The script reports its
// steps with one line (gpusweep.step(), or a Trainer callback); the SDK's
// gpusweep._script runs it on a thread of its own and hands each step to
// this plugin. The process-wide settings (threads, seed, TF32, cuDNN
// benchmark) are applied in C++ before the script starts, as for a module.
#include <gpusweep/torchkit/torch_workload.hpp>

#include "bridge_workload.hpp"
#include "embed.hpp"

#include <map>
#include <mutex>

namespace {

using namespace gpusweep;
using namespace gpusweep::torchkit;

constexpr const char* kScript = "script";

std::vector<Param> script_params() {
  Param script = Param::text(kScript, "",
                             "the training script (path/to/train.py), relative to the sweep "
                             "file's folder; run as `python train.py ARGS` would run it");
  script.selects = true;
  script.path = true;
  Param quality = Param::text("quality", "",
                              "the metric of the script's own evaluation that is the trial's "
                              "quality (eval_loss from a Trainer's on_evaluate, val_loss logged "
                              "in Lightning, or gpusweep.quality(name, ...)); empty: none");
  quality.selects = true;
  Param higher = Param::boolean("higher_is_better", false,
                                "whether a larger quality metric is better (false for a loss)");
  higher.selects = true;
  Param cwd =
      Param::text("cwd", ".", "the folder the script runs in, relative to the sweep file's folder");
  cwd.selects = true;
  cwd.path = true;
  // The flag map selects: it is checked, against the settings it names,
  // before anything runs.
  Param flags = Param::json_value(
      "flags", "none",
      "how the trial's settings reach the script's parser: hf (transformers' "
      "TrainingArguments), lightning (LightningCLI), none, or a map of your own "
      "({\"batch_size\": \"--batch-size\", \"precision\": {\"bf16\": [\"--amp\"], "
      "\"fp32\": []}})");
  flags.selects = true;
  return {script,
          Param::json_value("args", "",
                            "the script's arguments: a list ([\"--output_dir\", \"out\"]), or "
                            "one text as a shell would split it"),
          flags,
          quality,
          higher,
          cwd,
          Param::real("step_timeout_s", 300, 1, 86400,
                      "seconds to wait for the script's next optimiser step before the trial "
                      "fails")};
}

// The script's own flags the sweep names ("--optim"), typed by the value
// the sweep gives: true/false a bare flag or none, else `--flag value`.
std::vector<Param> flag_params(const Json& config) {
  std::vector<Param> out;
  for (const auto& [key, value] : config.items()) {
    if (key.rfind("--", 0) != 0) continue;
    const std::string what = "the script's own flag " + key;
    if (value.is_boolean()) {
      out.push_back(Param::boolean(key, false, what + " (true: given bare, false: left out)"));
    } else if (value.is_number_integer()) {
      out.push_back(Param::integer(key, 0, std::nullopt, std::nullopt, what));
    } else if (value.is_number()) {
      out.push_back(Param::real(key, 0, std::nullopt, std::nullopt, what));
    } else {
      out.push_back(Param::text(key, "", what));
    }
  }
  return out;
}

// Every common setting can reach a script through a flag map or
// gpusweep.setting(); which ones do is the trial's to find out (a setting no
// flag carries skips it, saying so). CUDA graphs need a step the SDK
// captures, and data parallelism a rendezvous gpusweep runs: neither yet.
Support script_support() {
  Support s;
  s.channels_last = s.input_pipeline = s.cudnn = s.grad_accum = s.precision = true;
  s.sync_every = s.cuda_graphs = s.data_parallel = false;
  s.reason = "a script workload has no way to apply it yet";
  return s;
}

// digest: of the script and the modules it imports from its folder; a
// changed one is a changed workload (the version is hashed into every config).
Manifest script_manifest(const Json& config, const std::string& digest) {
  Manifest m;
  m.name = kScript;
  const std::string script = config.value(kScript, "");
  m.version = digest.empty() ? "1.0.0" : "1.0.0+" + digest;
  // "script: ...": two versions of a script are one workload for `check`
  // (what precedes the colon names the selected workload).
  m.description =
      "script: a training script of your own, run as it is and measured a step at a time" +
      (script.empty() ? std::string() : " (" + script + ")");
  m.unit = "samples";
  m.secondary_unit = "tokens";
  m.quality.metric = config.value("quality", "").empty() ? "" : "quality";
  m.quality.higher_is_better = config.value("higher_is_better", false);
  m.quality.description = "the script's " + config.value("quality", std::string("(none)"));
  m.params = common_params(8, script_support());
  for (auto& p : std::vector<Param>{
           Param::boolean("compile", false,
                          "torch.compile the model, by the flag map's flag (the hf map's "
                          "--torch_compile); compilation falls in the warmup"),
           Param::choice(
               "compile_mode", "default",
               {"default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"},
               "torch.compile's mode")}) {
    p.common = true;
    m.params.push_back(std::move(p));
  }
  for (auto& p : script_params()) m.params.push_back(std::move(p));
  for (auto& p : flag_params(config)) m.params.push_back(std::move(p));
  return m;
}

// The trial's config and, under "__defaults", every setting's default in
// this manifest: a setting the sweep set (not at its default) that no flag
// carries skips the trial.
Json with_defaults(const Json& config) {
  Json c = config;
  Json defaults = Json::object();
  for (const auto& p : script_manifest(config, "").params) defaults[p.name] = p.default_value;
  c["__defaults"] = std::move(defaults);
  return c;
}

class ScriptWorkload : public python::BridgeWorkload {
 public:
  explicit ScriptWorkload(const TrialConfig& config)
      : BridgeWorkload(config, script_support(), "", with_defaults(config.json())) {}

  static Manifest manifest() {
    Manifest m;
    m.name = kScript;
    m.version = "1.0.0";
    m.description =
        "a training script of your own (a transformers Trainer, a Lightning Trainer, a plain "
        "loop), run as it is: base.script names it";
    m.unit = "samples";
    // Its own keys, the selecting ones among them (the host sends those to
    // selected_manifest): the settings come with the selected manifest.
    m.params = script_params();
    return m;
  }

  // The script's first warmup step runs under PyTorch's FLOP counter: the
  // host then has each trial measure its device's matmul peak too, for the
  // step's share of it (model FLOPs utilisation).
  static Json runtime() {
    auto r = RuntimeInfo::from_json(BridgeWorkload::runtime());
    r.counts_flops = true;
    return r.to_json();
  }

  static Manifest selected_manifest(const Json& config) {
    // The digest reads the script and its siblings (it runs nothing): once
    // per script and process.
    static std::mutex mutex;
    static std::map<std::string, std::string> digests;
    const std::string script = config.value(kScript, "");
    std::string digest;
    if (!script.empty()) {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = digests.find(script);
      if (it == digests.end()) it = digests.emplace(script, python::script_digest(script)).first;
      digest = it->second;
    }
    Manifest m = script_manifest(config, digest);
    map_flags(m, config.value("flags", Json("none")));
    return m;
  }

 private:
  // Refuses a flag map naming a setting the manifest lacks (with the nearest
  // names) or shaped wrong, and gives each setting it carries a value for
  // `plugins --check` to try; the map is read once per process.
  static void map_flags(Manifest& m, const Json& flags) {
    static std::mutex mutex;
    static std::map<std::string, Json> checked;
    Json result;
    {
      std::lock_guard<std::mutex> lock(mutex);
      const std::string key = flags.dump();
      auto it = checked.find(key);
      if (it == checked.end()) {
        it = checked.emplace(key, python::check_script_flags(flags, mappable(m))).first;
      }
      result = it->second;
    }
    const std::string problem = result.value("problem", "");
    if (!problem.empty()) throw std::invalid_argument(problem);
    for (const auto& name : result.value("mapped", Json::array())) {
      for (auto& p : m.params) {
        if (p.name == name) p.check_value = check_value(p);
      }
    }
  }

  // The settings a flag map may name, each with the texts of the values it
  // can take (null: any).
  static Json mappable(const Manifest& m) {
    Json settings = Json::object();
    for (const auto& p : m.params) {
      if (!p.common) continue;
      Json allowed = nullptr;
      if (p.type == ParamType::boolean) allowed = {"true", "false"};
      if (!p.choices.empty()) {
        allowed = Json::array();
        for (const auto& c : p.choices) {
          allowed.push_back(c.is_string() ? c.get<std::string>() : c.dump());
        }
      }
      settings[p.name] = allowed;
    }
    return settings;
  }

  // A value of a mapped setting whose effect the script's watch can see,
  // or can at least be run with; null where trying one shows nothing more
  // (compile_mode, prefetch: they need another setting with them).
  static Json check_value(const Param& p) {
    const Json& d = p.default_value;
    if (p.name == "precision") return d == Json("bf16") ? Json("fp32") : Json("bf16");
    if (p.name == "batch_size" || p.name == "grad_accum") {
      const long long twice = 2 * d.get<long long>();
      return p.max && twice > *p.max ? Json(nullptr) : Json(twice);
    }
    if (p.name == "loader_workers") return d == Json(0) ? Json(1) : Json(0);
    if (p.name == "seed") return d.get<long long>() + 1;
    if (p.type == ParamType::boolean) return !d.get<bool>();
    return nullptr;
  }
};

}  // namespace

GPUSWEEP_EXPORT_WORKLOAD(ScriptWorkload)
