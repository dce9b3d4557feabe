// The running trials' blocks beside the database; see live_blocks.hpp.
#include "run/live_blocks.hpp"
#include "run/block_sample.hpp"

#include "protocol/event_payloads.hpp"
#include "protocol/events.hpp"
#include "support/procfs.hpp"

#include <gpusweep/db/live.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace gpusweep::host {

namespace {

// The most often the file is replaced while blocks arrive.
constexpr double kWriteEveryS = 0.5;

// "<host name> <pid>\n", written over itself in place: the same bytes each
// time, so that a reader never sees a short file, and the same inode, so
// that a network filesystem's cached lookup still names it. A failed write
// only ages the last beat.
void write_beat(const std::string& path) {
  const std::string line = host_name() + " " + std::to_string(::getpid()) + "\n";
  std::fstream out(path, std::ios::in | std::ios::out | std::ios::binary);
  if (!out.is_open()) out.open(path, std::ios::out | std::ios::binary);  // the first beat
  out.seekp(0);
  out << line;
  out.flush();
}

}  // namespace

LiveBlocks::LiveBlocks(const std::string& db_path, int64_t run_id, double beat_s)
    : path_(db::live_blocks_path(db_path, run_id)),
      beat_path_(db::live_beat_path(db_path, run_id)) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
  if (ec)
    off_ =
        "cannot make " + std::filesystem::path(path_).parent_path().string() + ": " + ec.message();
  write(true);
  if (off_.empty()) {
    write_beat(beat_path_);
    beat_ = std::thread([this, beat_s] { beat_until_stopped(beat_s); });
  }
}

void LiveBlocks::beat_until_stopped(double beat_s) {
  const auto every = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(beat_s));
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(beat_mutex_);
      if (beat_stop_.wait_for(lock, every, [this] { return stopping_; })) return;
    }
    write_beat(beat_path_);  // unlocked: a slow file server never holds up the destructor's signal
  }
}

LiveBlocks::~LiveBlocks() {
  std::error_code ec;
  if (beat_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(beat_mutex_);
      stopping_ = true;
    }
    beat_stop_.notify_all();
    beat_.join();
    std::filesystem::remove(beat_path_, ec);
  }
  if (!off_.empty()) return;  // nothing of ours to remove
  std::filesystem::remove(path_, ec);
  // The folder too, once no run of the database is writing into it (remove
  // takes an empty folder only).
  const auto folder = std::filesystem::path(path_).parent_path();
  if (std::filesystem::is_directory(folder, ec)) std::filesystem::remove(folder, ec);
}

void LiveBlocks::started(int64_t trial_id) {
  running_[trial_id] = Trial{};
  write(true);
}

void LiveBlocks::event(int64_t trial_id, const event::Event& e) {
  const auto it = running_.find(trial_id);
  if (it == running_.end()) return;
  if (const auto* p = std::get_if<event::Phase>(&e)) {
    if (p->phase) it->second.phase = *p->phase;
  } else if (const auto* b = std::get_if<event::Block>(&e)) {
    if (auto t = db::block_throughput(block_sample(*b))) {
      it->second.throughput.push_back(*t);
    }
  } else {
    return;
  }
  write(false);
}

void LiveBlocks::finished(int64_t trial_id) {
  running_.erase(trial_id);
  write(true);
}

void LiveBlocks::write(bool now) {
  if (!off_.empty()) return;
  const auto t = std::chrono::steady_clock::now();
  if (!now && std::chrono::duration<double>(t - written_).count() < kWriteEveryS) return;
  nlohmann::json trials = nlohmann::json::array();
  for (const auto& [id, trial] : running_) {
    trials.push_back(
        {{"id", id}, {"phase", phase_name(trial.phase)}, {"throughput", trial.throughput}});
  }
  const std::string tmp = path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << nlohmann::json{{"trials", trials}}.dump();
    out.close();
    if (!out) {
      off_ = "cannot write " + tmp;
      return;
    }
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    off_ = "cannot rename " + tmp + " to " + path_;
    return;
  }
  written_ = t;
}

}  // namespace gpusweep::host
