// Typed event payloads; see event_payloads.hpp.
#include "protocol/event_payloads.hpp"

#include "protocol/events.hpp"

namespace gpusweep::host::event {

namespace {

using Json = nlohmann::json;

template <class T>
std::optional<T> get(const Json& e, const char* key) {
  const auto it = e.find(key);
  if (it == e.end()) return std::nullopt;
  if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) return std::nullopt;
  } else if constexpr (std::is_arithmetic_v<T>) {
    if (!it->is_number()) return std::nullopt;
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return std::nullopt;
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    if (!it->is_array()) return std::nullopt;
    for (const auto& v : *it) {
      if (!v.is_string()) return std::nullopt;
    }
  } else {
    if (!it->is_array()) return std::nullopt;
    for (const auto& v : *it) {
      if (!v.is_number()) return std::nullopt;
    }
  }
  return it->get<T>();
}

template <class T>
void put(Json& e, const char* key, const std::optional<T>& v) {
  if (v) e[key] = *v;
}

}  // namespace

Json Target::to_json() const {
  Json e = {{"event", event::target}, {"reached", reached}, {"diverged", diverged},
            {"at_step", at_step},     {"train_s", train_s}, {"evaluations", evaluations},
            {"eval_s", eval_s},       {"metric", metric},   {"value", value}};
  put(e, "time_s", time_s);
  if (capped) e["capped"] = true;
  put(e, "cap_s", cap_s);
  return e;
}

Target Target::from_json(const Json& e) {
  Target t;
  t.reached = get<bool>(e, "reached").value_or(false);
  t.diverged = get<bool>(e, "diverged").value_or(false);
  t.capped = get<bool>(e, "capped").value_or(false);
  t.time_s = get<double>(e, "time_s");
  t.at_step = get<int64_t>(e, "at_step").value_or(0);
  t.train_s = get<double>(e, "train_s").value_or(0);
  t.evaluations = get<int64_t>(e, "evaluations").value_or(0);
  t.eval_s = get<double>(e, "eval_s").value_or(0);
  t.metric = get<std::string>(e, "metric").value_or("");
  t.value = get<double>(e, "value").value_or(0);
  t.cap_s = get<double>(e, "cap_s");
  return t;
}

Json WarmupDone::to_json() const {
  Json e = {{"event", event::warmup_done}};
  put(e, "seconds", seconds);
  put(e, "first_step_s", first_step_s);
  put(e, "block_steps", block_steps);
  if (windows) {
    put(e, "window_steps", window_steps);
    e["windows"] = *windows;
    e["stable"] = stable;
  }
  put(e, "gpu_busy_share", gpu_busy_share);
  return e;
}

WarmupDone WarmupDone::from_json(const Json& e) {
  WarmupDone w;
  w.seconds = get<double>(e, "seconds");
  w.first_step_s = get<double>(e, "first_step_s");
  w.block_steps = get<int64_t>(e, "block_steps");
  w.window_steps = get<int64_t>(e, "window_steps");
  w.windows = get<std::vector<double>>(e, "windows");
  w.stable = get<bool>(e, "stable").value_or(false);
  w.gpu_busy_share = get<double>(e, "gpu_busy_share");
  return w;
}

Json Block::to_json() const {
  Json e = {{"event", event::block}, {"idx", idx},
            {"steps", steps},        {"seconds", seconds},
            {"samples", samples},    {"secondary_samples", secondary_samples}};
  put(e, "device_seconds", device_seconds);
  put(e, "rank_seconds", rank_seconds);
  return e;
}

Block Block::from_json(const Json& e) {
  Block b;
  b.idx = get<int64_t>(e, "idx").value_or(0);
  b.steps = get<int64_t>(e, "steps").value_or(0);
  b.seconds = get<double>(e, "seconds").value_or(0);
  b.samples = get<double>(e, "samples").value_or(0);
  b.secondary_samples = get<double>(e, "secondary_samples").value_or(0);
  b.device_seconds = get<double>(e, "device_seconds");
  b.rank_seconds = get<std::vector<double>>(e, "rank_seconds");
  return b;
}

Json Eval::to_json() const {
  Json e = {
      {"event", event::eval}, {"at_step", at_step}, {"seconds", seconds}, {"metrics", metrics}};
  put(e, "train_s", train_s);
  put(e, "samples", samples);
  return e;
}

Eval Eval::from_json(const Json& e) {
  Eval v;
  v.at_step = get<int64_t>(e, "at_step").value_or(0);
  v.seconds = get<double>(e, "seconds").value_or(0);
  if (const auto it = e.find("metrics"); it != e.end()) v.metrics = *it;
  v.train_s = get<double>(e, "train_s");
  v.samples = get<double>(e, "samples");
  return v;
}

Json Result::to_json() const {
  Json e = {{"event", event::result}, {"status", status}};
  if (!phase.empty()) e["phase"] = phase;
  put(e, "at_step", at_step);
  put(e, "steps", steps);
  put(e, "message", message);
  put(e, "reason", reason);
  return e;
}

Json Result::failed(const std::string& phase, const std::string& message) {
  Result r;
  r.phase = phase;
  r.message = message;
  return r.to_json();
}

Json Result::done() {
  Result r;
  r.status = "done";
  return r.to_json();
}

Result Result::from_json(const Json& e) {
  Result r;
  r.status = get<std::string>(e, "status").value_or("failed");
  r.phase = get<std::string>(e, "phase").value_or("");
  r.at_step = get<int64_t>(e, "at_step");
  r.steps = get<int64_t>(e, "steps");
  r.message = get<std::string>(e, "message");
  r.reason = get<std::string>(e, "reason");
  return r;
}

Json Phase::to_json() const {
  Json e = {{"event", event::phase}, {"phase", phase}};
  put(e, "steps", steps);
  put(e, "blocks", blocks);
  put(e, "target", target);
  return e;
}

Phase Phase::from_json(const Json& e) {
  Phase p;
  p.phase = get<std::string>(e, "phase").value_or("");
  p.steps = get<int64_t>(e, "steps");
  p.blocks = get<int64_t>(e, "blocks");
  if (const auto it = e.find("target"); it != e.end()) p.target = *it;
  return p;
}

Json Stats::to_json() const {
  if (at_step) return {{"event", event::stats_snapshot}, {"at_step", *at_step}, {"stats", stats}};
  return {{"event", event::stats}, {"stats", stats}};
}

Stats Stats::from_json(const Json& e) {
  Stats s;
  if (const auto it = e.find("stats"); it != e.end() && it->is_object()) s.stats = *it;
  s.at_step = get<int64_t>(e, "at_step");
  return s;
}

Json Runtime::to_json() const {
  Json e = {{"event", event::runtime}, {"runtime", runtime}};
  put(e, "setup_s", setup_s);
  return e;
}

Runtime Runtime::from_json(const Json& e) {
  Runtime r;
  if (const auto it = e.find("runtime"); it != e.end() && it->is_object()) r.runtime = *it;
  r.setup_s = get<double>(e, "setup_s");
  return r;
}

Json Hello::to_json() const { return {{"event", event::hello}, {"pid", pid}}; }

Hello Hello::from_json(const Json& e) { return {get<int64_t>(e, "pid").value_or(0)}; }

Json Heartbeat::to_json() const { return {{"event", event::heartbeat}}; }

Heartbeat Heartbeat::from_json(const Json&) { return {}; }

Json Loaded::to_json() const {
  Json e = {{"event", event::loaded},
            {"struct_size", struct_size},
            {"manifest", manifest},
            {"runtime", runtime}};
  put(e, "abi", abi);
  return e;
}

Loaded Loaded::from_json(const Json& e) {
  Loaded l;
  l.abi = get<std::string>(e, "abi");
  l.struct_size = get<int64_t>(e, "struct_size").value_or(0);
  if (const auto it = e.find("manifest"); it != e.end()) l.manifest = *it;
  if (const auto it = e.find("runtime"); it != e.end() && it->is_object()) l.runtime = *it;
  return l;
}

Json Probe::to_json() const {
  Json e = {{"event", event::probe}};
  put(e, "libraries", libraries);
  put(e, "matmul", matmul);
  return e;
}

Probe Probe::from_json(const Json& e) {
  Probe p;
  p.libraries = get<std::vector<std::string>>(e, "libraries");
  if (const auto it = e.find("matmul"); it != e.end()) p.matmul = *it;
  return p;
}

Json MemoryCap::to_json() const {
  Json e = extra.is_object() ? extra : Json::object();
  e["event"] = event::memory_cap;
  e["kind"] = kind;
  put(e, "cap_bytes", cap_bytes);
  put(e, "baseline_bytes", baseline_bytes);
  put(e, "limit_bytes", limit_bytes);
  put(e, "fraction", fraction);
  return e;
}

MemoryCap MemoryCap::from_json(const Json& e) {
  MemoryCap m;
  if (e.is_object()) m.extra = e;
  m.extra.erase("event");
  // A named field leaves extra only when it reads: one of the wrong type
  // stays there as it came.
  const auto take = [&m](const char* key, auto v) {
    if (v) m.extra.erase(key);
    return v;
  };
  m.kind = take("kind", get<std::string>(e, "kind")).value_or("");
  m.cap_bytes = take("cap_bytes", get<double>(e, "cap_bytes"));
  m.baseline_bytes = take("baseline_bytes", get<double>(e, "baseline_bytes"));
  m.limit_bytes = take("limit_bytes", get<double>(e, "limit_bytes"));
  m.fraction = take("fraction", get<double>(e, "fraction"));
  return m;
}

Json Await::to_json() const {
  Json e = {{"event", event::await}, {"turn", turn}};
  if (unmeasured) e["unmeasured"] = true;
  return e;
}

Await Await::from_json(const Json& e) {
  Await a;
  a.turn = get<int64_t>(e, "turn").value_or(0);
  a.unmeasured = get<bool>(e, "unmeasured").value_or(false);
  return a;
}

Json Begin::to_json() const {
  Json e = {{"event", event::begin}, {"fn", fn}};
  put(e, "idx", idx);
  return e;
}

Begin Begin::from_json(const Json& e) {
  return {get<std::string>(e, "fn").value_or(""), get<int64_t>(e, "idx")};
}

Json End::to_json() const {
  Json e = {{"event", event::end},
            {"fn", fn},
            {"status", status},
            {"status_name", status_name},
            {"seconds", seconds}};
  put(e, "idx", idx);
  put(e, "message", message);
  put(e, "instance", instance);
  put(e, "samples", samples);
  put(e, "secondary_samples", secondary_samples);
  put(e, "metrics", metrics);
  put(e, "stats", stats);
  return e;
}

End End::from_json(const Json& e) {
  End c;
  c.fn = get<std::string>(e, "fn").value_or("");
  c.idx = get<int64_t>(e, "idx");
  c.status = get<int64_t>(e, "status").value_or(1);
  c.status_name = get<std::string>(e, "status_name").value_or("failed");
  c.seconds = get<double>(e, "seconds").value_or(0);
  c.message = get<std::string>(e, "message");
  c.instance = get<bool>(e, "instance");
  c.samples = get<double>(e, "samples");
  c.secondary_samples = get<double>(e, "secondary_samples");
  if (const auto it = e.find("metrics"); it != e.end()) c.metrics = *it;
  if (const auto it = e.find("stats"); it != e.end()) c.stats = *it;
  return c;
}

}  // namespace gpusweep::host::event
