// Sweep progress display; see progress.hpp.
#include "run/progress.hpp"
#include "protocol/event_payloads.hpp"
#include "protocol/events.hpp"

#include "support/format.hpp"

namespace gpusweep::host {

namespace {
double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

Progress::Progress(size_t total, int jobs, bool terminal, std::FILE* out)
    : total_(total), jobs_(jobs < 1 ? 1 : jobs), terminal_(terminal), out_(out) {}

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

void Progress::event(int64_t trial_id, const nlohmann::json& e) {
  auto it = running_.find(trial_id);
  if (it == running_.end()) return;
  const std::string kind = event::kind(e);
  if (kind == event::phase) {
    if (auto phase = event::Phase::from_json(e).phase; !phase.empty()) it->second.phase = phase;
    if (e.contains("blocks")) it->second.blocks = e.value("blocks", int64_t{0});
  } else if (kind == event::block) {
    it->second.block = event::Block::from_json(e).idx + 1;
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
    line += " | " + truncate(r.label, 40) + ": " + r.phase;
    if (r.phase == "measure" && r.blocks > 0) {
      line += " " + std::to_string(r.block) + "/" + std::to_string(r.blocks);
    }
  }
  std::fprintf(out_, "\r\033[K%s", truncate(line, 160).c_str());
  std::fflush(out_);
}

void Progress::done() {
  if (terminal_) std::fputs("\r\033[K", out_);
  std::fflush(out_);
}

}  // namespace gpusweep::host
