// torchkit's StepGraph (the cuda_graphs setting) on the CPU: the dry run that
// refuses a step reading a host value, the static inputs, and the eager
// step left as it is when graphs are off. tests/gpu/cuda_graphs_test.sh
// checks capture and replay on a GPU.
#include <gpusweep/torchkit/diagnostics.hpp>
#include <gpusweep/torchkit/fused_adam.hpp>
#include <gpusweep/torchkit/grad_step.hpp>
#include <gpusweep/torchkit/settings.hpp>
#include <gpusweep/torchkit/step_graph.hpp>

#include <catch2/catch.hpp>

#include <limits>
#include <memory>
#include <string>
#include <vector>

using namespace gpusweep;
using namespace gpusweep::torchkit;
using Catch::Matchers::Contains;

namespace {

Settings cpu_settings(bool graphs) {
  Settings s = Settings::apply(TrialConfig(Json{{"device", "cpu"}, {"seed", 0}, {"threads", 1}}));
  s.cuda_graphs = graphs;  // as on a GPU, where apply lets it through
  return s;
}

std::string refusal(StepGraph& g, const std::function<void()>& step) {
  try {
    g.run(step);
  } catch (const Skipped& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a graphed step that reads a device value on the host is refused by its dry run",
          "[torchkit]") {
  const Settings s = cpu_settings(true);
  int calls = 0;
  // The loss read inside the step, as observe_loss would make it there.
  StepGraph reading(s, "the probe's update");
  const std::string why = refusal(reading, [&] {
    ++calls;
    const torch::Tensor loss = torch::ones({1}) * 2;
    PhaseTimer sync(Phase::host_sync, s.device);
    (void)loss.item<double>();
  });
  CHECK_THAT(why, Contains("the probe's update reads a device value on the host") &&
                      Contains("1 host sync(s) in a dry run"));
  CHECK(calls == 1);  // the dry run ran the step once, eagerly
  // A step without one passes the dry run; the CPU then refuses capture.
  StepGraph clean(s, "the probe's update");
  const std::string cpu = refusal(clean, [&] { ++calls; });
  CHECK(cpu == "cuda_graphs captures CUDA kernels; device is cpu");
  CHECK(calls == 2);
  // Reads after the step (observe_loss's place) are not the step's.
  HostSyncCount outside;
  { PhaseTimer sync(Phase::host_sync, s.device); }
  CHECK(outside.count() == 1);
}

TEST_CASE("with cuda_graphs off a step runs as it is, every call, and its inputs are its own",
          "[torchkit]") {
  const Settings s = cpu_settings(false);
  StepGraph g(s, "the step");
  int calls = 0;
  for (int i = 0; i < 6; ++i) {
    g.run([&] {
      ++calls;
      PhaseTimer sync(Phase::host_sync, s.device);  // allowed: nothing is captured
    });
  }
  CHECK(calls == 6);
  CHECK_FALSE(g.captured());
  CHECK(StepGraph::stats_for(s).empty());
  const torch::Tensor batch = torch::arange(4.0);
  CHECK(g.input(0, batch).data_ptr() == batch.data_ptr());  // no copy
}

TEST_CASE("a graphed step's inputs are static tensors the batches are copied into", "[torchkit]") {
  const Settings s = cpu_settings(true);
  StepGraph g(s, "the step");
  const torch::Tensor first = g.input(0, torch::arange(4.0));
  const torch::Tensor second = g.input(0, torch::arange(4.0) * 10);
  const torch::Tensor labels = g.input(1, torch::tensor({1, 0}, torch::kLong));
  // The same storage each step (what a captured graph reads), holding the
  // newest batch; another slot is another tensor.
  CHECK(second.data_ptr() == first.data_ptr());
  CHECK(first[3].item<double>() == 30.0);
  CHECK(labels.data_ptr() != first.data_ptr());
  CHECK(labels[0].item<int64_t>() == 1);
  // A batch of another shape or dtype cannot be replayed.
  try {
    g.input(0, torch::arange(5.0));
    FAIL("a changed shape was taken");
  } catch (const Skipped& e) {
    CHECK_THAT(std::string(e.what()), Contains("input 0 changed from [4] Float to [5] Float"));
  }
  CHECK_THROWS_AS(g.input(1, torch::tensor({1, 0}, torch::kInt)), Skipped);
}

TEST_CASE("what a captured step counted on the host, each replay counts again, per optimiser",
          "[torchkit]") {
  const Settings s = cpu_settings(false);
  // Two optimisers stepped in one captured region, one of them twice (marl's
  // critic minibatches and actor update): a replay is two critic steps and
  // one actor step, not one step of each.
  torch::Tensor wa = torch::ones({2}, torch::requires_grad());
  torch::Tensor wc = torch::ones({2}, torch::requires_grad());
  torch::optim::SGD actor_opt({wa}, torch::optim::SGDOptions(0.1));
  torch::optim::SGD critic_opt({wc}, torch::optim::SGDOptions(0.1));
  GradStep actor(s, actor_opt);
  GradStep critic(s, critic_opt);
  auto update = [&] {
    for (int i = 0; i < 2; ++i) {
      critic.backward(wc.sum());
      critic.step();
    }
    actor.backward(wa.sum());
    actor.step();
  };
  update();  // eager: counted by the host, nothing recorded
  ReplayHooks hooks;
  {
    ReplayHooks::Recording capture(hooks);
    update();  // the capture: counted once, and recorded
  }
  CHECK(hooks.size() == 6);  // a backward and a step, three times
  update();                  // eager again: nothing recorded now
  CHECK(hooks.size() == 6);
  for (int replay = 0; replay < 3; ++replay) hooks.run();
  CHECK(critic.optimizer_steps() == 2 * (3 + 3));
  CHECK(critic.micro_batches() == 2 * (3 + 3));
  CHECK(actor.optimizer_steps() == 3 + 3);
  CHECK(actor.micro_batches() == 3 + 3);
}

TEST_CASE("fp16 under cuda_graphs: the scaler's check stays on the device and skips an overflow",
          "[torchkit]") {
  // The device-side scaler's ops run on the CPU too: fp16 is set by hand,
  // as on a GPU (the table keeps fp16 to CUDA).
  Settings s = cpu_settings(true);
  s.precision = Precision::fp16;
  const Settings plain = cpu_settings(true);  // fp32: no scaler, the reference
  auto make = [](torch::Tensor& w, std::unique_ptr<FusedAdam>& opt) {
    w = torch::linspace(-1, 1, 6).requires_grad_();
    opt =
        std::make_unique<FusedAdam>(std::vector<torch::Tensor>{w}, torch::optim::AdamOptions(0.1));
    opt->capturable(true);
  };
  torch::Tensor w, ref_w;
  std::unique_ptr<FusedAdam> opt, ref_opt;
  make(w, opt);
  make(ref_w, ref_opt);
  GradStep scaled(s, *opt);
  GradStep reference(plain, *ref_opt);
  const torch::Tensor x = torch::arange(1.0, 7.0);
  auto loss_of = [&](const torch::Tensor& weights, double poison) {
    return ((weights * x).pow(2).sum() * 0.01 + weights.sum() * poison);
  };
  HostSyncCount syncs;
  for (int i = 0; i < 3; ++i) {
    scaled.backward(loss_of(w, 0));
    scaled.step();
    reference.backward(loss_of(ref_w, 0));
    reference.step();
  }
  // An overflowed gradient: the update, the moments and the step count are
  // left as they were; the scale halves; no host read decided it.
  const torch::Tensor before = w.detach().clone();
  const auto& state =
      static_cast<const torch::optim::AdamParamState&>(*opt->state().at(w.unsafeGetTensorImpl()));
  const torch::Tensor moment = state.exp_avg().clone();
  scaled.backward(loss_of(w, std::numeric_limits<double>::infinity()));
  scaled.step();
  CHECK(syncs.count() == 0);
  CHECK(torch::equal(w.detach(), before));
  CHECK(torch::equal(state.exp_avg(), moment));
  CHECK(opt->device_step(w).item<double>() == 3.0);
  CHECK(scaled.loss_scale() == 32768.0);
  CHECK(scaled.skipped_steps() == 1);
  CHECK(scaled.optimizer_steps() == 3);
  // Then it trains on as the unscaled reference does (the scale is a power
  // of two: unscaling is exact).
  for (int i = 0; i < 3; ++i) {
    scaled.backward(loss_of(w, 0));
    scaled.step();
    reference.backward(loss_of(ref_w, 0));
    reference.step();
  }
  CHECK(torch::allclose(w.detach(), ref_w.detach(), /*rtol=*/1e-6, /*atol=*/1e-7));
  CHECK(opt->device_step(w).item<double>() == 6.0);
  CHECK(scaled.optimizer_steps() == 6);
  CHECK(GradStep::scaler_stats(s).at("scaler_skipped_steps") == 1.0);
}

TEST_CASE("fp16 under cuda_graphs refuses an optimiser whose kernels cannot skip on the device",
          "[torchkit]") {
  Settings s = cpu_settings(true);
  s.precision = Precision::fp16;
  torch::Tensor w = torch::ones({2}, torch::requires_grad());
  torch::optim::Adam libtorch({w}, torch::optim::AdamOptions(0.1));
  FusedAdam host_counted({w}, torch::optim::AdamOptions(0.1));  // not capturable
  for (torch::optim::Optimizer* o :
       std::vector<torch::optim::Optimizer*>{&libtorch, &host_counted}) {
    try {
      GradStep g(s, *o);
      FAIL("an optimiser that counts on the host was taken");
    } catch (const Skipped& e) {
      CHECK_THAT(std::string(e.what()), Contains("FusedAdam or FusedAdamW, capturable"));
    }
  }
}

TEST_CASE("measured blocks under cuda_graphs start only once every step that ran is captured",
          "[torchkit]") {
  // Graphs off: nothing to check.
  const Settings off = cpu_settings(false);
  CHECK_NOTHROW(StepGraph::check_captured(off));
  CHECK(StepGraph::pool_bytes_for(off) == 0);
  // Graphs on and no step run yet (warmup_steps 0, or a workload that
  // captures nothing): refused, rather than measuring eager steps.
  const Settings s = cpu_settings(true);
  StepGraph g(s, "the probe's update");
  try {
    StepGraph::check_captured(s);
    FAIL("measured without a captured step");
  } catch (const Skipped& e) {
    CHECK_THAT(e.what(), Contains("no step of this workload was captured") &&
                             Contains("measure.warmup_steps to at least 4"));
  }
  // A step that ran but is not captured yet (here the CPU stops it at its
  // dry run; on a GPU, warmup shorter than the capture's call) is named.
  (void)refusal(g, [] {});
  try {
    StepGraph::check_captured(s);
    FAIL("measured an uncaptured step");
  } catch (const Skipped& e) {
    CHECK_THAT(e.what(), Contains("the probe's update was not captured before the measured "
                                  "blocks (1 eager call(s); it is captured at call 4)"));
  }
  CHECK(StepGraph::pool_bytes_for(s) == 0);  // nothing captured, no pool
}
