// A trial's measurement protocol in order (setup, warmup, the measured
// phase, statistics, the result), its end, and the steps every phase runs;
// see trial.hpp.
#include "worker/trial.hpp"

#include "protocol/event_payloads.hpp"
#include "protocol/event_writer.hpp"
#include "protocol/events.hpp"
#include "worker/ranks.hpp"
#include "worker/worker.hpp"

#include <gpusweep/plugin.h>
#include <gpusweep/runtime_info.hpp>

#include <nlohmann/json.hpp>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

namespace gpusweep::host::detail {

[[noreturn]] void Trial::run() {
  setup();
  warmup();
  measure();
  const char* stats = nullptr;
  check(plugin_->stats(inst_, &stats), Phase::stats, steps_done_);
  Json all = parse_or_raw(stats);
  if (ranks_ != nullptr) add_rank_stats(all);
  out_.emit(event::Stats{all}.to_json());
  await_claim();
  event::Result ok;
  ok.status = "ok";
  ok.steps = steps_done_;
  out_.emit(ok.to_json());
  // No destroy and no dlclose: see loader.hpp. Exiting is the unload.
  finish(0);
}

// Ends the trial with its result: a failed plugin call's status and
// message, or the harness's own verdict.
[[noreturn]] void Trial::end_trial(const std::string& status, Phase phase, int64_t at_step,
                                   const std::string& message) {
  await_claim();
  event::Result r;
  r.status = status;
  r.phase = phase;
  r.at_step = at_step;
  r.message = message;
  out_.emit(r.to_json());
  finish(0);
}

// The trial's one result is this thread's to emit, unless a data-parallel
// trial's watch is already reporting a rank's failure and ending the
// process: then this thread waits for that.
void Trial::await_claim() {
  if (claim_trial_end()) return;
  for (;;) ::pause();
}

void Trial::check(gpusweep_status st, Phase phase, int64_t at_step) {
  if (st == GPUSWEEP_STATUS_OK) return;
  if (ranks_ == nullptr) end_trial(status_name(st), phase, at_step, plugin_->error_message(inst_));
  // A rank that died makes the collectives fail on the others: it is the
  // cause to report, when there is one, and the watch reports it.
  ranks_->await_failure(1.0);
  const std::string not_running = ranks_->ranks_not_running();
  end_trial(status_name(st), phase, at_step,
            "rank 0 of " + std::to_string(ranks_->world_size()) + ": " +
                plugin_->error_message(inst_) +
                (not_running.empty() ? "" : " (" + not_running + ")"));
}

// n steps here (`phase` names a failure), after the other ranks of a
// data-parallel trial were told to run as many; samples summed.
void Trial::run_steps(int64_t n, Phase phase, double* samples, double* secondary) {
  if (ranks_ != nullptr) {
    ranks_->set_phase(phase, steps_done_);
    ranks_->send_steps(n, steps_done_);
  }
  gpusweep_step_result r{};
  for (int64_t s = 0; s < n; ++s) {
    r.struct_size = sizeof r;
    r.samples = 0;
    r.secondary_samples = 0;
    check(plugin_->step(inst_, &r), phase, steps_done_ + s);
    *samples += r.samples;
    *secondary += r.secondary_samples;
  }
}

// After this rank synchronised at the end of run_steps: the seconds of
// the slowest rank (own: this rank's), the others' samples added.
double Trial::lockstep(double own, double* samples, double* secondary) {
  if (ranks_ == nullptr) return own;
  std::vector<double> seconds = {own};
  ranks_->collect(seconds, samples, secondary);
  rank_seconds_ = seconds;
  return *std::max_element(seconds.begin(), seconds.end());
}

void Trial::setup() {
  out_.emit(event::Phase{Phase::setup}.to_json());
  const auto t0 = Clock::now();
  // The other ranks create theirs meanwhile: the rendezvous is in create().
  if (ranks_ != nullptr) ranks_->start_watch(out_);
  gpusweep_status st = plugin_->create(args_.config_json.c_str(), &inst_);
  const double setup_s = seconds_since(t0);
  if (st == GPUSWEEP_STATUS_OK && inst_ == nullptr) st = GPUSWEEP_STATUS_ERROR;
  check(st, Phase::setup, 0);
  if (ranks_ != nullptr) ranks_->await_ready();
  // Settings such as threads apply in create(): report the runtime as used,
  // with the GPUs this process was given.
  Json runtime = parse_or_raw(plugin_->runtime());
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
      visible != nullptr && runtime.is_object()) {
    auto info = RuntimeInfo::from_json(runtime);
    info.cuda_visible_devices = visible;
    runtime = info.to_json();
  }
  out_.emit(event::Runtime{runtime, setup_s}.to_json());
  if (args_.probe_matmul_s > 0 && !args_.parallel_starts) {
    // With the trial's threads (applied by create): the peak this trial could reach.
    // (With parallel starts the setup shares the device: warmup probes instead.)
    event::Probe probe;
    probe.matmul = probe_matmul(plugin_, args_.probe_matmul_s);
    out_.emit(probe.to_json());
  }
}

}  // namespace gpusweep::host::detail
