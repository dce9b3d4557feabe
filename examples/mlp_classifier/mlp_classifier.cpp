// mlp_classifier: an MLP classifying 8 Gaussian clusters in 32-D; a step is one Adam update.
#include <gpusweep/torchkit/grad_step.hpp>
#include <gpusweep/torchkit/torch_workload.hpp>  // also includes <torch/torch.h>

#include <memory>

namespace {
using namespace gpusweep;

constexpr int64_t kFeatures = 32, kClasses = 8, kTrainSamples = 16384, kEvalSamples = 4096;
constexpr const char* kSkipReason =
    "mlp_classifier keeps its data on the device and runs no cuDNN op";

class MlpClassifier final : public torchkit::TorchWorkload {
 public:
  static torchkit::Support support() {
    torchkit::Support s;
    s.reason = kSkipReason;
    return s;
  }

  static Manifest manifest() {
    Manifest m;
    m.name = "mlp_classifier";
    m.version = "1.0.0";
    m.description = "MLP (ReLU, Adam 1e-3) on 8 Gaussian clusters; a step is one update.";
    m.unit = "samples";
    m.quality = {"accuracy", "chance", /*higher_is_better=*/true, "held-out accuracy"};
    m.params = torchkit::common_params(/*default_batch_size=*/128, support());
    m.params.push_back(Param::integer("hidden", 256, 1, 16384, "width of each hidden layer"));
    m.params.push_back(Param::integer("layers", 2, 1, 16, "number of hidden layers"));
    return m;
  }

  explicit MlpClassifier(const TrialConfig& config) : TorchWorkload(config, support()) {
    const auto on_device = torch::TensorOptions().device(settings_.device);
    const torch::Tensor centers = torch::randn({kClasses, kFeatures}, on_device);
    auto draw = [&](int64_t n, torch::Tensor& x, torch::Tensor& y) {
      y = torch::randint(kClasses, {n}, on_device.dtype(torch::kLong));
      x = centers.index_select(/*dim=*/0, y) + 2.5 * torch::randn({n, kFeatures}, on_device);
    };
    draw(kTrainSamples + settings_.batch_size, train_x_, train_y_);
    draw(kEvalSamples, eval_x_, eval_y_);
    const auto hidden = config.get<int64_t>("hidden");
    for (int64_t i = 0, in = kFeatures; i < config.get<int64_t>("layers"); ++i, in = hidden) {
      model_->push_back(torch::nn::Linear(in, hidden));
      model_->push_back(torch::nn::ReLU());
    }
    model_->push_back(torch::nn::Linear(hidden, kClasses));
    settings_.prepare(*model_);
    optimizer_ = std::make_unique<torch::optim::Adam>(model_->parameters());  // lr 1e-3
    grad_ = std::make_unique<torchkit::GradStep>(settings_, *optimizer_);     // fp16 scaler
  }

  StepResult step() override {
    const int64_t b = settings_.batch_size, offset = (steps_++ * b) % (train_x_.size(0) - b + 1);
    torch::Tensor logits;
    {
      torchkit::AutocastScope autocast(settings_);
      logits = model_->forward(train_x_.narrow(/*dim=*/0, offset, b)).to(torch::kFloat);
    }
    const auto loss = torch::nn::functional::cross_entropy(logits, train_y_.narrow(0, offset, b));
    grad_->backward(loss);
    grad_->step();
    observe_loss(loss);
    return {/*samples=*/static_cast<double>(b), /*secondary_samples=*/0};
  }

  Metrics evaluate() override {
    torch::NoGradGuard no_grad;
    const torch::Tensor predicted = model_->forward(eval_x_).argmax(/*dim=*/1);
    return {{"accuracy", predicted.eq(eval_y_).to(torch::kFloat).mean().item<double>()},
            {"chance", 1.0 / kClasses}};
  }

 private:
  int64_t steps_ = 0;
  torch::Tensor train_x_, train_y_, eval_x_, eval_y_;  // all on the device
  torch::nn::Sequential model_;
  std::unique_ptr<torch::optim::Adam> optimizer_;
  std::unique_ptr<torchkit::GradStep> grad_;  // steps optimizer_
};

}  // namespace

GPUSWEEP_EXPORT_WORKLOAD(MlpClassifier)
