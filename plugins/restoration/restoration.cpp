// restoration: a residual CNN that denoises procedural RGB images
// (docs/workloads.md "restoration"). Patches are cropped, flipped and noised by the
// input pipeline, so loader workers matter; the knobs are the seed guide's
// (model width and depth, patch size) plus the loss.
#include "images.hpp"

#include <gpusweep/random.hpp>
#include <gpusweep/stat_names.hpp>
#include <gpusweep/torchkit/diagnostics.hpp>
#include <gpusweep/torchkit/estimate.hpp>
#include <gpusweep/torchkit/fused_adam.hpp>
#include <gpusweep/torchkit/grad_step.hpp>
#include <gpusweep/torchkit/input_pipeline.hpp>
#include <gpusweep/torchkit/torch_workload.hpp>
#include <gpusweep/workload.hpp>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpusweep::restoration {
namespace {

// Canonical hyperparameters (docs/workloads.md); not knobs, so that every trial
// trains the same task.
constexpr double kLearningRate = 2e-4;
constexpr float kNoiseSigma = 25.0f / 255.0f;
constexpr int64_t kChannels = 3;
// The training set: patches are cropped from these, so patch_size is at most
// kTrainImageSize. 64 images of 256 x 256 take 48 MiB and ~0.2 s to render.
constexpr int64_t kTrainImages = 64;
constexpr int64_t kTrainImageSize = 256;
// Validation: fixed images and noise whatever the trial's seed, so that PSNRs
// of different trials compare.
constexpr int64_t kValImages = 16;
constexpr int64_t kValImageSize = 128;
constexpr uint64_t kValSeed = 20240613;
// Validation images per forward: bounds evaluation memory at wide models.
constexpr int64_t kValChunk = 8;
constexpr int64_t kMaxChannels = 512;
constexpr int64_t kMaxBlocks = 64;
constexpr int64_t kMinPatch = 8;
constexpr int64_t kMaxAugmentPasses = 64;

// Streams derived from the trial's seed (torchkit/seeding.hpp).
enum Stream : uint64_t {
  kImageStream = 1,
  kValImageStream = 2,
  kValNoiseStream = 3,
  kAugmentStream = 4,  // from a patch's own seed
};

torch::nn::Conv2d conv3x3(int64_t in, int64_t out) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, /*kernel_size=*/3).padding(1));
}

// conv3x3(3->C) ReLU, num_blocks x [conv3x3 C->C, ReLU, conv3x3 C->C, + skip],
// conv3x3(C->3). It predicts the noise; forward returns input - prediction.
// A plain module rather than nn::Sequential: forward skips AnyModule's
// type-erased dispatch, and the in-place ops below save one activation per
// layer (neither a conv's nor an add's backward needs its output).
class DenoiserImpl : public torch::nn::Module {
 public:
  DenoiserImpl(int64_t channels, int64_t num_blocks)
      : head_(register_module("head", conv3x3(/*in=*/kChannels, /*out=*/channels))) {
    for (int64_t i = 0; i < num_blocks; ++i) {
      const std::string name = "block" + std::to_string(i);
      first_.push_back(register_module(name + "_conv1", conv3x3(channels, channels)));
      second_.push_back(register_module(name + "_conv2", conv3x3(channels, channels)));
    }
    tail_ = register_module("tail", conv3x3(/*in=*/channels, /*out=*/kChannels));
  }

  torch::Tensor forward(const torch::Tensor& noisy) {
    torch::Tensor x = head_->forward(noisy).relu_();
    for (size_t i = 0; i < first_.size(); ++i) {
      x = second_[i]->forward(first_[i]->forward(x).relu_()).add_(x);
    }
    return noisy - tail_->forward(x);
  }

 private:
  torch::nn::Conv2d head_;
  std::vector<torch::nn::Conv2d> first_;
  std::vector<torch::nn::Conv2d> second_;
  torch::nn::Conv2d tail_{nullptr};
};
TORCH_MODULE(Denoiser);

// This workload's own knobs. The SDK has checked each against the manifest
// (type, choices, range) and filled the defaults before the constructor runs.
struct Knobs {
  int64_t base_channels = 32;
  int64_t num_blocks = 4;
  int64_t patch_size = 64;
  bool l1 = true;
  int64_t augment_passes = 0;

  static Knobs parse(const TrialConfig& config) {
    Knobs k;
    k.base_channels = config.get<int64_t>("base_channels");
    k.num_blocks = config.get<int64_t>("num_blocks");
    k.patch_size = config.get<int64_t>("patch_size");
    k.l1 = config.get<std::string>("loss") == "l1";
    k.augment_passes = config.get<int64_t>("augment_passes");
    return k;
  }
};

const torchkit::Support kSupport = [] {
  torchkit::Support s;
  s.channels_last = true;
  // Channels-last by default: oneDNN's convolutions run it without reordering
  // to and from their blocked layout on every call (1.24x the images/s on an
  // AVX-512 CPU, bench/results/2026-11-22-eager-references.md), and it is what
  // torch.compile's layout optimisation picks for this net.
  s.defaults["channels_last"] = true;
  s.input_pipeline = true;
  s.cudnn = true;  // convolutions
  s.grad_accum = true;
  s.data_parallel = true;  // make_batch takes the rank's slice of the global batch
  s.sync_every = true;
  s.precision = true;
  s.cuda_graphs = true;  // supervised_step graphs the forward, backward and Adam
  return s;
}();

// Batch tensors handed out again once nothing but the pool refers to them.
// Loader threads that allocate fresh 1 MB batches which the training thread
// then frees make glibc trim and re-fault the loader threads' arenas on every
// batch: five times the page faults of producing in the step, and a slower
// step. Shared by the loader threads, hence the mutex (taken once per
// tensor, never on the training thread's path).
class BufferPool {
 public:
  torch::Tensor get(at::IntArrayRef shape) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const torch::Tensor& t : buffers_) {
      // Views and autograd's saved copies share the storage, not the handle.
      if (t.use_count() == 1 && t.storage().use_count() == 1 && t.sizes() == shape) return t;
    }
    torch::Tensor t = torch::empty(shape);
    if (buffers_.size() < kMaxPooled) buffers_.push_back(t);
    return t;
  }

 private:
  // Enough for every lane's prefetched batches plus the one in the step, two
  // tensors each, at a few workers.
  static constexpr size_t kMaxPooled = 64;
  std::mutex mutex_;
  std::vector<torch::Tensor> buffers_;
};

// count images of size x size rendered from (seed, stream), one generator per
// image so that rendering in parallel gives the same pixels.
std::vector<float> render_images(int64_t count, int64_t size, uint64_t seed, uint64_t stream) {
  const int64_t pixels = kChannels * size * size;
  std::vector<float> images(static_cast<size_t>(count * pixels));
  at::parallel_for(0, count, /*grain_size=*/1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      std::mt19937_64 rng(derive_seed(derive_seed(seed, stream), static_cast<uint64_t>(i)));
      render_image(size, rng, images.data() + i * pixels);
    }
  });
  return images;
}

// Mean over images of 10 log10(1 / MSE), pixel values clamped to [0, 1] as
// an image is when saved.
// Over the images: their mean PSNR and its standard error.
torchkit::Estimate psnr_db(const torch::Tensor& images, const torch::Tensor& clean) {
  const torch::Tensor mse = (images.to(torch::kFloat).clamp(0, 1) - clean)
                                .square()
                                .flatten(/*start_dim=*/1)
                                .mean(/*dim=*/1);
  return torchkit::mean_and_se(-10.0 * torch::log10(mse));
}

// The optimiser, made capturable (cuda_graphs) or not, for GradStep to take.
torchkit::FusedAdam& capturable_if(torchkit::FusedAdam& optimizer, bool on) {
  optimizer.capturable(on);
  return optimizer;
}

class Restoration final : public torchkit::TorchWorkload {
 public:
  static Manifest manifest() {
    Manifest m;
    m.name = "restoration";
    // 1.2: each patch's noise and augmentation from a seed of its own.
    // 1.3: channels_last by default, Adam in one fused kernel call.
    m.version = "1.3.0";
    m.description =
        "Image denoising CNN: conv3x3(3->C) ReLU, num_blocks residual blocks (conv3x3, ReLU, "
        "conv3x3, + skip), conv3x3(C->3); the net predicts the noise, the output is the input "
        "minus it. Procedural RGB images (gradients, rectangles, ellipses, sine textures) with "
        "Gaussian noise sigma 25/255; the input pipeline crops random patches, flips them and "
        "adds fresh noise. Adam 2e-4. A step is one optimiser step on batch_size x grad_accum "
        "patches.";
    m.unit = "images";
    m.quality = {"psnr_db", "noisy_psnr_db", true,
                 "mean PSNR (dB) of the denoised output on 16 fixed 128x128 validation images "
                 "(fixed noise, same for every seed), next to the PSNR of the noisy input itself; "
                 "initial_psnr_db is the untrained model's"};
    m.params = torchkit::common_params(/*default_batch_size=*/16, kSupport);
    m.params.push_back(Param::integer(
        "base_channels", 32, 1, static_cast<double>(kMaxChannels),
        "feature channels C of every hidden conv (canonical 32); compute grows as C^2"));
    m.params.push_back(Param::integer(
        "num_blocks", 4, 0, static_cast<double>(kMaxBlocks),
        "residual blocks of two C->C 3x3 convs each (canonical 4); compute grows linearly"));
    m.params.push_back(Param::integer(
        "patch_size", 64, static_cast<double>(kMinPatch), static_cast<double>(kTrainImageSize),
        "side in pixels of the square training patches the input pipeline crops from the "
        "256x256 training images (canonical 64); compute and loader work grow as its square"));
    m.params.push_back(Param::choice(
        "loss", "l1", {"l1", "l2"},
        "training loss between the denoised patch and the clean one: l1 = mean absolute error "
        "(canonical), l2 = mean squared error"));
    m.params.push_back(Param::integer(
        "augment_passes", 0, 0, static_cast<double>(kMaxAugmentPasses),
        "heavy augmentation: passes per patch of a random rotation (bilinear), a 5x5 Gaussian "
        "blur and a brightness/contrast jitter, in plain loops on the loader (canonical 0: crops "
        "and flips only); the CPU cost of a heavy augmentation pipeline, to study input-bound "
        "training and loader_workers"));
    return m;
  }

  explicit Restoration(const TrialConfig& config)
      : TorchWorkload(config, kSupport),
        knobs_(Knobs::parse(config)),
        train_images_(render_images(kTrainImages, kTrainImageSize, settings_.seed, kImageStream)),
        model_(build_model(knobs_, settings_)),
        optimizer_(model_->parameters(), torch::optim::AdamOptions(kLearningRate)),
        // A captured step needs Adam's step count on the device (and fp16's
        // scaler, under graphs, a capturable optimiser when GradStep is made).
        grad_(settings_, capturable_if(optimizer_, settings_.cuda_graphs)),
        pipeline_(settings_,
                  [this](int64_t /*index*/, std::mt19937_64& rng) { return make_batch(rng); }) {
    track(pipeline_);
    make_validation_set();
    initial_psnr_db_ = validation_psnr_db().mean;
  }

  StepResult step() override {
    return supervised_step(
        pipeline_, grad_, [this](const torch::Tensor& noisy) { return model_->forward(noisy); },
        [this](const torch::Tensor& denoised, const torch::Tensor& clean) {
          return knobs_.l1 ? torch::l1_loss(denoised, clean) : torch::mse_loss(denoised, clean);
        });
  }

  Metrics evaluate() override {
    const torchkit::Estimate psnr = validation_psnr_db();
    return {{"psnr_db", psnr.mean},
            {"psnr_db_se", psnr.se},  // over the validation images
            {"noisy_psnr_db", noisy_psnr_db_},
            {"initial_psnr_db", initial_psnr_db_},
            {"optimizer_steps", static_cast<double>(grad_.optimizer_steps())}};
  }

 protected:
  Metrics extra_stats() override {
    Metrics m = grad_.counters();
    m[stat::flops_per_step] = flops_per_step();
    m["channels_last_weights"] = static_cast<double>(torchkit::channels_last_weights(*model_));
    return m;
  }

 private:
  // Multiply-adds of the convolutions, times 2 FLOPs each, times 3 for
  // forward + backward (input and weight gradients); the elementwise ops are
  // left out.
  double flops_per_step() const {
    const auto c = static_cast<double>(knobs_.base_channels);
    const double per_pixel = 2.0 * 9.0 *
                             (static_cast<double>(kChannels) * c * 2.0 +
                              2.0 * static_cast<double>(knobs_.num_blocks) * c * c);
    const auto pixels = static_cast<double>(knobs_.patch_size * knobs_.patch_size);
    return 3.0 * per_pixel * pixels *
           static_cast<double>(settings_.batch_size * settings_.grad_accum);
  }

  static Denoiser build_model(const Knobs& knobs, const torchkit::Settings& settings) {
    Denoiser model(knobs.base_channels, knobs.num_blocks);
    settings.prepare(*model);
    return model;
  }

  // The input pipeline's work for one batch (on a loader thread, or in the
  // step with 0 workers): batch_size random patches of random training
  // images, each flipped left-right and top-bottom with probability 1/2,
  // plus fresh Gaussian noise. Returns {noisy, clean}. Touches only the
  // immutable training images. Each patch draws its place, flips and a seed
  // of its own from the batch's generator, in order; its augmentation and
  // noise come from that seed. At world_size > 1 the draws are the global
  // batch's (world_size x batch_size patches, the same on every rank) and
  // this rank renders its slice: the ranks together train on the batches one
  // process with the global batch would, at 5 draws a patch for the others'.
  torchkit::Batch make_batch(std::mt19937_64& rng) {
    const int64_t b = settings_.batch_size;
    const int64_t first = settings_.shard_begin();
    const int64_t p = knobs_.patch_size;
    const int64_t pixels = kChannels * p * p;
    torch::Tensor clean = buffers_.get({b, kChannels, p, p});
    torch::Tensor noisy = buffers_.get({b, kChannels, p, p});
    float* clean_data = clean.data_ptr<float>();
    std::vector<uint64_t> seeds(static_cast<size_t>(b));
    for (int64_t g = 0; g < settings_.global_batch(); ++g) {
      const int64_t image_index = random::uniform_int(rng, 0, kTrainImages - 1);
      const int64_t top = random::uniform_int(rng, 0, kTrainImageSize - p);
      const int64_t left = random::uniform_int(rng, 0, kTrainImageSize - p);
      const uint64_t flips = rng();
      const uint64_t seed = rng();
      const int64_t i = g - first;
      if (i < 0 || i >= b) continue;  // another rank's
      seeds[static_cast<size_t>(i)] = seed;
      const float* image =
          train_images_.data() + image_index * kChannels * kTrainImageSize * kTrainImageSize;
      copy_patch(image, kTrainImageSize, top, left, p, /*flip_lr=*/(flips & 1) != 0,
                 /*flip_tb=*/(flips & 2) != 0, clean_data + i * pixels);
    }
    std::vector<float> scratch(knobs_.augment_passes > 0 ? static_cast<size_t>(pixels) : 0);
    float* noisy_data = noisy.data_ptr<float>();
    for (int64_t i = 0; i < b; ++i) {
      const uint64_t seed = seeds[static_cast<size_t>(i)];
      if (knobs_.augment_passes > 0) {
        std::mt19937_64 augment_rng(derive_seed(seed, kAugmentStream));
        for (int64_t pass = 0; pass < knobs_.augment_passes; ++pass) {
          augment_pass(clean_data + i * pixels, p, augment_rng, scratch.data());
        }
      }
      // LibTorch's vectorised normal sampler (serial, so loader threads do
      // not start thread teams of their own); the add is a plain loop for
      // the same reason.
      noisy[i].normal_(/*mean=*/0, /*std=*/kNoiseSigma, at::detail::createCPUGenerator(seed));
      float* n = noisy_data + i * pixels;
      const float* c = clean_data + i * pixels;
      for (int64_t k = 0; k < pixels; ++k) n[k] += c[k];
    }
    return {noisy, clean};
  }

  // 16 fixed images with fixed noise, on the device for the whole trial.
  void make_validation_set() {
    std::vector<float> clean = render_images(kValImages, kValImageSize, kValSeed, kValImageStream);
    const torch::Tensor clean_host =
        torch::from_blob(clean.data(), {kValImages, kChannels, kValImageSize, kValImageSize})
            .clone();
    const torch::Tensor noise =
        torch::empty_like(clean_host)
            .normal_(/*mean=*/0, /*std=*/kNoiseSigma,
                     at::detail::createCPUGenerator(derive_seed(kValSeed, kValNoiseStream)));
    const torch::Tensor noisy_host = clean_host + noise;
    val_clean_ = settings_.to_device(clean_host);
    val_noisy_ = settings_.to_device(noisy_host);
    noisy_psnr_db_ = psnr_db(noisy_host, clean_host).mean;
  }

  // PSNR of the model's output on the validation set, in the trial's
  // precision (so that what bf16 costs in quality shows).
  torchkit::Estimate validation_psnr_db() {
    torch::NoGradGuard no_grad;
    model_->eval();
    std::vector<torch::Tensor> outputs;
    for (int64_t begin = 0; begin < kValImages; begin += kValChunk) {
      const torch::Tensor chunk = val_noisy_.slice(/*dim=*/0, begin, begin + kValChunk);
      torchkit::AutocastScope autocast(settings_);
      outputs.push_back(model_->forward(chunk).to(torch::kFloat));
    }
    model_->train();
    return psnr_db(torch::cat(outputs), val_clean_);
  }

  Knobs knobs_;
  std::vector<float> train_images_;  // kTrainImages CHW images, immutable after setup
  Denoiser model_{nullptr};
  torchkit::FusedAdam optimizer_;  // Adam in one kernel call a step
  torchkit::GradStep grad_;
  torch::Tensor val_clean_;  // on the device
  torch::Tensor val_noisy_;  // on the device
  double noisy_psnr_db_ = 0;
  double initial_psnr_db_ = 0;
  BufferPool buffers_;  // the input pipeline's batch tensors
  // Last: its loader threads read the members above, so it must start after
  // them and stop before them.
  torchkit::InputPipeline pipeline_;
};

}  // namespace
}  // namespace gpusweep::restoration

GPUSWEEP_EXPORT_WORKLOAD(gpusweep::restoration::Restoration)
