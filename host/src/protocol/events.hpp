// The worker's events: one JSON object per line on the protocol pipe, each
// with "event" set to its name. The worker writes them (event_writer.hpp);
// the host decodes each line once, into an Event, and the collector,
// progress, the monitor, probe commands and plugin checks take that. Each
// event's fields are its typed payload's (event_payloads.hpp).
#pragma once

#include "protocol/event_payloads.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <variant>
#include <vector>

namespace gpusweep::host::event {

// An event of a name the host does not know (a newer worker's), kept whole.
struct Other {
  std::string name;
  nlohmann::json json;
};

using Event =
    std::variant<Hello, Heartbeat, Loaded, Probe, MemoryCap, Phase, Runtime, StatsSnapshot,
                 WarmupDone, Eval, Block, Target, Await, Stats, Result, Begin, End, Other>;

// An event's name ("" when it has none).
std::string kind(const nlohmann::json& e);
const char* kind(const Event& e);

// A protocol object decoded by its name into its payload.
Event decode(const nlohmann::json& e);
// The event as the worker writes it.
nlohmann::json encode(const Event& e);

// The events in protocol text, in order, decoded; a torn last line (a
// worker that died mid-write) and anything else that is not a JSON object
// is skipped.
std::vector<Event> parse(const std::string& text);

}  // namespace gpusweep::host::event
