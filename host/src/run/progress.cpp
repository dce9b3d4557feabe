// Sweep progress display; see progress.hpp.
#include "run/progress.hpp"
#include "protocol/event_payloads.hpp"
#include "protocol/events.hpp"

#include "support/format.hpp"

namespace gpusweep::host {

std::string outcome_detail(const db::TrialOutcome& o) {
  if (o.summary) {
    std::string d = human_rate(o.summary->throughput_median, o.summary->unit) + ", cv " +
                    fixed(100 * o.summary->throughput_cv, 1) + "%";
    if (o.summary->quality) {
      d += ", " + o.summary->quality_metric.value_or("quality") + " " +
           human_count(*o.summary->quality);
    }
    return d;
  }
  return o.error ? truncate(*o.error, 120) : "";
}

namespace {
double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

bool starting(Phase phase) { return phase == Phase::setup || phase == Phase::warmup; }
}  // namespace

Progress::Progress(size_t total, int jobs, bool terminal, std::FILE* out, double long_phase_s)
    : total_(total),
      jobs_(jobs < 1 ? 1 : jobs),
      terminal_(terminal),
      out_(out),
      long_phase_s_(long_phase_s) {}

std::string Progress::eta() const {
  if (finished_ == 0) return "?";
  const double per_trial = finished_seconds_ / static_cast<double>(finished_);
  const double left = static_cast<double>(total_ - finished_) * per_trial / jobs_;
  return clock_time(left);
}

void Progress::started(int64_t trial_id, const std::string& label) {
  running_[trial_id] = Running{label};
  started_at_[trial_id] = std::chrono::steady_clock::now();
  if (terminal_) redraw();
}

void Progress::event(int64_t trial_id, const event::Event& e) {
  auto it = running_.find(trial_id);
  if (it == running_.end()) return;
  if (std::holds_alternative<event::Heartbeat>(e)) return heartbeat(it->second);
  if (const auto* p = std::get_if<event::Phase>(&e)) {
    Running& r = it->second;
    if (p->phase && *p->phase != r.phase) {
      const double took = since(r.phase_since);
      if (starting(r.phase) && took >= long_phase_s_) {
        note(truncate(r.label.empty() ? "(defaults)" : r.label, 60) + ": " + phase_name(r.phase) +
             " took " + human_seconds(took) + "; now " + phase_name(*p->phase));
      }
      r.phase = *p->phase;
      r.phase_since = std::chrono::steady_clock::now();
      r.next_notice_s = long_phase_s_;
    }
    if (p->blocks) r.blocks = *p->blocks;
  } else if (const auto* b = std::get_if<event::Block>(&e)) {
    it->second.block = b->idx + 1;
  } else {
    return;
  }
  if (terminal_) redraw();
}

void Progress::finished(int64_t trial_id, db::TrialStatus status, const std::string& detail) {
  double took = 0;
  if (auto it = started_at_.find(trial_id); it != started_at_.end()) {
    took = since(it->second);
    started_at_.erase(it);
  }
  std::string label;
  if (auto it = running_.find(trial_id); it != running_.end()) {
    label = it->second.label;
    running_.erase(it);
  }
  ++finished_;
  finished_seconds_ += took;
  if (terminal_) std::fputs("\r\033[K", out_);
  std::fprintf(out_, "[%zu/%zu] %-11s %s  %s  (%s)\n", finished_, total_, db::status_name(status),
               label.empty() ? "(defaults)" : label.c_str(), detail.c_str(),
               human_seconds(took).c_str());
  if (terminal_) redraw();
  std::fflush(out_);
}

void Progress::heartbeat(Running& r) {
  if (terminal_ && since(drawn_) >= 1) redraw();  // the phases' clocks move
  if (!starting(r.phase) || r.next_notice_s <= 0) return;
  const double in_phase = since(r.phase_since);
  if (in_phase < r.next_notice_s) return;
  r.next_notice_s *= 2;
  note(truncate(r.label.empty() ? "(defaults)" : r.label, 60) + ": still in " +
       phase_name(r.phase) + " after " + human_seconds(in_phase) +
       (r.phase == Phase::warmup ? " (warmup steps; torch.compile compiles in them)"
                                 : " (loading, building the model, its first step)"));
}

void Progress::note(const std::string& text) {
  if (terminal_) std::fputs("\r\033[K", out_);
  std::fprintf(out_, "note: %s\n", text.c_str());
  if (terminal_) redraw();
  std::fflush(out_);
}

void Progress::redraw() {
  std::string line = "[" + std::to_string(finished_) + "/" + std::to_string(total_) + " done] " +
                     clock_time(since(t0_)) + " elapsed, eta " + eta();
  for (const auto& [id, r] : running_) {
    line += " | " + truncate(r.label, 40) + ": " + phase_name(r.phase);
    if (r.phase == Phase::measure && r.blocks > 0) {
      line += " " + std::to_string(r.block) + "/" + std::to_string(r.blocks);
    } else if (starting(r.phase)) {
      line += " " + clock_time(since(r.phase_since));
    }
  }
  drawn_ = std::chrono::steady_clock::now();
  std::fprintf(out_, "\r\033[K%s", truncate(line, 160).c_str());
  std::fflush(out_);
}

void Progress::done() {
  if (terminal_) std::fputs("\r\033[K", out_);
  std::fflush(out_);
}

}  // namespace gpusweep::host
