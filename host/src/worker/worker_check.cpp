// The worker side of `gpusweep plugins --check`: every function of the table
// called once in a fresh process, in the order a trial uses them, so that a
// plugin that crashes or hangs takes only this process down.
#include "protocol/event_payloads.hpp"
#include "protocol/event_writer.hpp"
#include "worker/loader.hpp"
#include "worker/worker.hpp"

#include <gpusweep/plugin.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>

#include <unistd.h>

namespace gpusweep::host {

namespace {

using Clock = std::chrono::steady_clock;

// Brackets one call into the plugin with "begin" and "end" events.
class Calls {
 public:
  explicit Calls(EventWriter& out) : out_(out) {}

  // f calls the plugin and returns its status, filling in what else the
  // end event says.
  template <class F>
  gpusweep_status call(const event::Begin& begin, F&& f) {
    out_.emit(begin.to_json());
    event::End end;
    end.fn = begin.fn;
    end.idx = begin.idx;
    const auto t0 = Clock::now();
    const gpusweep_status st = f(end);
    end.status = st;
    end.status_name = status_name(st);
    end.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    out_.emit(end.to_json());
    return st;
  }

 private:
  EventWriter& out_;
};

}  // namespace

int run_plugin_check_worker(const WorkerArgs& args) {
  std::signal(SIGPIPE, SIG_IGN);
  EventWriter out(protect_protocol_fd(args.proto_fd));
  out.emit(event::Hello{::getpid()}.to_json());

  const LoadedPlugin plugin = load_and_announce(args.plugin_path, args.config_json, out);
  const gpusweep_plugin* t = plugin.table;

  Calls calls(out);
  gpusweep_instance* inst = nullptr;
  const gpusweep_status created = calls.call({"create", std::nullopt}, [&](event::End& end) {
    const gpusweep_status st = t->create(args.config_json.c_str(), &inst);
    end.instance = inst != nullptr;
    if (st != GPUSWEEP_STATUS_OK) end.message = std::string(t->error_message(nullptr));
    return st;
  });
  if (created != GPUSWEEP_STATUS_OK || inst == nullptr) {
    out.emit(event::Result::done());
    finish(0);
  }
  out.emit(event::Runtime{parse_or_raw(t->runtime()), std::nullopt}.to_json());

  auto error_of = [&](event::End& end, gpusweep_status st) {
    if (st != GPUSWEEP_STATUS_OK) end.message = std::string(t->error_message(inst));
    return st;
  };
  bool stepped = true;
  for (int64_t i = 0; i < args.check_steps && stepped; ++i) {
    const gpusweep_status st = calls.call({"step", i}, [&](event::End& end) {
      gpusweep_step_result r{};
      r.struct_size = sizeof r;
      const gpusweep_status s = t->step(inst, &r);
      end.samples = r.samples;
      end.secondary_samples = r.secondary_samples;
      return error_of(end, s);
    });
    stepped = st == GPUSWEEP_STATUS_OK;
  }
  if (stepped) {
    calls.call({"synchronize", std::nullopt},
               [&](event::End& end) { return error_of(end, t->synchronize(inst)); });
    calls.call({"evaluate", std::nullopt}, [&](event::End& end) {
      const char* metrics = nullptr;
      const gpusweep_status s = t->evaluate(inst, &metrics);
      if (s == GPUSWEEP_STATUS_OK) end.metrics = parse_or_raw(metrics);
      return error_of(end, s);
    });
    calls.call({"stats", std::nullopt}, [&](event::End& end) {
      const char* stats = nullptr;
      const gpusweep_status s = t->stats(inst, &stats);
      if (s == GPUSWEEP_STATUS_OK) end.stats = parse_or_raw(stats);
      return error_of(end, s);
    });
  }
  calls.call({"destroy", std::nullopt}, [&](event::End&) {
    t->destroy(inst);
    return GPUSWEEP_STATUS_OK;
  });
  out.emit(event::Result::done());
  // destroy() ran; the library itself is never unloaded (see loader.hpp).
  finish(0);
}

}  // namespace gpusweep::host
