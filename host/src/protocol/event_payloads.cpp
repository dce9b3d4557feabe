// Typed event payloads; see event_payloads.hpp.
#include "protocol/event_payloads.hpp"

#include <tuple>
#include <type_traits>

namespace gpusweep::host::event {

namespace {

using Json = nlohmann::json;

// One field of a payload: its key and member. A sparse one is written only
// when set (true, or not empty); an object one reads only an object.
template <class S, class M>
struct Field {
  const char* key;
  M S::*member;
  bool sparse = false;
  bool object = false;
};

template <class S, class M>
constexpr Field<S, M> field(const char* key, M S::*m) {
  return {key, m};
}
template <class S, class M>
constexpr Field<S, M> sparse(const char* key, M S::*m) {
  return {key, m, true};
}
template <class S, class M>
constexpr Field<S, M> object(const char* key, M S::*m) {
  return {key, m, false, true};
}

// Each payload's fields, once. MemoryCap's other fields ride in `extra`;
// WarmupDone's windows, window steps and stability come together.
auto fields(const Target*) {
  return std::make_tuple(field("reached", &Target::reached), field("diverged", &Target::diverged),
                         sparse("capped", &Target::capped), field("time_s", &Target::time_s),
                         field("at_step", &Target::at_step), field("train_s", &Target::train_s),
                         field("evaluations", &Target::evaluations),
                         field("eval_s", &Target::eval_s), field("metric", &Target::metric),
                         field("value", &Target::value), field("cap_s", &Target::cap_s));
}
auto fields(const WarmupDone*) {
  return std::make_tuple(
      field("seconds", &WarmupDone::seconds), field("first_step_s", &WarmupDone::first_step_s),
      field("block_steps", &WarmupDone::block_steps),
      field("window_steps", &WarmupDone::window_steps), field("windows", &WarmupDone::windows),
      sparse("stable", &WarmupDone::stable), field("gpu_busy_share", &WarmupDone::gpu_busy_share));
}
auto fields(const Block*) {
  return std::make_tuple(
      field("idx", &Block::idx), field("steps", &Block::steps), field("seconds", &Block::seconds),
      field("samples", &Block::samples), field("secondary_samples", &Block::secondary_samples),
      field("device_seconds", &Block::device_seconds), field("rank_seconds", &Block::rank_seconds));
}
auto fields(const Eval*) {
  return std::make_tuple(field("at_step", &Eval::at_step), field("seconds", &Eval::seconds),
                         field("metrics", &Eval::metrics), field("train_s", &Eval::train_s),
                         field("samples", &Eval::samples));
}
auto fields(const Result*) {
  return std::make_tuple(field("status", &Result::status), field("phase", &Result::phase),
                         field("at_step", &Result::at_step), field("steps", &Result::steps),
                         field("message", &Result::message), field("reason", &Result::reason));
}
auto fields(const Phase*) {
  return std::make_tuple(field("phase", &Phase::phase), field("steps", &Phase::steps),
                         field("blocks", &Phase::blocks), field("target", &Phase::target));
}
auto fields(const Stats*) { return std::make_tuple(object("stats", &Stats::stats)); }
auto fields(const StatsSnapshot*) {
  return std::make_tuple(field("at_step", &StatsSnapshot::at_step),
                         object("stats", &StatsSnapshot::stats));
}
auto fields(const Runtime*) {
  return std::make_tuple(field("runtime", &Runtime::runtime), field("setup_s", &Runtime::setup_s));
}
auto fields(const Hello*) { return std::make_tuple(field("pid", &Hello::pid)); }
auto fields(const Heartbeat*) { return std::make_tuple(); }
auto fields(const Loaded*) {
  return std::make_tuple(field("abi", &Loaded::abi), field("struct_size", &Loaded::struct_size),
                         field("manifest", &Loaded::manifest), object("runtime", &Loaded::runtime));
}
auto fields(const Probe*) {
  return std::make_tuple(field("libraries", &Probe::libraries), field("matmul", &Probe::matmul));
}
auto fields(const MemoryCap*) {
  return std::make_tuple(field("kind", &MemoryCap::kind), field("cap_bytes", &MemoryCap::cap_bytes),
                         field("baseline_bytes", &MemoryCap::baseline_bytes),
                         field("limit_bytes", &MemoryCap::limit_bytes),
                         field("fraction", &MemoryCap::fraction));
}
auto fields(const Await*) {
  return std::make_tuple(field("turn", &Await::turn), sparse("unmeasured", &Await::unmeasured));
}
auto fields(const Begin*) {
  return std::make_tuple(field("fn", &Begin::fn), field("idx", &Begin::idx));
}
auto fields(const End*) {
  return std::make_tuple(field("fn", &End::fn), field("idx", &End::idx),
                         field("status", &End::status), field("status_name", &End::status_name),
                         field("seconds", &End::seconds), field("message", &End::message),
                         field("instance", &End::instance), field("samples", &End::samples),
                         field("secondary_samples", &End::secondary_samples),
                         field("metrics", &End::metrics), field("stats", &End::stats));
}

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

// Whether a value of the wire reads as T; the value when it does.
template <class T>
std::optional<T> as(const Json& v) {
  if constexpr (std::is_same_v<T, Json>) {
    return v;
  } else if constexpr (std::is_same_v<T, host::Phase>) {
    return v.is_string() ? phase_of(v.get<std::string>()) : std::nullopt;
  } else if constexpr (std::is_same_v<T, bool>) {
    return v.is_boolean() ? std::optional<T>(v.get<T>()) : std::nullopt;
  } else if constexpr (std::is_arithmetic_v<T>) {
    return v.is_number() ? std::optional<T>(v.get<T>()) : std::nullopt;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return v.is_string() ? std::optional<T>(v.get<T>()) : std::nullopt;
  } else {
    // A vector: of numbers or of strings, each element the type.
    if (!v.is_array()) return std::nullopt;
    for (const auto& x : v) {
      if (!as<typename T::value_type>(x)) return std::nullopt;
    }
    return v.get<T>();
  }
}

// Reads the field into its member; false when it is missing or of another
// type (the member keeps its default).
template <class S, class M>
bool take(const Json& e, const Field<S, M>& f, S& s) {
  const auto it = e.find(f.key);
  if (it == e.end() || (f.object && !it->is_object())) return false;
  if constexpr (is_optional<M>::value) {
    s.*f.member = as<typename M::value_type>(*it);
    return (s.*f.member).has_value();
  } else {
    auto v = as<M>(*it);
    if (v) s.*f.member = std::move(*v);
    return v.has_value();
  }
}

template <class M>
void put_value(Json& e, const char* key, const M& v) {
  if constexpr (std::is_same_v<M, host::Phase>) {
    e[key] = phase_name(v);
  } else {
    e[key] = v;
  }
}

template <class S, class M>
void put(Json& e, const Field<S, M>& f, const S& s) {
  const M& v = s.*f.member;
  if constexpr (is_optional<M>::value) {
    if (v) put_value(e, f.key, *v);
  } else if constexpr (std::is_same_v<M, bool>) {
    if (v || !f.sparse) e[f.key] = v;
  } else {
    put_value(e, f.key, v);
  }
}

template <class S>
Json write(const S& s, Json e = Json::object()) {
  e["event"] = S::name;
  std::apply([&](const auto&... f) { (put(e, f, s), ...); }, fields(&s));
  return e;
}

template <class S>
S read(const Json& e, Json* rest = nullptr) {
  S s;
  std::apply(
      [&](const auto&... f) {
        ((take(e, f, s) && rest != nullptr ? (void)rest->erase(f.key) : (void)0), ...);
      },
      fields(&s));
  return s;
}

}  // namespace

#define GPUSWEEP_EVENT_JSON(S)                     \
  Json S::to_json() const { return write(*this); } \
  S S::from_json(const Json& e) { return read<S>(e); }

GPUSWEEP_EVENT_JSON(Target)
GPUSWEEP_EVENT_JSON(Block)
GPUSWEEP_EVENT_JSON(Eval)
GPUSWEEP_EVENT_JSON(Result)
GPUSWEEP_EVENT_JSON(Phase)
GPUSWEEP_EVENT_JSON(Stats)
GPUSWEEP_EVENT_JSON(StatsSnapshot)
GPUSWEEP_EVENT_JSON(Runtime)
GPUSWEEP_EVENT_JSON(Hello)
GPUSWEEP_EVENT_JSON(Heartbeat)
GPUSWEEP_EVENT_JSON(Loaded)
GPUSWEEP_EVENT_JSON(Probe)
GPUSWEEP_EVENT_JSON(Await)
GPUSWEEP_EVENT_JSON(Begin)
GPUSWEEP_EVENT_JSON(End)

#undef GPUSWEEP_EVENT_JSON

// Windows, their steps and whether they agreed are written together, only
// when warmup timed windows.
Json WarmupDone::to_json() const {
  WarmupDone w = *this;
  if (!w.windows) {
    w.window_steps.reset();
    w.stable = false;
  }
  return write(w);
}

WarmupDone WarmupDone::from_json(const Json& e) { return read<WarmupDone>(e); }

// The named fields over the plugin's report; a named field leaves extra
// only when it reads: one of the wrong type stays there as it came.
Json MemoryCap::to_json() const { return write(*this, extra.is_object() ? extra : Json::object()); }

MemoryCap MemoryCap::from_json(const Json& e) {
  Json rest = e.is_object() ? e : Json::object();
  rest.erase("event");
  MemoryCap m = read<MemoryCap>(e, &rest);
  m.extra = std::move(rest);
  return m;
}

Json Result::failed(host::Phase phase, const std::string& message) {
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

}  // namespace gpusweep::host::event
