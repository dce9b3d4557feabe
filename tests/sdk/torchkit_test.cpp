// torchkit's common settings, checked on their effect rather than their flag.
#include <ATen/record_function.h>
#include <gpusweep/torchkit/diagnostics.hpp>
#include <gpusweep/torchkit/fused_adam.hpp>
#include <gpusweep/torchkit/grad_step.hpp>
#include <gpusweep/torchkit/input_pipeline.hpp>
#include <gpusweep/torchkit/seeding.hpp>
#include <gpusweep/torchkit/settings.hpp>
#include <gpusweep/torchkit/torch_workload.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <sstream>
#include <thread>
#include <type_traits>

#include <malloc.h>
#include <sys/resource.h>

using namespace gpusweep;
using namespace gpusweep::torchkit;
using Catch::Matchers::Contains;

namespace {

TrialConfig config(Json overrides) {
  Json c = {{"device", "cpu"}, {"seed", 0}, {"threads", 1}};
  for (auto& [k, v] : overrides.items()) c[k] = v;
  return TrialConfig(c);
}

std::string skip_reason(Json overrides, const Support& support = {}) {
  try {
    Settings::apply(config(std::move(overrides)), support);
  } catch (const Skipped& e) {
    return e.what();
  }
  return "";
}

Support conv_support() {
  Support s;
  s.channels_last = true;
  s.input_pipeline = true;
  s.grad_accum = true;
  return s;
}

}  // namespace

TEST_CASE("CUDA-only settings on CPU are skipped with the reason", "[torchkit]") {
  CHECK_THAT(skip_reason({{"precision", "fp16"}}),
             Contains("needs a CUDA device") && Contains("device is cpu"));
  CHECK(skip_reason({{"tf32", true}}) == "tf32 applies to CUDA float32 matmuls; device is cpu");
  CHECK_THAT(skip_reason({{"cudnn_benchmark", true}}),
             Contains("cuDNN") && Contains("device is cpu"));
  CHECK_THAT(skip_reason({{"pin_memory", true}}, conv_support()), Contains("device is cpu"));
  CHECK_THAT(skip_reason({{"non_blocking", true}}), Contains("device is cpu"));
  CHECK(skip_reason({{"cuda_graphs", true}}) ==
        "cuda_graphs captures CUDA kernels into a graph; device is cpu");
  CHECK_THAT(skip_reason({{"device", "cuda"}}), Contains("CUDA"));
}

TEST_CASE("device=cuda without a visible device says why (the build or the machine)",
          "[torchkit]") {
  if (torch::cuda::is_available()) return;  // a GPU machine: device=cuda runs
  const std::string why = skip_reason({{"device", "cuda:0"}});
#if defined(GPUSWEEP_TORCH_CUDA)
  // A CUDA build is not "built for CPU only": the machine lacks the device.
  CHECK_THAT(why, Contains("no CUDA device is visible"));
  CHECK_THAT(why, !Contains("without CUDA"));
#else
  CHECK_THAT(why, Contains("without CUDA"));
#endif
  // Defaults and what applies here do not skip.
  CHECK(skip_reason({{"precision", "bf16"}, {"tf32", false}}).empty());
  CHECK(skip_reason({{"channels_last", true}, {"loader_workers", 2}, {"grad_accum", 4}},
                    conv_support())
            .empty());
}

TEST_CASE("settings a workload cannot use are skipped, never ignored", "[torchkit]") {
  Support lstm;
  lstm.input_pipeline = true;
  lstm.grad_accum = true;
  lstm.reason = "an LSTM has no 4-D tensors";
  CHECK(skip_reason({{"channels_last", true}}, lstm) ==
        "channels_last does not apply to this workload: an LSTM has no 4-D tensors");
  Support none;
  CHECK_THAT(skip_reason({{"loader_workers", 2}}, none), Contains("no input pipeline"));
  CHECK_THAT(skip_reason({{"prefetch", 8}}, none), Contains("no input pipeline"));
  CHECK_THAT(skip_reason({{"grad_accum", 2}}, none), Contains("grad_accum"));
  // The manifest marks them.
  const auto params = common_params(16, lstm);
  bool found = false;
  for (const auto& p : params) {
    if (p.name == "channels_last") {
      found = true;
      CHECK_FALSE(p.applies);
      CHECK(p.to_json()["applies"] == false);
    }
    if (p.name == "loader_workers") CHECK(p.applies);
    CHECK(p.common);
  }
  CHECK(found);
}

TEST_CASE("the settings' table drives apply: its ranges, its apply functions, its needs",
          "[torchkit]") {
  // An apply function under a name the table lacks would never run.
  for (const auto& name : apply_function_names()) {
    INFO(name);
    CHECK(find_common_setting(name) != nullptr);
  }
  // A config not resolved against the manifest is still checked against the
  // table's ranges and values.
  CHECK_THROWS_WITH(Settings::apply(config({{"prefetch", 0}}), conv_support()),
                    Contains("prefetch") && Contains("minimum"));
  CHECK_THROWS_WITH(Settings::apply(config({{"precision", "fp8"}})), Contains("precision"));
  // A workload without autocast refuses bf16, named with its value.
  Support no_autocast;
  no_autocast.precision = false;
  no_autocast.reason = "the step is integer arithmetic";
  CHECK(skip_reason({{"precision", "bf16"}}, no_autocast) ==
        "precision=bf16 does not apply to this workload: the step is integer arithmetic");
  CHECK(skip_reason({{"precision", "fp32"}}, no_autocast).empty());
  // The table's defaults are the manifest's and an empty config's.
  const Settings s = Settings::apply(config({}), conv_support());
  for (const Param& p : common_params(/*default_batch_size=*/1, conv_support())) {
    if (p.name == "prefetch") CHECK(s.prefetch == p.default_value.get<int64_t>());
    if (p.name == "sync_every") CHECK(s.sync_every == p.default_value.get<int64_t>());
    if (p.name == "zero_grad_to_none") CHECK(s.zero_grad_to_none == p.default_value.get<bool>());
  }
}

TEST_CASE("cudnn_benchmark and non_blocking apply only where they have something to act on",
          "[torchkit]") {
  // A workload with no cuDNN op, or no per-step host-to-device
  // copy, would measure nothing and report "no difference". Its manifest
  // says they do not apply (a sweep over them is skipped with the reason).
  auto applies = [](const Support& s, const std::string& name) {
    for (const auto& p : common_params(16, s)) {
      if (p.name == name) return p.applies;
    }
    FAIL("no common setting " << name);
    return false;
  };
  Support mlp;
  mlp.reason = "an MLP on device-resident data";
  CHECK_FALSE(applies(mlp, "cudnn_benchmark"));
  CHECK_FALSE(applies(mlp, "non_blocking"));
  Support conv = conv_support();
  conv.cudnn = true;
  CHECK(applies(conv, "cudnn_benchmark"));
  CHECK(applies(conv, "non_blocking"));
  // On the CPU the device's limit is said first, for both kinds of workload.
  CHECK_THAT(skip_reason({{"cudnn_benchmark", true}}, mlp), Contains("device is cpu"));
  CHECK_THAT(skip_reason({{"non_blocking", true}}, conv), Contains("device is cpu"));
}

TEST_CASE("channels_last changes the memory format of conv weights and inputs", "[torchkit]") {
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 8, 3));
  auto s = Settings::apply(config({{"channels_last", true}}), conv_support());
  s.prepare(*conv);
  CHECK(conv->weight.is_contiguous(at::MemoryFormat::ChannelsLast));
  CHECK_FALSE(conv->weight.is_contiguous());
  const auto x = s.to_device(torch::randn({2, 3, 8, 8}));
  CHECK(x.is_contiguous(at::MemoryFormat::ChannelsLast));
  CHECK(conv->forward(x).is_contiguous(at::MemoryFormat::ChannelsLast));

  torch::nn::Conv2d plain(torch::nn::Conv2dOptions(3, 8, 3));
  auto d = Settings::apply(config({}), conv_support());
  d.prepare(*plain);
  CHECK(plain->weight.is_contiguous());
  CHECK(d.to_device(torch::randn({2, 3, 8, 8})).is_contiguous());
}

TEST_CASE("a workload's channels-last default is the manifest's and the settings' default",
          "[torchkit]") {
  auto channels_last_param = [](const Support& support) {
    for (const Param& p : common_params(/*default_batch_size=*/4, support)) {
      if (p.name == "channels_last") return p;
    }
    FAIL("no channels_last in the common parameters");
    return Param{};
  };
  Support by_default = conv_support();
  by_default.defaults["channels_last"] = true;
  CHECK(channels_last_param(by_default).default_value == Json(true));
  CHECK(channels_last_param(conv_support()).default_value == Json(false));
  // A config without the key (one not resolved against the manifest) takes
  // the workload's default; one that says false runs NCHW.
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 8, 3));
  Settings::apply(config({}), by_default).prepare(*conv);
  CHECK(conv->weight.is_contiguous(at::MemoryFormat::ChannelsLast));
  CHECK_FALSE(conv->weight.is_contiguous());
  torch::nn::Conv2d plain(torch::nn::Conv2dOptions(3, 8, 3));
  Settings::apply(config({{"channels_last", false}}), by_default).prepare(*plain);
  CHECK(plain->weight.is_contiguous());
  // Without channels-last support the default stays off whatever it says.
  Support unsupported;
  unsupported.defaults["channels_last"] = true;
  CHECK(channels_last_param(unsupported).default_value == Json(false));
  CHECK_FALSE(Settings::apply(config({}), unsupported).channels_last);
}

namespace {
// The ATen ops this thread runs while it lives, by name, counted by an
// observer: the calls themselves, not a counter kept beside them.
class OpCounter {
 public:
  OpCounter()
      : handle_(at::addThreadLocalCallback(
            at::RecordFunctionCallback(count).scopes({at::RecordScope::FUNCTION}))) {
    calls().clear();
  }
  ~OpCounter() { at::removeCallback(handle_); }
  OpCounter(const OpCounter&) = delete;
  OpCounter& operator=(const OpCounter&) = delete;
  int64_t operator[](const std::string& op) const {
    const auto it = calls().find(op);
    return it == calls().end() ? 0 : it->second;
  }

 private:
  static std::map<std::string, int64_t>& calls() {
    thread_local std::map<std::string, int64_t> counts;
    return counts;
  }
  static std::unique_ptr<at::ObserverContext> count(const at::RecordFunction& fn) {
    ++calls()[fn.name()];
    return nullptr;
  }
  at::CallbackHandle handle_;
};

// A small conv net (4-D weights, channels-last when asked) and a linear head,
// trained `steps` steps on fixed data by `opt` from seed 3's weights.
struct TinyNet {
  static torch::nn::Conv2d seeded_conv() {
    torch::manual_seed(3);
    return torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1));
  }
  torch::nn::Conv2d conv{seeded_conv()};  // first: the seed is set for both
  torch::nn::Linear head{8 * 6 * 6, 2};
  explicit TinyNet(bool channels_last) {
    if (channels_last) {
      conv->weight.set_data(conv->weight.contiguous(at::MemoryFormat::ChannelsLast));
    }
  }
  std::vector<torch::Tensor> parameters() {
    auto p = conv->parameters();
    for (auto& h : head->parameters()) p.push_back(h);
    return p;
  }
  void train(torch::optim::Optimizer& opt, int steps) {
    torch::manual_seed(11);
    const auto x = torch::randn({16, 3, 6, 6});
    const auto y = torch::randn({16, 2});
    for (int i = 0; i < steps; ++i) {
      opt.zero_grad();
      torch::mse_loss(head->forward(conv->forward(x).relu().flatten(1)), y).backward();
      opt.step();
    }
  }
  torch::Tensor flat() {
    std::vector<torch::Tensor> v;
    for (auto& p : parameters()) v.push_back(p.detach().flatten());
    return torch::cat(v);
  }
  // The parameters set from flat()'s layout.
  void load_flat(const torch::Tensor& weights) {
    torch::NoGradGuard no_grad;
    int64_t at = 0;
    for (auto& p : parameters()) {
      p.copy_(weights.slice(0, at, at + p.numel()).view_as(p));
      at += p.numel();
    }
  }
};

// How far apart two trainings from `start` ended, against how far the first
// moved: float rounding leaves well under 1% (a weight that Adam's sign-like
// step makes oscillate around zero can differ by a step's size, 1e-3, in one
// element: the thread count alone changes that); a wrong update rule or step
// count, a sizeable share.
double apart(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& start) {
  return (a - b).norm().item<double>() / (a - start).norm().item<double>();
}

// LibTorch's Adam or AdamW (by the options' type), or its fused twin.
template <typename Options>
std::unique_ptr<torch::optim::Optimizer> adam_like(bool fused,
                                                   const std::vector<torch::Tensor>& params,
                                                   const Options& o) {
  if constexpr (std::is_same_v<Options, torch::optim::AdamWOptions>) {
    if (fused) return std::make_unique<FusedAdamW>(params, o);
    return std::make_unique<torch::optim::AdamW>(params, o);
  } else {
    if (fused) return std::make_unique<FusedAdam>(params, o);
    return std::make_unique<torch::optim::Adam>(params, o);
  }
}

// An optimiser's state as a checkpoint holds it, and back.
std::string saved(const torch::optim::Optimizer& opt) {
  torch::serialize::OutputArchive archive;
  opt.save(archive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  return bytes.str();
}
void restore(torch::optim::Optimizer& opt, const std::string& bytes) {
  torch::serialize::InputArchive archive;
  std::istringstream in(bytes);
  archive.load_from(in);
  opt.load(archive);
}
}  // namespace

TEST_CASE("FusedAdam and FusedAdamW train as LibTorch's Adam and AdamW, in one kernel a step",
          "[torchkit]") {
  const bool channels_last = GENERATE(false, true);
  const bool amsgrad = GENERATE(false, true);
  INFO("channels_last " << channels_last << ", amsgrad " << amsgrad);
  const auto start = TinyNet(channels_last).flat();
  auto adam = [&](bool fused, bool decoupled) {
    TinyNet net(channels_last);
    const auto opt =
        decoupled ? adam_like(fused, net.parameters(),
                              torch::optim::AdamWOptions(1e-2).weight_decay(0.05).amsgrad(amsgrad))
                  : adam_like(fused, net.parameters(),
                              torch::optim::AdamOptions(1e-2).weight_decay(0.05).amsgrad(amsgrad));
    net.train(*opt, 40);
    // The moments keep the parameter's layout, as LibTorch's Adam keeps them.
    const auto* state = opt->state().at(net.conv->weight.unsafeGetTensorImpl()).get();
    const torch::Tensor moment =
        decoupled ? static_cast<const torch::optim::AdamWParamState*>(state)->exp_avg()
                  : static_cast<const torch::optim::AdamParamState*>(state)->exp_avg();
    CHECK(moment.strides() == net.conv->weight.strides());
    CHECK(moment.is_contiguous(at::MemoryFormat::ChannelsLast) == channels_last);
    return net.flat();
  };
  for (const bool decoupled : {false, true}) {
    INFO((decoupled ? "AdamW" : "Adam"));
    const auto reference = adam(/*fused=*/false, decoupled);
    const auto fused = adam(/*fused=*/true, decoupled);
    // They trained (40 steps of 1e-2 move the weights by 100x the tolerance
    // below on average)...
    CHECK((reference - start).abs().mean().item<double>() > 1e-2);
    // ...to the same weights, within float rounding.
    CHECK(apart(reference, fused, start) < 1e-2);
  }
  // Adam and AdamW differ here (weight decay 0.05), so the comparison above
  // can tell them apart.
  CHECK(apart(adam(true, false), adam(true, true), start) > 0.1);

  // One fused kernel call a step instead of LibTorch's pass per op.
  TinyNet net(channels_last);
  FusedAdamW opt(net.parameters(), torch::optim::AdamWOptions(1e-2).amsgrad(amsgrad));
  const OpCounter ops;
  net.train(opt, 3);
  CHECK(ops["aten::_fused_adamw_"] == 3);
  CHECK(ops["aten::addcdiv_"] == 0);
  CHECK(ops["aten::lerp_"] == 0);
}

TEST_CASE("a capturable FusedAdam counts its steps on the device and trains as LibTorch's Adam",
          "[torchkit]") {
  const auto options = torch::optim::AdamOptions(1e-2).weight_decay(0.05);
  TinyNet reference_net(false);
  const torch::Tensor start = reference_net.flat();
  torch::optim::Adam reference(reference_net.parameters(), options);
  reference_net.train(reference, 30);
  auto capturable_net = [&] {
    auto net = std::make_unique<TinyNet>(false);
    auto opt = std::make_unique<FusedAdam>(net->parameters(), options);
    opt->capturable(true);
    net->train(*opt, 30);
    return std::make_pair(std::move(net), std::move(opt));
  };
  auto [net, capturable] = capturable_net();
  INFO("apart from LibTorch's Adam: " << apart(reference_net.flat(), net->flat(), start));
  CHECK(apart(reference_net.flat(), net->flat(), start) < 1e-2);
  for (const auto& p : net->parameters()) {
    const torch::Tensor count = capturable->device_step(p);
    REQUIRE(count.defined());
    CHECK(count.device() == p.device());
    CHECK(count.item<double>() == 30.0);
  }
  // What a replayed graph needs: the step reads the device's count, not the
  // host's (which replays do not advance). Against a twin trained alike: a
  // host count gone wrong changes nothing, a device count set back changes
  // the bias correction.
  auto [twin, twin_opt] = capturable_net();
  REQUIRE(torch::equal(net->flat(), twin->flat()));
  for (auto& [key, state] : capturable->state()) {
    static_cast<torch::optim::AdamParamState&>(*state).step(1000);
  }
  net->train(*capturable, 1);
  twin->train(*twin_opt, 1);
  CHECK(torch::equal(net->flat(), twin->flat()));
  for (const auto& p : net->parameters()) capturable->device_step(p).fill_(0);
  net->train(*capturable, 1);
  twin->train(*twin_opt, 1);
  CHECK_FALSE(torch::allclose(net->flat(), twin->flat(), /*rtol=*/1e-5, /*atol=*/1e-6));
}

TEST_CASE("a checkpoint moves between LibTorch's AdamW and FusedAdamW", "[torchkit]") {
  // 20 steps in LibTorch's AdamW, saved; 20 more in each of the two after
  // loading it: the same weights, and not those of a fresh optimiser (whose
  // bias corrections start over).
  const auto options = torch::optim::AdamWOptions(1e-2);
  TinyNet first(false);
  torch::optim::AdamW plain(first.parameters(), options);
  first.train(plain, 20);
  std::string checkpoint = saved(plain);
  const auto weights = first.flat();

  auto resume = [&](bool fused, bool load) {
    TinyNet net(false);
    net.load_flat(weights);
    const auto opt = adam_like(fused, net.parameters(), options);
    if (load) restore(*opt, checkpoint);
    net.train(*opt, 20);
    return net.flat();
  };
  const auto reference = resume(/*fused=*/false, /*load=*/true);
  CHECK(torch::allclose(resume(true, true), reference, 1e-4, 1e-5));
  CHECK_FALSE(torch::allclose(resume(true, false), reference, 1e-4, 1e-5));

  // And back: FusedAdamW's checkpoint continued by LibTorch's AdamW.
  TinyNet fused_first(false);
  FusedAdamW fused(fused_first.parameters(), options);
  fused_first.train(fused, 20);
  CHECK(torch::allclose(fused_first.flat(), weights, 1e-4, 1e-5));
  checkpoint = saved(fused);
  CHECK(torch::allclose(resume(/*fused=*/false, /*load=*/true), reference, 1e-4, 1e-5));
}

TEST_CASE("FusedAdamW on CUDA trains as LibTorch's AdamW, in one kernel a step", "[torchkit]") {
  if (!torch::cuda::is_available()) {
    WARN("no CUDA device visible to LibTorch: nothing checked");
    return;
  }
  // A small MLP on cuda:0: the fused kernel needs its step tensors on the
  // parameters' device.
  auto train = [](bool fused) {
    torch::manual_seed(3);
    torch::nn::Sequential net(torch::nn::Linear(16, 32), torch::nn::ReLU(),
                              torch::nn::Linear(32, 4));
    net->to(torch::kCUDA);
    const auto opt =
        adam_like(fused, net->parameters(), torch::optim::AdamWOptions(1e-2).weight_decay(0.05));
    torch::manual_seed(11);
    const auto x = torch::randn({64, 16}).to(torch::kCUDA);
    const auto y = torch::randn({64, 4}).to(torch::kCUDA);
    const OpCounter ops;
    for (int i = 0; i < 30; ++i) {
      opt->zero_grad();
      torch::mse_loss(net->forward(x), y).backward();
      opt->step();
    }
    std::vector<torch::Tensor> flat;
    for (auto& p : net->parameters()) flat.push_back(p.detach().flatten().cpu());
    return std::make_pair(torch::cat(flat), ops["aten::_fused_adamw_"]);
  };
  const auto [reference, reference_calls] = train(false);
  const auto [fused, fused_calls] = train(true);
  CHECK(reference_calls == 0);
  CHECK(fused_calls == 30);
  CHECK(torch::allclose(fused, reference, 1e-4, 1e-5));
}

TEST_CASE(
    "FusedAdam falls back to LibTorch's step for moments in another layout than their "
    "parameter",
    "[torchkit]") {
  // Moments laid out NCHW beside a channels-last weight (as a checkpoint of
  // the other layout would load them): the fused kernels, which walk all of
  // them by one index, would mix elements up; LibTorch's step does not.
  auto train = [](bool fused) {
    TinyNet net(/*channels_last=*/true);
    const auto opt = adam_like(fused, net.parameters(), torch::optim::AdamOptions(1e-2));
    net.train(*opt, 1);
    auto& state = static_cast<torch::optim::AdamParamState&>(
        *opt->state().at(net.conv->weight.unsafeGetTensorImpl()));
    state.exp_avg(state.exp_avg().contiguous());
    state.exp_avg_sq(state.exp_avg_sq().contiguous());
    const OpCounter ops;
    net.train(*opt, 20);
    return std::make_pair(net.flat(), ops["aten::_fused_adam_"]);
  };
  const auto [reference, reference_calls] = train(false);
  const auto [fused, fused_calls] = train(true);
  CHECK(reference_calls == 0);
  CHECK(fused_calls == 0);  // every step fell back
  CHECK(torch::allclose(fused, reference, 1e-4, 1e-5));
}

TEST_CASE("bf16 on CPU runs the forward pass in bfloat16", "[torchkit]") {
  torch::nn::Linear fc(4, 3);
  auto s = Settings::apply(config({{"precision", "bf16"}}));
  const auto x = torch::randn({2, 4});
  {
    AutocastScope scope(s);
    CHECK(fc->forward(x).scalar_type() == torch::kBFloat16);
  }
  CHECK(fc->forward(x).scalar_type() == torch::kFloat);  // the scope ended
  auto f = Settings::apply(config({{"precision", "fp32"}}));
  AutocastScope none(f);
  CHECK(fc->forward(x).scalar_type() == torch::kFloat);
}

TEST_CASE("grad_accum=4 is one optimiser step with the gradient of a 4x batch", "[torchkit]") {
  torch::manual_seed(1);
  const auto x = torch::randn({32, 5});
  const auto y = torch::randn({32, 1});
  auto train = [&](int64_t accum) {
    torch::manual_seed(7);
    torch::nn::Linear model(5, 1);
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.5));
    auto s = Settings::apply(config({{"grad_accum", accum}}), conv_support());
    GradStep step(s, opt);
    const int64_t micro = 32 / accum;
    for (int64_t m = 0; m < accum; ++m) {
      const auto xs = x.slice(0, m * micro, (m + 1) * micro);
      const auto ys = y.slice(0, m * micro, (m + 1) * micro);
      step.backward(torch::mse_loss(model->forward(xs), ys));
      // No optimiser step inside the accumulation.
      CHECK(step.optimizer_steps() == 0);
    }
    CHECK(step.step());
    CHECK(step.optimizer_steps() == 1);
    CHECK(step.micro_batches() == accum);
    CHECK_FALSE(model->weight.grad().defined());  // zero_grad_to_none
    return model->weight.detach().clone();
  };
  const auto whole = train(1);
  const auto accumulated = train(4);
  CHECK(torch::allclose(whole, accumulated, /*rtol=*/1e-5, /*atol=*/1e-6));
}

TEST_CASE("GradStep's stats say how many backward passes its steps ran", "[torchkit]") {
  // What plugins --check reads to see grad_accum act: a step that runs one
  // backward where grad_accum asks for two shows 1.
  torch::nn::Linear model(2, 1);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  auto s = Settings::apply(config({{"grad_accum", 2}}), conv_support());
  const auto x = torch::ones({4, 2});
  {
    GradStep step(s, opt);
    CHECK(GradStep::step_stats(s).empty());  // before a step
    for (int i = 0; i < 3; ++i) {
      for (int m = 0; m < 2; ++m) step.backward(model->forward(x).sum());
      step.step();
    }
    CHECK(GradStep::step_stats(s).at("backward_passes_per_step") == 2);
  }
  GradStep once(s, opt);
  once.backward(model->forward(x).sum());
  once.step();
  CHECK(GradStep::step_stats(s).at("backward_passes_per_step") == 1);
}

TEST_CASE("sync_every=k reads the loss back once per k steps", "[torchkit]") {
  struct Probe : TorchWorkload {
    explicit Probe(const TrialConfig& c) : TorchWorkload(c) {}
    StepResult step() override {
      observe_loss(torch::full({1}, static_cast<double>(++steps)));
      return {1, 0};
    }
    int steps = 0;
  };
  for (int64_t k : {1, 3, 5, 0}) {
    Probe p(config({{"sync_every", k}}));
    // Device-to-host reads of a scalar: what .item() does, and what waits for
    // the device on CUDA.
    int64_t scalar_reads = 0;
    {
      const OpCounter ops;
      for (int i = 0; i < 12; ++i) p.step();
      scalar_reads = ops["aten::_local_scalar_dense"];
    }
    INFO("sync_every=" << k);
    CHECK(scalar_reads == (k == 0 ? 0 : 12 / k));
    // The loss read is the one of the last step that read it: 12, 12, 10.
    if (k > 0) CHECK(p.stats().at("last_loss") == Approx(static_cast<double>(12 / k * k)));
  }
}

TEST_CASE("the input pipeline delivers the same batches in order with any worker count",
          "[torchkit][pipeline]") {
  auto producer = [](int64_t index, std::mt19937_64& rng) {
    return Batch{torch::full({2}, static_cast<double>(index)),
                 torch::full({1}, static_cast<double>(rng() % 1000))};
  };
  std::vector<std::pair<double, double>> reference;
  for (int64_t workers : {0, 1, 3}) {
    auto s =
        Settings::apply(config({{"loader_workers", workers}, {"prefetch", 2}}), conv_support());
    InputPipeline pipeline(s, producer);
    std::vector<std::pair<double, double>> got;
    for (int i = 0; i < 10; ++i) {
      auto b = pipeline.next();
      got.emplace_back(b[0][0].item<double>(), b[1][0].item<double>());
    }
    for (int i = 0; i < 10; ++i) CHECK(got[i].first == i);
    if (reference.empty()) reference = got;
    CHECK(got == reference);
    CHECK(pipeline.batches() == 10);
  }
}

TEST_CASE("background workers hide the producer's time from the step", "[torchkit][pipeline]") {
  auto slow = [](int64_t, std::mt19937_64&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return Batch{torch::zeros({1})};
  };
  auto waited = [&](int64_t workers) {
    auto s =
        Settings::apply(config({{"loader_workers", workers}, {"prefetch", 4}}), conv_support());
    InputPipeline pipeline(s, slow);
    for (int i = 0; i < 8; ++i) {
      pipeline.next();
      std::this_thread::sleep_for(std::chrono::milliseconds(15));  // the "step"
    }
    return pipeline.wait_seconds();
  };
  const double inline_wait = waited(0);
  const double worker_wait = waited(2);
  CHECK(inline_wait >= 0.08);            // 8 batches x 10 ms, all in the step
  CHECK(worker_wait < inline_wait / 2);  // produced while the step ran
}

TEST_CASE("a paused input pipeline builds no batch until it resumes, then goes on in order",
          "[torchkit][pipeline]") {
  std::atomic<int> built{0};
  auto counted = [&](int64_t index, std::mt19937_64&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ++built;
    return Batch{torch::full({1}, static_cast<double>(index))};
  };
  auto s = Settings::apply(config({{"loader_workers", 2}, {"prefetch", 64}}), conv_support());
  InputPipeline pipeline(s, counted);
  CHECK(pipeline.next()[0].item<double>() == 0);
  // Unpaused, the loaders fill their queues meanwhile (2 x 64 batches).
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const int running = built.load();
  CHECK(running > 4);
  pipeline.pause();  // returns once no batch is being built
  const int at_pause = built.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  CHECK(built.load() == at_pause);
  pipeline.resume();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK(built.load() > at_pause);
  for (int i = 1; i < 6; ++i) CHECK(pipeline.next()[0].item<double>() == i);
}

TEST_CASE("a batch still being built at a pause is built again after it, not served free",
          "[torchkit][pipeline]") {
  // An input-bound trial: a batch takes 150 ms. Taking turns, a build in
  // flight when the turn ends would otherwise finish in the pause and be
  // waiting for the next block, at no cost to it.
  auto slow = [](int64_t index, std::mt19937_64&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    return Batch{torch::full({1}, static_cast<double>(index))};
  };
  auto s = Settings::apply(config({{"loader_workers", 1}, {"prefetch", 1}}), conv_support());
  InputPipeline pipeline(s, slow);
  CHECK(pipeline.next()[0].item<double>() == 0);  // batch 1 starts building now
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  pipeline.pause();  // batch 1 finishes in here, and is thrown away
  CHECK(pipeline.discarded_batches() == 1);
  pipeline.resume();
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(pipeline.next()[0].item<double>() == 1);  // the same batch, built in this turn
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(waited >= 0.1);
  CHECK(pipeline.next()[0].item<double>() == 2);
}

TEST_CASE("a producer's exception reaches the step", "[torchkit][pipeline]") {
  auto s = Settings::apply(config({{"loader_workers", 1}}), conv_support());
  InputPipeline pipeline(s, [](int64_t index, std::mt19937_64&) -> Batch {
    if (index == 2) throw std::runtime_error("bad sample");
    return Batch{torch::zeros({1})};
  });
  pipeline.next();
  pipeline.next();
  CHECK_THROWS_WITH(pipeline.next(), "bad sample");
}

// Mostly for scripts/tsan.sh: pausing, resuming and destroying a pipeline
// while its loaders are busy, many times over, keeps the batches in order.
TEST_CASE("pause, resume and shutdown with busy loaders keep the batches in order",
          "[torchkit][pipeline]") {
  auto producer = [](int64_t index, std::mt19937_64&) {
    return Batch{torch::full({4}, static_cast<double>(index))};
  };
  for (int round = 0; round < 20; ++round) {
    auto s = Settings::apply(
        config({{"loader_workers", 1 + round % 3}, {"prefetch", 1 + round % 4}}), conv_support());
    InputPipeline pipeline(s, producer);
    int64_t expect = 0;
    for (int k = 0; k < 3; ++k) {
      CHECK(pipeline.next()[0][0].item<double>() == static_cast<double>(expect++));
      pipeline.pause();
      if (round % 2 == 1) pipeline.pause();  // pausing twice is one pause
      pipeline.resume();
      CHECK(pipeline.next()[0][3].item<double>() == static_cast<double>(expect++));
    }
    // Destroyed here with the loaders building ahead.
  }
}

TEST_CASE("keep_freed_memory reuses freed tensor memory instead of faulting fresh pages",
          "[torchkit]") {
  Settings::apply(config({{"keep_freed_memory", true}}));
  auto minor_faults = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
  };
  // 64 MiB, above glibc's largest mmap threshold: with its defaults every
  // allocation would be a fresh mapping of 16384 zeroed pages.
  constexpr int64_t kFloats = 16 << 20;
  // Warm up as a trial does: the heap settles after a few allocations (freed
  // blocks sit behind later small ones, and LibTorch 2.x's 64-byte aligned
  // requests need a little more than a freed block of the same size; with
  // LibTorch 2.15 four allocations still grew the heap, five did not).
  for (int i = 0; i < 8; ++i) auto warm = torch::ones({kFloats});
  const long before = minor_faults();
  for (int i = 0; i < 5; ++i) {
    auto t = torch::ones({kFloats});
    REQUIRE(t[kFloats - 1].item<float>() == 1.0f);
  }
  const long faults = minor_faults() - before;
  INFO("minor page faults over five 64 MiB allocations: " << faults);
  CHECK(faults < 16384);  // less than one allocation's worth of fresh pages in all
}

TEST_CASE("DeviceTimer on the CPU adds up the spans it was given and not the time between them",
          "[torchkit]") {
  gpusweep::torchkit::DeviceTimer timer(torch::kCPU);
  auto busy = [](double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  timer.start();
  busy(0.02);
  timer.stop();
  busy(0.3);  // between spans: not counted
  timer.start();
  busy(0.02);
  timer.stop();
  CHECK(timer.spans() == 2);
  CHECK(timer.total_seconds() >= 0.04);
  CHECK(timer.total_seconds() < 0.3);
}

TEST_CASE("the phase timers are off until the phase-timer extension switches them on",
          "[torchkit]") {
  auto timed_forward = [] {
    PhaseTimer t(Phase::forward, torch::kCPU);
    torch::mm(torch::ones({64, 64}), torch::ones({64, 64}));
  };
  timed_forward();
  CHECK(phase_stats().empty());
  const auto* timers = static_cast<const gpusweep_ext_phase_timers*>(
      TorchWorkload::extension(GPUSWEEP_EXT_PHASE_TIMERS));
  REQUIRE(timers != nullptr);
  timers->enable();
  timed_forward();
  const Metrics stats = phase_stats();
  REQUIRE(stats.count("phase_forward_s") == 1);
  CHECK(stats.at("phase_forward_s") > 0);
  CHECK(TorchWorkload::extension("gpusweep.no_such_thing/1") == nullptr);
}

TEST_CASE("the matmul-probe extension measures this process's matmul peak", "[torchkit]") {
  const auto* probe = static_cast<const gpusweep_ext_matmul_probe*>(
      TorchWorkload::extension(GPUSWEEP_EXT_MATMUL_PROBE));
  REQUIRE(probe != nullptr);
  const char* text = nullptr;
  REQUIRE(probe->measure(0.05, &text) == GPUSWEEP_STATUS_OK);
  const Json result = Json::parse(text);
  REQUIRE(result.is_array());
  CHECK(result.at(0).at("device") == "cpu");
  CHECK(result.at(0).at("gflops").get<double>() > 0);
  // In a trial's process the probe multiplies in the dtype the trial's
  // autocast does: a bf16 trial's peak is bf16's, not float32's.
  for (const auto& [precision, dtype] : {std::pair<const char*, const char*>{"bf16", "bfloat16"},
                                         std::pair<const char*, const char*>{"fp32", "float32"}}) {
    note_trial_settings(Settings::apply(
        TrialConfig(Json{{"device", "cpu"}, {"precision", precision}, {"threads", 1}})));
    REQUIRE(probe->measure(0.02, &text) == GPUSWEEP_STATUS_OK);
    CHECK(Json::parse(text).at(0).at("dtype") == dtype);
  }
}

TEST_CASE("seeded streams: the same seed and stream repeat, another stream differs", "[torchkit]") {
  CHECK(derive_seed(7, 1) == derive_seed(7, 1));
  CHECK(derive_seed(7, 1) != derive_seed(7, 2));
  CHECK(derive_seed(0, 0) != derive_seed(1, 0));
  auto draws = [](uint64_t seed) {
    torch::Generator g = make_generator(torch::kCPU, seed);
    return torch::randn({8}, g);
  };
  CHECK(torch::equal(draws(derive_seed(3, 0)), draws(derive_seed(3, 0))));
  CHECK_FALSE(torch::equal(draws(derive_seed(3, 0)), draws(derive_seed(3, 1))));
}

TEST_CASE("the peak memory starts over at reset: a setup allocation stays out of the window",
          "[torchkit]") {
  // glibc's own mode (what keep_freed_memory=false leaves): a test before this
  // one in the binary may have applied keep_freed_memory, which a worker
  // applies once for its process and which keeps freed blocks resident (the
  // setup's too, then in the window's resident peak, as resident they are).
  mallopt(M_MMAP_MAX, 65536);
  mallopt(M_TRIM_THRESHOLD, 128 * 1024);
  mallopt(M_TOP_PAD, 0);
  malloc_trim(0);
  {
    // 256 MiB touched and freed before the window, as setup's data would be.
    torch::Tensor setup = torch::ones({64, 1024, 1024});
    CHECK(setup.sum().item<double>() > 0);
  }
  const double before = peak_memory_bytes(torch::kCPU);
  reset_peak_memory(torch::kCPU);
  torch::Tensor step = torch::ones({1024, 1024});  // 4 MiB in the window
  CHECK(step.sum().item<double>() > 0);
  const double window = peak_memory_bytes(torch::kCPU);
  INFO("peak before the reset " << before << ", in the window " << window);
  CHECK(window < before - 200.0 * (1 << 20));
}

// Batches built before training starts, or while an evaluation
// runs, would serve the next measured steps from a backlog.
TEST_CASE("the loaders build nothing before the first batch is asked for", "[torchkit][pipeline]") {
  std::atomic<int> built{0};
  auto counted = [&](int64_t index, std::mt19937_64&) {
    ++built;
    return Batch{torch::full({1}, static_cast<double>(index))};
  };
  auto s = Settings::apply(config({{"loader_workers", 4}, {"prefetch", 2}}), conv_support());
  InputPipeline pipeline(s, counted);
  std::this_thread::sleep_for(std::chrono::milliseconds(80));  // "setup"
  CHECK(built.load() == 0);
  CHECK(pipeline.next()[0].item<double>() == 0);
  for (int i = 0; i < 200 && built.load() < 8; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(built.load() >= 8);  // then they fill their queues (4 x 2) as before
}

namespace {
// A workload whose only work is taking batches from its pipeline.
class PipelineWorkload : public TorchWorkload {
 public:
  PipelineWorkload(const TrialConfig& c, InputPipeline::Producer producer)
      : TorchWorkload(c, conv_support()), pipeline_(settings_, std::move(producer)) {
    track(pipeline_);
  }
  StepResult step() override {
    pipeline_.next();
    return {1};
  }

 private:
  InputPipeline pipeline_;
};
}  // namespace

TEST_CASE("between measured windows (an evaluation) the loaders build nothing",
          "[torchkit][pipeline]") {
  std::atomic<int> built{0};
  auto counted = [&](int64_t index, std::mt19937_64&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ++built;
    return Batch{torch::full({1}, static_cast<double>(index))};
  };
  PipelineWorkload w(config({{"loader_workers", 2}, {"prefetch", 16}}), counted);
  w.step();  // warmup
  w.begin_measurement();
  w.step();
  w.end_measurement();  // an evaluation follows
  const int at_end = built.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  CHECK(built.load() == at_end);
  w.begin_measurement();
  for (int i = 0; i < 200 && built.load() == at_end; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(built.load() > at_end);
}

TEST_CASE("a memory cap on a CUDA device is a share of it, and a CPU trial is left to the host",
          "[torchkit]") {
  // What CUDA's caching allocator is given: the cap as a share of the device.
  const double gib = 1ULL << 30;
  auto cap = plan_device_memory_cap(2 * gib, 40 * gib);
  CHECK(cap.fraction == Approx(0.05));
  CHECK(cap.limit_bytes == Approx(2 * gib));
  // A cap above the device is the whole device, not a fraction over 1.
  cap = plan_device_memory_cap(80 * gib, 40 * gib);
  CHECK(cap.fraction == 1.0);
  CHECK(cap.limit_bytes == 40 * gib);
  CHECK_THROWS_AS(plan_device_memory_cap(0, 40 * gib), std::invalid_argument);
  CHECK_THROWS_AS(plan_device_memory_cap(gib, 0), std::invalid_argument);

  // Through the ABI: a CPU trial (and a cuda one where no GPU is visible,
  // which create() then skips) answers SKIPPED, so that the worker caps the
  // address space instead.
  const auto* ext =
      static_cast<const gpusweep_ext_device_memory_cap*>(extension(GPUSWEEP_EXT_DEVICE_MEMORY_CAP));
  REQUIRE(ext != nullptr);
  CHECK(ext->struct_size == sizeof(gpusweep_ext_device_memory_cap));
  const char* result = nullptr;
  CHECK(ext->cap(R"({"device": "cpu"})", gib, &result) == GPUSWEEP_STATUS_SKIPPED);
  if (!torch::cuda::is_available()) {
    CHECK(ext->cap(R"({"device": "cuda"})", gib, &result) == GPUSWEEP_STATUS_SKIPPED);
  }
}

TEST_CASE("a GPU's UUID is written as NVML and CUDA_VISIBLE_DEVICES write it", "[torchkit]") {
  unsigned char bytes[16];
  for (int i = 0; i < 16; ++i) bytes[i] = static_cast<unsigned char>(i == 15 ? 0xef : i);
  CHECK(gpu_uuid(bytes) == "GPU-00010203-0405-0607-0809-0a0b0c0d0eef");
}

TEST_CASE("on the CPU no batch is copied, so no transfer time is reported", "[torchkit]") {
  TransferTimes transfers(torch::kCPU);
  const auto t = transfers.time([] { return torch::ones({4}); });
  CHECK(t.sum().item<float>() == 4);
  Metrics m;
  transfers.add_stats(m, 1);
  CHECK(m.count("host_to_device_s_per_step") == 0);
}

namespace {
void busy(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
  }
}
}  // namespace

// transfer_time once counted warmup's copies (the first, slowest ones)
// with the measured steps'. The host clock stands in for CUDA's events here.
TEST_CASE("transfer time counts the copies in the measured windows, not warmup's or an eval's",
          "[torchkit]") {
  TransferTimes transfers(torch::kCPU, /*time_on_cpu=*/true);
  auto copy = [&](double seconds) {
    return transfers.time([&] {
      busy(seconds);
      return seconds;
    });
  };
  end_measured_window();                  // none open, whatever ran before in this process
  for (int i = 0; i < 3; ++i) copy(0.1);  // warmup
  begin_measured_window();
  copy(0.01);
  copy(0.01);
  end_measured_window();
  copy(0.1);  // an evaluation's
  begin_measured_window();
  copy(0.01);
  end_measured_window();
  Metrics m;
  transfers.add_stats(m, /*copies_per_step=*/2);
  CHECK(m.at("host_to_device_copies") == 3);
  CHECK(m.at("host_to_device_s") >= 0.03);
  CHECK(m.at("host_to_device_s") < 0.2);  // warmup's and the evaluation's 0.4 s are out
  CHECK(m.at("host_to_device_s_per_step") == Approx(m.at("host_to_device_s") / 3 * 2));
}

TEST_CASE("channels_last converts a batch's layout after its copy, outside the timed copy",
          "[torchkit]") {
  const auto s = Settings::apply(config({{"channels_last", true}}), conv_support());
  const auto copied = s.copy_to_device(torch::randn({2, 3, 8, 8}));
  CHECK(copied.is_contiguous());
  CHECK_FALSE(copied.is_contiguous(at::MemoryFormat::ChannelsLast));
  CHECK(s.to_layout(copied).is_contiguous(at::MemoryFormat::ChannelsLast));
  CHECK(s.to_layout(torch::randn({2, 3})).is_contiguous());
  // The pipeline's batches still arrive channels-last.
  InputPipeline pipeline(s, [](int64_t, std::mt19937_64&) {
    return Batch{torch::randn({2, 3, 8, 8}), torch::randn({2})};
  });
  const Batch batch = pipeline.next_on_device();
  CHECK(batch[0].is_contiguous(at::MemoryFormat::ChannelsLast));
  CHECK_FALSE(batch[0].is_contiguous());
}

TEST_CASE("without a gradient scaler (the CPU, fp32) no loss scale nor reserved peak is reported",
          "[torchkit]") {
  torch::nn::Linear model(2, 1);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  PipelineWorkload w(config({}), [](int64_t, std::mt19937_64&) { return Batch{torch::ones({1})}; });
  GradStep grad(w.settings(), opt);
  CHECK_FALSE(grad.scaling());
  CHECK(grad.loss_scale() == 1);
  CHECK(GradStep::scaler_stats(w.settings()).empty());
  const Metrics m = w.stats();
  CHECK(m.count("loss_scale") == 0);
  CHECK(m.count("scaler_skipped_steps") == 0);
  CHECK(m.count("peak_reserved_bytes") == 0);
  CHECK(m.count("peak_memory_bytes") == 1);
}

// On a GPU (here it returns at once without one): a gradient that overflows
// at the scale skips the step and halves the scale, and the workload's
// stats report both from its settings alone.
TEST_CASE("fp16 on CUDA: the scaler's backoff and skipped steps reach the stats", "[torchkit]") {
  if (!torch::cuda::is_available()) {
    WARN("no CUDA device visible to LibTorch: nothing checked");
    return;
  }
  const auto s = Settings::apply(config({{"device", "cuda"}, {"precision", "fp16"}}));
  torch::nn::Linear model(4, 1);
  model->to(s.device);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  GradStep grad(s, opt);
  REQUIRE(grad.scaling());
  const auto x = torch::ones({8, 4}, torch::TensorOptions().device(s.device));
  grad.backward(model->forward(x).sum() * 1e35);  // times 65536: not finite
  CHECK_FALSE(grad.step());
  grad.backward(model->forward(x).sum());
  CHECK(grad.step());
  const Metrics m = GradStep::scaler_stats(s);
  CHECK(m.at("loss_scale") == 32768);
  CHECK(m.at("scaler_skipped_steps") == 1);
  const auto other = Settings::apply(config({{"device", "cuda"}, {"precision", "fp16"}}));
  CHECK(GradStep::scaler_stats(other).empty());  // another workload's settings
}

TEST_CASE("the device's busy time counts overlapping activity once, and none on the CPU",
          "[torchkit]") {
  using gpusweep::torchkit::DeviceBusyProbe;
  using gpusweep::torchkit::union_length;
  // Kernels on two streams overlapping, a copy after a gap, an empty span,
  // out of order: busy 0-40 and 50-60.
  CHECK(union_length({{50, 60}, {0, 30}, {10, 40}, {20, 25}, {45, 45}}) == 50);
  CHECK(union_length({}) == 0);
  CHECK(union_length({{0, 10}, {10, 20}}) == 20);  // back to back: no gap, no double count
  // The CPU keeps no activity records: nothing starts, nothing is reported
  // (the worker then runs no extra steps).
  DeviceBusyProbe probe(torch::Device(torch::kCPU));
  CHECK_FALSE(probe.start());
  CHECK_FALSE(probe.stop());
}
