// Interleaved execution on the worker's side (internal to worker/): the gate
// a trial waits at for its turns (worker --gate-fd).
#pragma once

#include <cstdint>

namespace gpusweep::host {

class EventWriter;

namespace detail {

// Interleaved execution (--gate-fd): the trial waits for its turn before
// setup and before each measured block, having said so with an `await`
// event; the host lets one trial (or --jobs of them) run at a time by
// writing a byte: 'g', or 'c' and 8 bytes, a measure.target cap (the
// training seconds after which the trial stops, censored: adaptive capping)
// that holds from this turn on. Without a gate every wait returns at once.
class Gate {
 public:
  Gate(int fd, EventWriter& out);
  bool gated() const { return fd_ >= 0; }

  // unmeasured: the turn asked for measures nothing (setup, the final
  // evaluation), so the host may grant it beside others (--parallel-starts).
  void await_turn(bool unmeasured = false);
  // The latest cap the host sent with a turn; 0: none yet.
  double cap_s() const { return cap_s_; }

 private:
  int fd_;
  EventWriter& out_;
  int64_t turn_ = 0;
  double cap_s_ = 0;
};

}  // namespace detail

}  // namespace gpusweep::host
