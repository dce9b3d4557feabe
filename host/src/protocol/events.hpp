// The worker's events: one JSON object per line on the protocol pipe, each
// with "event" set to one of these names. The worker writes them
// (event_writer.hpp); the host's collector, progress, probe commands and
// plugin checks read them. Each event's fields are its typed payload's
// (event_payloads.hpp), which both sides use: the list lives there alone.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gpusweep::host::event {

inline constexpr char hello[] = "hello";
inline constexpr char heartbeat[] = "heartbeat";
inline constexpr char loaded[] = "loaded";
inline constexpr char probe[] = "probe";
inline constexpr char memory_cap[] = "memory_cap";
inline constexpr char phase[] = "phase";
inline constexpr char runtime[] = "runtime";
inline constexpr char stats_snapshot[] = "stats_snapshot";
inline constexpr char warmup_done[] = "warmup_done";
inline constexpr char eval[] = "eval";
inline constexpr char block[] = "block";
inline constexpr char target[] = "target";
inline constexpr char await[] = "await";
inline constexpr char stats[] = "stats";
inline constexpr char result[] = "result";
inline constexpr char begin[] = "begin";
inline constexpr char end[] = "end";

// An event's name ("" when it has none).
std::string kind(const nlohmann::json& e);

// The events in protocol text, in order; a torn last line (a worker that
// died mid-write) and anything else that is not JSON is skipped.
std::vector<nlohmann::json> parse(const std::string& text);

}  // namespace gpusweep::host::event
