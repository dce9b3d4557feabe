// The process group and DDP's gradient all-reduce on c10d; see
// data_parallel.hpp.
#include <gpusweep/torchkit/data_parallel.hpp>

#include <gpusweep/stat_names.hpp>
#include <gpusweep/torchkit/diagnostics.hpp>

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
#if defined(GPUSWEEP_TORCH_CUDA)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpusweep::torchkit {

namespace {

using c10d::ProcessGroup;

// DDP's defaults: the first bucket small, so that the first all-reduce
// starts early in backward (torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES).
constexpr int64_t kFirstBucketBytes = 1 << 20;
// broadcast_coalesced's buffer (DDP's _sync_module_states uses 250 MiB).
constexpr size_t kBroadcastBytes = size_t{250} << 20;

// One trial per worker process: its group, made at the first collective.
struct Group {
  std::mutex mutex;
  c10::intrusive_ptr<ProcessGroup> pg;
  int64_t world_size = 1;
  int64_t rank = 0;
  std::string backend;
  // The live syncs' figures, summed by data_parallel_stats().
  double bytes_per_step = 0;
  int64_t buckets = 0;
  int64_t synced_steps = 0;
  std::vector<DeviceTimer*> exposed;
  // By sync, beside exposed: each reducing backward's (in a measured
  // window, timed): which of its timer's spans is whose step.
  std::vector<const std::vector<std::pair<bool, bool>>*> steps;
};

Group& group_state() {
  static Group g;
  return g;
}

c10::intrusive_ptr<c10d::Backend> make_backend(const Settings& s,
                                               const c10::intrusive_ptr<c10d::Store>& store,
                                               std::chrono::milliseconds timeout) {
  const int rank = static_cast<int>(s.rank), size = static_cast<int>(s.world_size);
  if (s.dp_backend == "nccl") {
#if defined(GPUSWEEP_TORCH_CUDA)
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = timeout;
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, opts);
#else
    throw Skipped("dp_backend=nccl needs a CUDA build of LibTorch; this plugin was built without");
#endif
  }
  auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
  // Ranks of one node meet on loopback; GPUSWEEP_DP_HOST names this node's
  // address when the ranks span nodes.
  const char* host = std::getenv("GPUSWEEP_DP_HOST");
  opts->devices.push_back(
      c10d::ProcessGroupGloo::createDeviceForHostname(host != nullptr ? host : "127.0.0.1"));
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, opts);
}

std::string rendezvous_failure(const Settings& s, const std::string& what) {
  char timeout[32];
  std::snprintf(timeout, sizeof timeout, "%g", s.dp_timeout_s);
  return "data-parallel rendezvous (rank " + std::to_string(s.rank) + " of " +
         std::to_string(s.world_size) + ", " + s.dp_backend + ", store " + s.dp_store +
         ") failed after waiting up to " + timeout +
         " s for the other ranks (GPUSWEEP_DP_TIMEOUT_S; a rank that did not start or hung "
         "before meeting): " +
         what;
}

// The trial's process group; the first call is the rendezvous.
c10::intrusive_ptr<ProcessGroup> process_group(const Settings& s) {
  Group& g = group_state();
  std::lock_guard<std::mutex> lock(g.mutex);
  if (g.pg) return g.pg;
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(s.dp_timeout_s * 1000));
  try {
    auto file = c10::make_intrusive<c10d::FileStore>(s.dp_store, static_cast<int>(s.world_size));
    file->setTimeout(timeout);
    auto store = c10::make_intrusive<c10d::PrefixStore>("gpusweep", file);
    auto backend = make_backend(s, store, timeout);
    auto pg = c10::make_intrusive<ProcessGroup>(store, static_cast<int>(s.rank),
                                                static_cast<int>(s.world_size));
    const auto type =
        s.dp_backend == "nccl" ? ProcessGroup::BackendType::NCCL : ProcessGroup::BackendType::GLOO;
    pg->setDefaultBackend(type);
    pg->setBackend(s.device.type(), type, backend);
    if (s.device.type() != c10::DeviceType::CPU && type == ProcessGroup::BackendType::GLOO) {
      pg->setBackend(c10::DeviceType::CPU, type, backend);
    }
    g.pg = pg;
  } catch (const Skipped&) {
    throw;
  } catch (const c10::Error& e) {
    throw std::runtime_error(rendezvous_failure(s, e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw std::runtime_error(rendezvous_failure(s, e.what()));
  }
  g.world_size = s.world_size;
  g.rank = s.rank;
  g.backend = s.dp_backend;
  return g.pg;
}

// DDP's default hook, averaging before the sum as torch's AllReduceCommHook
// does, and timing from the last bucket's launch: that bucket's gradients
// are the last backward computes, so what follows until backward returns is
// communication nothing overlaps.
class TimedAllReduce final : public c10d::CppCommHookInterface<c10::intrusive_ptr<ProcessGroup>> {
 public:
  TimedAllReduce(const c10::intrusive_ptr<ProcessGroup>& pg, DeviceTimer& exposed, bool& timing)
      : CppCommHookInterface(pg), exposed_(exposed), timing_(timing) {}

  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override {
    if (bucket.isLast() && !timing_) {
      exposed_.start();
      timing_ = true;
    }
    at::Tensor& buffer = bucket.getBufferRef();
    buffer.div_(state_->getSize());
    std::vector<at::Tensor> tensors{buffer};
    return state_->allreduce(tensors)->getFuture();
  }

 private:
  DeviceTimer& exposed_;
  bool& timing_;
};

}  // namespace

void broadcast_from_first_rank(const Settings& settings, torch::nn::Module& module) {
  if (settings.world_size <= 1) return;
  const auto pg = process_group(settings);
  std::vector<at::Tensor> tensors;
  for (const auto& p : module.parameters()) tensors.push_back(p.detach());
  for (const auto& b : module.buffers()) tensors.push_back(b.detach());
  if (tensors.empty()) return;
  torch::NoGradGuard no_grad;
  c10d::broadcast_coalesced(pg, tensors, kBroadcastBytes, /*rank=*/0);
}

struct GradientSync::Impl {
  explicit Impl(const Settings& s) : exposed(s.device, /*keep_each=*/true) {}
  DeviceTimer exposed;
  bool timing = false;  // the exposed span of this backward has started
  // Each reducing backward: whether it ran in a measured window, and whether
  // it was timed (a span of `exposed`; a backward whose last bucket never
  // launched, the static graph's first, has none).
  std::vector<std::pair<bool, bool>> steps;
  std::unique_ptr<c10d::Reducer> reducer;
  // dp_static_graph: the reducer's first backward only counts each
  // parameter's hooks, and reduces nothing until delay_all_reduce() (which
  // DDP's Python side queues at the end of that backward).
  bool static_graph = false;
  bool first_reduced = false;
  int64_t buckets = 0;  // now (rebuild_buckets may change them)
};

GradientSync::GradientSync(const Settings& settings, torch::optim::Optimizer& optimizer)
    : impl_(std::make_unique<Impl>(settings)) {
  const auto pg = process_group(settings);
  std::vector<at::Tensor> params;
  double bytes = 0;
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) {
      if (!p.requires_grad()) continue;
      params.push_back(p);
      bytes += static_cast<double>(p.numel() * p.element_size());
    }
  }
  if (params.empty()) return;
  const auto cap = static_cast<int64_t>(settings.dp_bucket_mb * (1 << 20));
  const std::vector<bool> dense(params.size(), false);
  auto [buckets, limits] = c10d::compute_bucket_assignment_by_size(
      params, {static_cast<size_t>(std::min(cap, kFirstBucketBytes)), static_cast<size_t>(cap)},
      dense);
  // As DistributedDataParallel: the buckets of the last parameters first,
  // whose gradients backward computes first.
  std::reverse(buckets.begin(), buckets.end());
  std::vector<int64_t> caps(limits.rbegin(), limits.rend());
  impl_->reducer = std::make_unique<c10d::Reducer>(
      params, buckets, pg, dense, cap, /*find_unused_parameters=*/false,
      /*gradient_as_bucket_view=*/false, std::unordered_map<size_t, std::string>{},
      kFirstBucketBytes, /*skip_all_reduce_unused_params=*/false, /*use_python_reducer=*/false,
      caps);
  impl_->reducer->register_comm_hook(
      std::make_unique<TimedAllReduce>(pg, impl_->exposed, impl_->timing));
  if (settings.dp_static_graph) {
    impl_->reducer->set_static_graph();
    impl_->static_graph = true;
  }
  Group& g = group_state();
  std::lock_guard<std::mutex> lock(g.mutex);
  g.bytes_per_step += bytes;
  impl_->buckets = static_cast<int64_t>(buckets.size());
  g.buckets += impl_->buckets;
  g.exposed.push_back(&impl_->exposed);
  g.steps.push_back(&impl_->steps);
}

GradientSync::~GradientSync() {
  Group& g = group_state();
  std::lock_guard<std::mutex> lock(g.mutex);
  g.exposed.erase(std::remove(g.exposed.begin(), g.exposed.end(), &impl_->exposed),
                  g.exposed.end());
  g.steps.erase(std::remove(g.steps.begin(), g.steps.end(), &impl_->steps), g.steps.end());
}

void GradientSync::before_backward(const torch::Tensor& loss, bool last) {
  if (!impl_->reducer || !last) return;
  // As DDP before each forward: once a backward has recorded the order its
  // gradients became ready, the buckets are rebuilt in that order (the
  // same on every rank: the reducer broadcasts rank 0's), and the record
  // stops growing. Nothing after the first rebuild.
  if (impl_->reducer->rebuild_buckets()) {
    const auto now = static_cast<int64_t>(impl_->reducer->get_grad_buckets().size());
    Group& g = group_state();
    std::lock_guard<std::mutex> lock(g.mutex);
    g.buckets += now - impl_->buckets;
    impl_->buckets = now;
  }
  impl_->reducer->prepare_for_backward({loss});
}

void GradientSync::after_backward(bool last) {
  if (!impl_->reducer || !last) return;
  if (impl_->static_graph && !impl_->first_reduced) {
    impl_->reducer->delay_all_reduce();
    impl_->first_reduced = true;
  }
  impl_->steps.emplace_back(in_measured_window(), impl_->timing);
  if (impl_->timing) {
    impl_->exposed.stop();
    impl_->timing = false;
  }
  Group& g = group_state();
  std::lock_guard<std::mutex> lock(g.mutex);
  ++g.synced_steps;
}

Metrics data_parallel_stats() {
  Group& g = group_state();
  std::lock_guard<std::mutex> lock(g.mutex);
  if (!g.pg) return {};
  double exposed = 0;
  for (DeviceTimer* t : g.exposed) exposed += t->total_seconds();
  return {{"dp_world_size", static_cast<double>(g.world_size)},
          {"dp_rank", static_cast<double>(g.rank)},
          {stat::dp_allreduce_bytes_per_step, g.bytes_per_step},
          {"dp_buckets", static_cast<double>(g.buckets)},
          {"dp_synced_steps", static_cast<double>(g.synced_steps)},
          {stat::dp_comm_exposed_s, exposed}};
}

std::vector<double> data_parallel_measured_steps() {
  Group& g = group_state();
  std::lock_guard<std::mutex> lock(g.mutex);
  std::vector<double> out;
  for (size_t k = 0; k < g.exposed.size(); ++k) {
    const std::vector<double> spans = g.exposed[k]->each_seconds();
    std::vector<double> mine;
    size_t span = 0;
    for (const auto& [measured, timed] : *g.steps[k]) {
      const double s = timed && span < spans.size() ? spans[span] : 0.0;
      if (timed) ++span;
      if (measured) mine.push_back(s);
    }
    // Several syncs (optimisers) reduce in the same steps: their spans add.
    if (out.empty()) {
      out = std::move(mine);
    } else {
      for (size_t i = 0; i < std::min(out.size(), mine.size()); ++i) out[i] += mine[i];
    }
  }
  return out;
}

}  // namespace gpusweep::torchkit
