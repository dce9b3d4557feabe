// The common settings: one table, one entry a setting (name, type, default,
// range or values, meaning, the devices where a value can act, what it acts
// on, what the workload must have for it, what diagnose suggests sweeping).
// Everything else comes from it: the manifest's common parameters and their
// validation (torchkit's common_params and Settings::apply, whose apply
// functions sit in sdk/torchkit/src/settings.cpp), the Python SDK's settings
// (the python plugin hands it the table), diagnose's suggestions, doctor's
// list of CUDA-only settings and docs/settings.md (`gpusweep settings
// --format markdown`, a test keeps it current).
//
// Adding a common setting: an entry here (with its CommonValues field when
// the value is read as it is), its apply function in torchkit when it needs
// one, and its tests. Header-only and free of LibTorch: the host reads it.
#pragma once

#include <gpusweep/manifest.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace gpusweep {

// What a workload has for the common settings to act on. A setting it does
// not support stays in the manifest (one sweep file works across workloads)
// marked "applies": false, and a trial that sets it to anything but its
// default is skipped with `reason`.
struct Support {
  bool channels_last = false;   // the model is convolutional with 4-D inputs
  bool input_pipeline = false;  // batches come from an input pipeline and are copied to the
                                // device each step
  bool cudnn = false;           // on CUDA the model runs cuDNN ops (convolutions, RNNs)
  bool grad_accum = false;      // a step can split into micro-batches
  bool sync_every = true;       // the step reads a loss back to the host
  bool precision = true;        // the forward pass can run under autocast
  bool data_parallel = false;   // world_size > 1: the workload takes its rank's share of each
                                // global batch and trains through torchkit's GradStep
  bool cuda_graphs = false;     // the step's device work runs through torchkit's StepGraph
                                // (static inputs, no host read inside it)
  std::string reason;           // why not, for the unsupported ones ("an LSTM has no 4-D tensors")
  // The workload's own defaults for settings it supports, where they differ
  // from the table's: {"channels_last": true} for a model whose convolutions
  // are fastest channels-last.
  Json defaults = Json::object();
};

// One of Support's flags, by the name manifests and the Python SDK use.
struct SupportFlag {
  const char* name;
  bool Support::*flag;
  const char* meaning;
  // Said of a workload without it, where the workload's own reason would not
  // say why (empty: the workload's reason).
  const char* without = "";
};

inline const std::vector<SupportFlag>& support_flags() {
  static const std::vector<SupportFlag> flags = {
      {"channels_last", &Support::channels_last, "the model is convolutional with 4-D inputs"},
      {"input_pipeline", &Support::input_pipeline,
       "batches come from an input pipeline and are copied to the device each step"},
      {"cudnn", &Support::cudnn, "on CUDA the model runs cuDNN convolutions or RNNs"},
      {"grad_accum", &Support::grad_accum, "a step can split into micro-batches"},
      {"sync_every", &Support::sync_every, "the step reads a loss back to the host"},
      {"precision", &Support::precision, "the forward pass can run under autocast"},
      {"data_parallel", &Support::data_parallel,
       "the workload takes its rank's share of each global batch",
       "the workload does not take a rank's share of each global batch, so it runs at "
       "world_size 1 only"},
      {"cuda_graphs", &Support::cuda_graphs,
       "the step's device work can be captured into a CUDA graph and replayed",
       "the workload's step has not opted in to capture (its device work does not run through "
       "torchkit's StepGraph)"},
  };
  return flags;
}

// A trial's values of the common settings that are read as they are; the
// settings a LibTorch plugin resolves (device, precision, dp_backend) have
// their resolved form in torchkit's Settings. Every field starts at its
// entry's default.
struct CommonValues {
  int64_t batch_size;
  int threads;
  uint64_t seed;
  bool zero_grad_to_none;
  bool keep_freed_memory;
  int64_t sync_every;
  bool tf32;
  bool cudnn_benchmark;
  bool channels_last;
  int64_t loader_workers;
  int64_t prefetch;
  bool pin_memory;
  bool non_blocking;
  int64_t grad_accum;
  int64_t world_size;
  double dp_bucket_mb;
  bool dp_static_graph;
  bool cuda_graphs;

  CommonValues();
};

// Where a setting's value lives in CommonValues (none: resolved elsewhere).
using CommonField =
    std::variant<std::monostate, bool CommonValues::*, int CommonValues::*, int64_t CommonValues::*,
                 uint64_t CommonValues::*, double CommonValues::*>;

// What a setting acts on: the process (set once before the workload is
// built), the model (moved, laid out), the step, the loader, or the ranks of
// a data-parallel trial.
enum class ActsOn { process, model, step, loader, ranks };

inline const char* acts_on_name(ActsOn a) {
  switch (a) {
    case ActsOn::process:
      return "process";
    case ActsOn::model:
      return "model";
    case ActsOn::step:
      return "step";
    case ActsOn::loader:
      return "loader";
    case ActsOn::ranks:
      return "ranks";
  }
  return "?";
}

// Where diagnose suggests a value: on any device, on CUDA, on Tensor Cores
// (compute capability 8.0 or newer), or where bfloat16 is fast (the CPU or
// Tensor Cores).
enum class When { always, cuda, tensor_cores, fast_bf16 };

inline const char* when_name(When w) {
  switch (w) {
    case When::always:
      return "always";
    case When::cuda:
      return "cuda";
    case When::tensor_cores:
      return "tensor_cores";
    case When::fast_bf16:
      return "fast_bf16";
  }
  return "?";
}

// Values worth sweeping when diagnose names a bottleneck ("input", "sync",
// "overhead", "compute", "memory", "communication"); with times_current, the
// values multiply the trial's own.
struct SweepHint {
  std::string bottleneck;
  std::vector<Json> values;
  bool times_current = false;
  When when = When::always;
};

struct CommonSetting {
  Param param;        // name, type, default, range or values, meaning: the manifest's entry
  CommonField field;  // where the value lives; none for device, precision, dp_backend
  ActsOn acts_on = ActsOn::step;
  bool Support::*needs = nullptr;  // what the workload must have (nullptr: every workload)
  std::string lacking;             // said of a workload without it: "it has no input pipeline"
  std::vector<Json> cuda_values;   // values that need a CUDA device...
  std::string on_cuda;             // ...and why: "applies to CUDA float32 matmuls"
  std::vector<SweepHint> sweep;    // what diagnose suggests
  std::string use;                 // how a LibTorch plugin applies it (docs)

  const std::string& name() const { return param.name; }
};

namespace detail {

inline CommonSetting entry(Param param, CommonField field, ActsOn acts_on) {
  CommonSetting s;
  param.common = true;
  s.param = std::move(param);
  s.field = field;
  s.acts_on = acts_on;
  return s;
}
// Long by design: the settings table, one entry per setting.
inline std::vector<CommonSetting> make_common_settings() {
  using C = CommonValues;
  std::vector<CommonSetting> t;
  auto add = [&t](Param p, CommonField field, ActsOn acts_on) -> CommonSetting& {
    t.push_back(entry(std::move(p), field, acts_on));
    return t.back();
  };
  {
    std::vector<Json> devices = {"auto", "cpu", "cuda"};
    for (int i = 0; i < 8; ++i) devices.emplace_back("cuda:" + std::to_string(i));
    auto& s = add(Param::choice("device", "auto", devices,
                                "where the model runs; auto = the first CUDA device if any, "
                                "else cpu"),
                  {}, ActsOn::model);
    s.use = "`settings_.device`; `settings_.prepare(module)` moves a model";
  }
  {
    auto& s = add(Param::integer("batch_size", 1, 1, 1 << 20, "samples per micro-batch"),
                  &C::batch_size, ActsOn::step);
    s.sweep = {
        {"overhead", {2, 4, 8}, true}, {"memory", {2, 4}, true}, {"communication", {2, 4}, true}};
    s.use = "`settings_.batch_size`";
  }
  {
    auto& s = add(Param::choice("precision", "fp32", {"fp32", "bf16", "fp16"},
                                "autocast precision of the forward pass; fp16 (with a gradient "
                                "scaler) needs CUDA"),
                  {}, ActsOn::step);
    s.needs = &Support::precision;
    s.cuda_values = {"fp16"};
    s.on_cuda =
        "(float16 autocast with a gradient scaler; bf16 runs on the CPU) needs a CUDA device";
    s.sweep = {{"compute", {"bf16"}, false, When::fast_bf16},
               {"memory", {"bf16"}, false, When::fast_bf16}};
    s.use =
        "`torchkit::AutocastScope autocast(settings_);` around the forward pass and loss; fp16's "
        "scaling in `torchkit::GradStep`";
  }
  {
    auto& s = add(Param::integer("threads", 0, 0, 1024,
                                 "intra-op threads LibTorch uses; 0 = LibTorch's default (the "
                                 "machine's cores), and 1 a rank for a data-parallel trial on "
                                 "the CPU"),
                  &C::threads, ActsOn::process);
    s.sweep = {{"compute", {1, 2}}};
    s.use = "applied by torchkit";
  }
  add(Param::integer("seed", 0, 0, 4294967295.0, "seed for data, initialisation and sampling"),
      &C::seed, ActsOn::process)
      .use =
      "applied by torchkit (`torch::manual_seed`); `settings_.seed` for the workload's own "
      "generators";
  add(Param::boolean("zero_grad_to_none", true,
                     "clear gradients by dropping them (true) or zeroing them in place"),
      &C::zero_grad_to_none, ActsOn::step)
      .use =
      "`torchkit::GradStep` (or `torchkit::zero_grad(optimizer, "
      "settings_.zero_grad_to_none)`)";
  add(Param::boolean("keep_freed_memory", true,
                     "host allocator keeps freed memory for the next step (glibc: no mmap, no "
                     "trimming); false = glibc's defaults, which unmap big tensors each step"),
      &C::keep_freed_memory, ActsOn::process)
      .use = "applied by torchkit";
  {
    auto& s = add(Param::integer("sync_every", 1, 0, 1 << 30,
                                 "read the loss back to the host every N steps (a host sync); "
                                 "0 = never"),
                  &C::sync_every, ActsOn::step);
    s.needs = &Support::sync_every;
    s.sweep = {{"sync", {10, 100}}};
    s.use = "`observe_loss(loss)` once per step reads the loss back only every N steps";
  }
  {
    auto& s = add(Param::boolean("tf32", false,
                                 "CUDA: TF32 tensor cores for float32 matmuls (cuBLAS). As in "
                                 "stock PyTorch, cuDNN's convolutions and RNNs use TF32 either "
                                 "way (torch.backends.cudnn.allow_tf32 = True): false is "
                                 "PyTorch's default"),
                  &C::tf32, ActsOn::process);
    s.cuda_values = {true};
    s.on_cuda = "applies to CUDA float32 matmuls";
    s.sweep = {{"compute", {true}, false, When::tensor_cores}};
    s.use = "applied by torchkit";
  }
  {
    auto& s = add(Param::boolean("cudnn_benchmark", false,
                                 "CUDA: let cuDNN time its convolution algorithms and keep the "
                                 "fastest"),
                  &C::cudnn_benchmark, ActsOn::process);
    s.needs = &Support::cudnn;
    s.lacking = "no cuDNN convolution or RNN";
    s.cuda_values = {true};
    s.on_cuda = "tunes cuDNN convolutions on CUDA";
    s.use = "applied by torchkit";
  }
  {
    auto& s = add(Param::boolean("channels_last", false,
                                 "NHWC memory format for the model's 4-D weights and inputs"),
                  &C::channels_last, ActsOn::model);
    s.needs = &Support::channels_last;
    s.sweep = {{"compute", {true}}, {"memory", {true}}};
    s.use = "`settings_.prepare(module)` and `settings_.to_device(host_tensor)`";
  }
  {
    auto& s = add(Param::integer("loader_workers", 0, 0, 64,
                                 "background threads producing batches; 0 = the step produces "
                                 "its own"),
                  &C::loader_workers, ActsOn::loader);
    s.needs = &Support::input_pipeline;
    s.lacking = "it has no input pipeline";
    s.sweep = {{"input", {1, 2, 4}}};
    s.use =
        "`torchkit::InputPipeline` produces batches on worker threads; `track(pipeline)` stops "
        "them between turns and during evaluations";
  }
  {
    auto& s = add(Param::integer("prefetch", 2, 1, 1024,
                                 "batches each loader worker may have ready ahead of the step"),
                  &C::prefetch, ActsOn::loader);
    s.needs = &Support::input_pipeline;
    s.lacking = "it has no input pipeline";
    s.use = "`torchkit::InputPipeline`";
  }
  {
    auto& s = add(Param::boolean("pin_memory", false,
                                 "CUDA: produce batches in page-locked host memory for faster "
                                 "copies"),
                  &C::pin_memory, ActsOn::loader);
    s.needs = &Support::input_pipeline;
    s.lacking = "it has no input pipeline";
    s.cuda_values = {true};
    s.on_cuda = "speeds host-to-device copies into CUDA memory";
    s.sweep = {{"input", {true}, false, When::cuda}};
    s.use = "`torchkit::InputPipeline`";
  }
  {
    auto& s = add(Param::boolean("non_blocking", false,
                                 "CUDA: copy batches to the device asynchronously (from pinned "
                                 "memory)"),
                  &C::non_blocking, ActsOn::step);
    s.needs = &Support::input_pipeline;
    s.lacking = "no batch is copied to the device per step";
    s.cuda_values = {true};
    s.on_cuda = "overlaps host-to-device copies with CUDA work";
    s.sweep = {{"input", {true}, false, When::cuda}};
    s.use = "`settings_.to_device(host_tensor)`";
  }
  {
    auto& s = add(Param::integer("grad_accum", 1, 1, 4096,
                                 "micro-batches per optimiser step (loss scaled by "
                                 "1/grad_accum)"),
                  &C::grad_accum, ActsOn::step);
    s.needs = &Support::grad_accum;
    s.sweep = {{"communication", {2, 4}}};
    s.use = "`torchkit::GradStep`: `backward(loss)` per micro-batch, then `step()`";
  }
  {
    auto& s = add(Param::integer("world_size", 1, 1, 1024,
                                 "data-parallel ranks: processes training one model on their "
                                 "shares of each global batch of world_size x batch_size, "
                                 "gradients all-reduced as DistributedDataParallel does; each "
                                 "rank its own GPU from --gpus, or on the CPU its own threads"),
                  &C::world_size, ActsOn::ranks);
    s.needs = &Support::data_parallel;
    s.sweep = {{"communication", {1}}};
    s.use =
        "nothing beyond `prepare` and `GradStep`, and the rank's slice of each global batch "
        "(`settings_.shard_begin()`, `global_batch()`)";
  }
  {
    auto& s = add(Param::choice("dp_backend", "auto", {"auto", "gloo", "nccl"},
                                "world_size > 1: the collectives' library; auto = NCCL on CUDA, "
                                "Gloo on the CPU"),
                  {}, ActsOn::ranks);
    s.needs = &Support::data_parallel;
    s.use = "applied by torchkit";
  }
  {
    auto& s = add(Param::real("dp_bucket_mb", 25, 0.001, 4096,
                              "world_size > 1: gradient bucket size in MiB, each all-reduced as "
                              "soon as its gradients are ready (DDP's bucket_cap_mb; the first "
                              "bucket 1 MiB)"),
                  &C::dp_bucket_mb, ActsOn::ranks);
    s.needs = &Support::data_parallel;
    s.sweep = {{"communication", {1.0, 100.0}}};
    s.use = "`torchkit::GradStep`";
  }
  {
    auto& s = add(Param::boolean("dp_static_graph", false,
                                 "world_size > 1: the reducer's static-graph mode (DDP's "
                                 "static_graph): the same parameters get gradients every step"),
                  &C::dp_static_graph, ActsOn::ranks);
    s.needs = &Support::data_parallel;
    s.use = "`torchkit::GradStep`";
  }
  {
    auto& s = add(Param::boolean("cuda_graphs", false,
                                 "CUDA: capture the step's device work (forward, loss, backward, "
                                 "optimiser) into a CUDA graph after a warmup and replay it, one "
                                 "launch a step, from static input tensors; gradients are zeroed "
                                 "in place (zero_grad_to_none is overridden) and the graph's "
                                 "memory pool counts in the peak"),
                  &C::cuda_graphs, ActsOn::step);
    s.needs = &Support::cuda_graphs;
    s.cuda_values = {true};
    s.on_cuda = "captures CUDA kernels into a graph";
    s.sweep = {{"overhead", {true}, false, When::cuda}};
    s.use =
        "`graphed([&] { ... })` in `TorchWorkload` around the step's device work, its inputs "
        "through `step_input(slot, tensor)`; the optimiser capturable "
        "(`torchkit::FusedAdam::capturable(true)`)";
  }
  return t;
}

}  // namespace detail

// The table, in the order manifests list the settings.
inline const std::vector<CommonSetting>& common_settings() {
  static const std::vector<CommonSetting> table = detail::make_common_settings();
  return table;
}

inline const CommonSetting* find_common_setting(const std::string& name) {
  for (const auto& s : common_settings()) {
    if (s.name() == name) return &s;
  }
  return nullptr;
}

inline const SupportFlag* support_flag_of(const CommonSetting& s) {
  for (const auto& f : support_flags()) {
    if (f.flag == s.needs) return &f;
  }
  return nullptr;
}

inline CommonValues::CommonValues() {
  for (const auto& s : common_settings()) {
    std::visit(
        [&](auto field) {
          using F = decltype(field);
          if constexpr (!std::is_same_v<F, std::monostate>) {
            using T = std::remove_reference_t<decltype(this->*field)>;
            this->*field = s.param.default_value.get<T>();
          }
        },
        s.field);
  }
}

// The table as JSON: what `gpusweep settings --format json` prints and the
// python plugin gives the Python SDK.
inline Json common_settings_json() {
  Json settings = Json::array();
  for (const auto& s : common_settings()) {
    Json j = s.param.to_json();
    j.erase("common");
    j["acts_on"] = acts_on_name(s.acts_on);
    const SupportFlag* flag = support_flag_of(s);
    j["needs"] = flag != nullptr ? Json(flag->name) : Json();
    if (!s.lacking.empty()) j["lacking"] = s.lacking;
    if (!s.cuda_values.empty()) {
      j["cuda_values"] = s.cuda_values;
      j["on_cuda"] = s.on_cuda;
    }
    Json sweep = Json::array();
    for (const auto& h : s.sweep) {
      sweep.push_back({{"bottleneck", h.bottleneck},
                       {"values", h.values},
                       {"times_current", h.times_current},
                       {"when", when_name(h.when)}});
    }
    j["sweep"] = sweep;
    j["use"] = s.use;
    settings.push_back(std::move(j));
  }
  Json supports = Json::array();
  const Support defaults;
  for (const auto& f : support_flags()) {
    supports.push_back({{"name", f.name}, {"default", defaults.*(f.flag)}, {"meaning", f.meaning}});
  }
  return {{"settings", settings}, {"supports", supports}};
}

// The settings that need a CUDA device for some value, as a message names
// them: "precision=fp16, tf32, cudnn_benchmark, pin_memory, non_blocking".
inline std::string cuda_only_settings_text() {
  std::string out;
  for (const auto& s : common_settings()) {
    for (const auto& v : s.cuda_values) {
      if (!out.empty()) out += ", ";
      out += s.name();
      if (!v.is_boolean()) out += "=" + (v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
  return out;
}

}  // namespace gpusweep
