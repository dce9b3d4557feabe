// A live worker on the runner's event loop: its protocol lines, its stdout
// drained and its stderr's tail kept, the timeout, the heartbeat watchdog
// and the monitor's samples.
#include "run/supervisor.hpp"

#include "protocol/event_payloads.hpp"
#include "protocol/events.hpp"
#include "run/monitor.hpp"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <nlohmann/json.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>

namespace gpusweep::host::detail {

namespace {

// The trial's resolved config, for the monitor (null if it does not parse:
// the worker refuses it anyway).
nlohmann::json parse_config(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  }
}

// Protocol lines longer than this mean a broken worker, not a big event.
constexpr size_t kMaxLine = 16 * 1024 * 1024;

}  // namespace

Worker::Worker(asio::io_context& io, TrialJob&& j, const SpawnedProcess& p)
    : job(std::move(j)),
      pid(p.pid),
      gate(p.gate_fd),
      proto(io, p.proto_fd),
      out(io, p.stdout_fd),
      err(io, p.stderr_fd),
      timer(io),
      watchdog(io),
      monitor_timer(io),
      monitor(p.pid, Nvml::shared(), parse_config(job.worker.config_json)) {
  budget_s = job.timeout_s;
}
Worker::~Worker() {
  if (gate >= 0) ::close(gate);
}

// Ends the worker when what is left of its timeout_s runs out.
void Supervisor::arm_timeout(Worker* w) {
  w->timer.expires_after(std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::max(0.0, w->budget_s))));
  w->timer.async_wait([w](const boost::system::error_code& ec) {
    if (ec || w->exited) return;
    w->exit.timed_out = true;
    ::kill(-w->pid, SIGKILL);
  });
}

// A reading now (so that even a short trial has one), then every interval.
void Supervisor::sample(Worker* w) {
  w->monitor.sample();
  w->monitor_timer.expires_after(std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(kMonitorIntervalS)));
  w->monitor_timer.async_wait([this, w](const boost::system::error_code& ec) {
    if (ec || w->exited) return;
    sample(w);
  });
}

// A live worker writes a heartbeat line twice a second whatever its plugin
// does; silence means the process is stopped, frozen or wedged, and there
// is no point in waiting out the whole timeout_s for it.
void Supervisor::watch(Worker* w) {
  const auto period = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::min(0.25, w->job.silence_s / 4)));
  w->watchdog.expires_after(period);
  w->watchdog.async_wait([this, w](const boost::system::error_code& ec) {
    if (ec || w->exited) return;
    const double quiet = std::chrono::duration<double>(Clock::now() - w->last_heard).count();
    if (quiet > w->job.silence_s) {
      w->exit.silent_s = quiet;
      ::kill(-w->pid, SIGKILL);
      return;
    }
    watch(w);
  });
}

void Supervisor::pipe_closed(Worker* w) {
  --w->open_pipes;
  maybe_finish(w->pid);
}

void Supervisor::read_proto(Worker* w) {
  w->proto.async_read_some(
      asio::buffer(w->proto_buf), [this, w](const boost::system::error_code& ec, size_t n) {
        if (ec) return pipe_closed(w);
        w->last_heard = Clock::now();
        w->line.append(w->proto_buf.data(), n);
        size_t start = 0;
        for (size_t nl; (nl = w->line.find('\n', start)) != std::string::npos; start = nl + 1) {
          const auto event = w->job.collector->on_line(w->line.substr(start, nl - start));
          if (!event) continue;
          w->monitor.on_event(*event);
          if (const auto* t = std::get_if<event::Target>(&*event)) note_target(w->job, *t);
          if (cb_.on_event) cb_.on_event(w->job, *event);
          const auto* await = std::get_if<event::Await>(&*event);
          if (w->gate >= 0 && await != nullptr) end_turn(w, await->unmeasured);
        }
        w->line.erase(0, start);
        if (w->line.size() > kMaxLine) {
          w->line.clear();
          ::kill(-w->pid, SIGKILL);
        }
        read_proto(w);
      });
}

void Supervisor::read_out(Worker* w) {
  // A plugin's stdout is drained (so it never blocks) and dropped.
  w->out.async_read_some(asio::buffer(w->out_buf),
                         [this, w](const boost::system::error_code& ec, size_t) {
                           if (ec) return pipe_closed(w);
                           read_out(w);
                         });
}

void Supervisor::read_err(Worker* w) {
  w->err.async_read_some(asio::buffer(w->err_buf),
                         [this, w](const boost::system::error_code& ec, size_t n) {
                           if (ec) return pipe_closed(w);
                           w->stderr_bytes += static_cast<int64_t>(n);
                           w->stderr_tail.append(w->err_buf.data(), n);
                           if (w->stderr_tail.size() > 2 * kStderrTailBytes) {
                             w->stderr_tail.erase(0, w->stderr_tail.size() - kStderrTailBytes);
                           }
                           read_err(w);
                         });
}

}  // namespace gpusweep::host::detail
