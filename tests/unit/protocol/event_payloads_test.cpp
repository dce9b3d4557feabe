// The worker's typed event payloads: what to_json writes, from_json reads
// back, field for field; what a writer leaves out reads as its default.
#include "protocol/event_payloads.hpp"
#include "protocol/events.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace gpusweep::host;
using Json = nlohmann::json;

TEST_CASE("a target event round-trips, capped or not", "[protocol]") {
  event::Target t;
  t.reached = true;
  t.time_s = 12.5;
  t.at_step = 400;
  t.train_s = 13;
  t.evaluations = 7;
  t.eval_s = 0.8;
  t.metric = "val_loss";
  t.value = 0.25;
  const Json j = t.to_json();
  CHECK(event::kind(j) == event::target);
  CHECK_FALSE(j.contains("capped"));  // only when it was
  const auto back = event::Target::from_json(j);
  CHECK(back.reached);
  CHECK(back.time_s == 12.5);
  CHECK(back.at_step == 400);
  CHECK(back.train_s == 13);
  CHECK(back.evaluations == 7);
  CHECK(back.eval_s == 0.8);
  CHECK(back.metric == "val_loss");
  CHECK(back.value == 0.25);
  CHECK_FALSE(back.capped);
  CHECK_FALSE(back.cap_s);

  t.reached = false;
  t.diverged = true;
  t.capped = true;
  t.cap_s = 20;
  const auto capped = event::Target::from_json(t.to_json());
  CHECK(capped.diverged);
  CHECK(capped.capped);
  CHECK(capped.cap_s == 20);
  CHECK(capped.to_json() == t.to_json());
}

TEST_CASE("a warmup_done event round-trips, its windows only when timed", "[protocol]") {
  event::WarmupDone w;
  w.seconds = 1.5;
  w.first_step_s = 0.3;
  w.block_steps = 64;
  const Json plain = w.to_json();
  CHECK(event::kind(plain) == event::warmup_done);
  CHECK_FALSE(plain.contains("windows"));
  CHECK_FALSE(plain.contains("stable"));
  const auto back = event::WarmupDone::from_json(plain);
  CHECK(back.seconds == 1.5);
  CHECK(back.first_step_s == 0.3);
  CHECK(back.block_steps == 64);
  CHECK_FALSE(back.windows);
  CHECK_FALSE(back.gpu_busy_share);

  w.window_steps = 16;
  w.windows = std::vector<double>{0.1, 0.11, 0.1};
  w.stable = true;
  w.gpu_busy_share = 0.4;
  const auto timed = event::WarmupDone::from_json(w.to_json());
  CHECK(timed.window_steps == 16);
  CHECK(timed.windows == std::vector<double>{0.1, 0.11, 0.1});
  CHECK(timed.stable);
  CHECK(timed.gpu_busy_share == 0.4);
  CHECK(timed.to_json() == w.to_json());
}

TEST_CASE("a payload field of the wrong type reads as missing, not as a crash", "[protocol]") {
  const auto t = event::Target::from_json(
      {{"event", "target"}, {"time_s", "soon"}, {"reached", 1}, {"evaluations", "x"}});
  CHECK_FALSE(t.time_s);
  CHECK_FALSE(t.reached);
  CHECK(t.evaluations == 0);
  const auto w = event::WarmupDone::from_json({{"windows", {0.1, "x"}}, {"seconds", nullptr}});
  CHECK_FALSE(w.windows);
  CHECK_FALSE(w.seconds);
}

TEST_CASE("a block event round-trips, with its device clock and ranks when it has them",
          "[protocol]") {
  event::Block b;
  b.idx = 3;
  b.steps = 20;
  b.seconds = 0.5;
  b.samples = 640;
  b.secondary_samples = 64;
  const Json plain = b.to_json();
  CHECK(event::kind(plain) == event::block);
  CHECK_FALSE(plain.contains("device_seconds"));
  auto back = event::Block::from_json(plain);
  CHECK(back.idx == 3);
  CHECK(back.steps == 20);
  CHECK(back.seconds == 0.5);
  CHECK(back.samples == 640);
  CHECK(back.secondary_samples == 64);
  CHECK_FALSE(back.device_seconds);
  b.device_seconds = 0.45;
  b.rank_seconds = std::vector<double>{0.5, 0.48};  // fixed values: the field's round trip
  back = event::Block::from_json(b.to_json());
  CHECK(back.device_seconds == 0.45);
  CHECK(back.rank_seconds == b.rank_seconds);
  CHECK(back.to_json() == b.to_json());
}

TEST_CASE("an eval event round-trips its metrics as the plugin gave them, and its clock",
          "[protocol]") {
  event::Eval e;
  e.at_step = 100;
  e.seconds = 0.2;
  e.metrics = {{"val_loss", 0.5}, {"val_loss_se", 0.01}, {"note", "text"}};
  const Json plain = e.to_json();
  CHECK_FALSE(plain.contains("train_s"));
  auto back = event::Eval::from_json(plain);
  CHECK(back.at_step == 100);
  CHECK(back.seconds == 0.2);
  CHECK(back.metrics == e.metrics);
  CHECK_FALSE(back.train_s);
  e.train_s = 12;
  e.samples = 6400;
  back = event::Eval::from_json(e.to_json());
  CHECK(back.train_s == 12);
  CHECK(back.samples == 6400);
  CHECK(back.to_json() == e.to_json());
}

TEST_CASE("a result event round-trips, ok or failed, and a failure says where and why",
          "[protocol]") {
  event::Result ok;
  ok.status = "ok";
  ok.steps = 120;
  const Json j = ok.to_json();
  CHECK(event::kind(j) == event::result);
  CHECK_FALSE(j.contains("message"));
  auto back = event::Result::from_json(j);
  CHECK(back.status == "ok");
  CHECK(back.steps == 120);
  CHECK_FALSE(back.phase);

  const auto failed = event::Result::from_json(event::Result::failed(Phase::setup, "no GPU"));
  CHECK(failed.status == "failed");
  CHECK(failed.phase == Phase::setup);
  CHECK(failed.message == "no GPU");
  CHECK(event::Result::from_json(event::Result::done()).status == "done");

  event::Result full;
  full.status = "oom";
  full.phase = Phase::measure;
  full.at_step = 40;
  full.message = "CUDA out of memory";
  full.reason = "r";
  CHECK(event::Result::from_json(full.to_json()).to_json() == full.to_json());
  // A result with no status is a failure, as the host has always read it.
  CHECK(event::Result::from_json({{"event", "result"}}).status == "failed");
}

TEST_CASE("phase, stats and runtime events round-trip, a snapshot as its own event", "[protocol]") {
  const event::Phase warmup{Phase::warmup, 12};
  CHECK(event::kind(warmup.to_json()) == event::phase);
  auto phase = event::Phase::from_json(warmup.to_json());
  CHECK(phase.phase == Phase::warmup);
  CHECK(warmup.to_json().at("phase") == "warmup");
  CHECK(phase.steps == 12);
  CHECK_FALSE(phase.blocks);
  const event::Phase to_target{Phase::measure, std::nullopt, std::nullopt, Json{{"value", 0.9}}};
  phase = event::Phase::from_json(to_target.to_json());
  CHECK(phase.target == Json{{"value", 0.9}});
  CHECK(phase.to_json() == to_target.to_json());

  const event::Stats last{{{"peak_memory_bytes", 1e6}}};
  CHECK(event::kind(last.to_json()) == event::stats);
  const event::StatsSnapshot snapshot{{{"input_wait_s", 0.3}}, 40};
  CHECK(event::kind(snapshot.to_json()) == event::stats_snapshot);
  const auto back = event::StatsSnapshot::from_json(snapshot.to_json());
  CHECK(back.at_step == 40);
  CHECK(back.stats == Json{{"input_wait_s", 0.3}});
  CHECK(event::Stats::from_json(last.to_json()).stats == last.stats);

  const event::Runtime runtime{{{"torch_version", "2.15.0"}, {"threads", 2}}, 0.25};
  const auto r = event::Runtime::from_json(runtime.to_json());
  CHECK(r.runtime.at("threads") == 2);
  CHECK(r.setup_s == 0.25);
  // A loaded event's runtime reads the same way, without a setup time.
  CHECK_FALSE(event::Runtime::from_json({{"event", "loaded"}, {"runtime", {{"a", 1}}}}).setup_s);
}

TEST_CASE("hello, heartbeat and await events round-trip", "[protocol]") {
  const Json hello = event::Hello{4242}.to_json();
  CHECK(hello == Json{{"event", "hello"}, {"pid", 4242}});
  CHECK(event::Hello::from_json(hello).pid == 4242);
  CHECK(event::Hello::from_json({{"event", "hello"}}).pid == 0);

  CHECK(event::Heartbeat{}.to_json() == Json{{"event", "heartbeat"}});
  CHECK(event::Heartbeat::from_json(event::Heartbeat{}.to_json()).to_json() ==
        event::Heartbeat{}.to_json());

  const Json measured = event::Await{3}.to_json();
  CHECK(measured == Json{{"event", "await"}, {"turn", 3}});  // unmeasured only when it is
  CHECK(event::Await::from_json(measured).turn == 3);
  CHECK_FALSE(event::Await::from_json(measured).unmeasured);
  const event::Await first{0, true};
  CHECK(first.to_json().at("unmeasured") == true);
  CHECK(event::Await::from_json(first.to_json()).unmeasured);
  CHECK(event::Await::from_json(first.to_json()).to_json() == first.to_json());
  // An older worker's await, or one of the wrong type: a measured turn.
  CHECK_FALSE(event::Await::from_json({{"event", "await"}, {"unmeasured", "yes"}}).unmeasured);
}

TEST_CASE("a loaded event round-trips and what it leaves out reads as missing", "[protocol]") {
  event::Loaded l;
  l.abi = "1.4";
  l.struct_size = 128;
  l.manifest = {{"name", "dqn"}, {"version", "1"}};
  l.runtime = {{"torch_version", "2.15.0"}};
  const Json j = l.to_json();
  CHECK(j == Json{{"event", "loaded"},
                  {"abi", "1.4"},
                  {"struct_size", 128},
                  {"manifest", {{"name", "dqn"}, {"version", "1"}}},
                  {"runtime", {{"torch_version", "2.15.0"}}}});
  const auto back = event::Loaded::from_json(j);
  CHECK(back.abi == "1.4");
  CHECK(back.struct_size == 128);
  CHECK(back.manifest == l.manifest);
  CHECK(back.runtime == l.runtime);
  CHECK(back.to_json() == j);

  // The readers' defaults: no ABI (plugins --check says "?"), a null
  // manifest (a bad one), an empty runtime; a runtime that is no object
  // (a plugin's null) reads as empty.
  const auto bare = event::Loaded::from_json({{"event", "loaded"}, {"runtime", nullptr}});
  CHECK_FALSE(bare.abi);
  CHECK(bare.struct_size == 0);
  CHECK(bare.manifest.is_null());
  CHECK(bare.runtime == Json::object());
  // A plugin's runtime() returning null is written as it was.
  event::Loaded null_runtime;
  null_runtime.runtime = nullptr;
  CHECK(null_runtime.to_json().at("runtime").is_null());
}

TEST_CASE("a probe event round-trips doctor's libraries and a matmul peak, null included",
          "[protocol]") {
  event::Probe doctor;
  doctor.libraries = std::vector<std::string>{"/t/libtorch_cpu.so", "/t/libgomp.so.1"};
  doctor.matmul = Json::array({{{"dtype", "float32"}, {"tflops", 1.5}}});
  const auto back = event::Probe::from_json(doctor.to_json());
  CHECK(back.libraries == doctor.libraries);
  CHECK(back.matmul == doctor.matmul);
  CHECK(back.to_json() == doctor.to_json());

  // A trial's probe: matmul alone, null when the plugin has no probe.
  event::Probe trial;
  trial.matmul = Json();
  const Json j = trial.to_json();
  CHECK(j == Json{{"event", "probe"}, {"matmul", nullptr}});
  const auto read = event::Probe::from_json(j);
  CHECK_FALSE(read.libraries);
  REQUIRE(read.matmul);
  CHECK(read.matmul->is_null());
  // Left out: no matmul at all (the readers' null).
  CHECK_FALSE(event::Probe::from_json({{"event", "probe"}}).matmul);
  CHECK_FALSE(event::Probe::from_json({{"libraries", {"a", 1}}}).libraries);
}

TEST_CASE("a memory_cap event round-trips either cap, a plugin's report as it gave it",
          "[protocol]") {
  event::MemoryCap as;
  as.kind = "address_space";
  as.cap_bytes = 2e9;
  as.baseline_bytes = 1e8;
  as.limit_bytes = 2.1e9;
  const Json j = as.to_json();
  CHECK(j == Json{{"event", "memory_cap"},
                  {"kind", "address_space"},
                  {"cap_bytes", 2e9},
                  {"baseline_bytes", 1e8},
                  {"limit_bytes", 2.1e9}});
  const auto back = event::MemoryCap::from_json(j);
  CHECK(back.kind == "address_space");
  CHECK(back.cap_bytes == 2e9);
  CHECK(back.baseline_bytes == 1e8);
  CHECK(back.limit_bytes == 2.1e9);
  CHECK_FALSE(back.fraction);
  CHECK(back.extra == Json::object());
  CHECK(back.to_json() == j);

  // The worker writes the plugin's report with its own kind and cap over it.
  event::MemoryCap device;
  device.extra = {{"device", "cuda:0"},
                  {"limit_bytes", 4e9},
                  {"device_bytes", 8e10},
                  {"fraction", 0.05},
                  {"kind", "plugin's"}};
  device.kind = "device";
  device.cap_bytes = 4e9;
  const Json d = device.to_json();
  CHECK(d == Json{{"event", "memory_cap"},
                  {"kind", "device"},
                  {"cap_bytes", 4e9},
                  {"device", "cuda:0"},
                  {"limit_bytes", 4e9},
                  {"device_bytes", 8e10},
                  {"fraction", 0.05}});
  const auto read = event::MemoryCap::from_json(d);
  CHECK(read.kind == "device");
  CHECK(read.cap_bytes == 4e9);
  CHECK(read.fraction == 0.05);
  CHECK(read.limit_bytes == 4e9);
  CHECK(read.extra == Json{{"device", "cuda:0"}, {"device_bytes", 8e10}});
  CHECK(read.to_json() == d);

  // Left out, or of the wrong type: no kind, no cap, no fraction; a plugin's
  // odd field stays as it came.
  const auto bare = event::MemoryCap::from_json({{"event", "memory_cap"}, {"fraction", "x"}});
  CHECK(bare.kind.empty());
  CHECK_FALSE(bare.cap_bytes);
  CHECK_FALSE(bare.fraction);
  CHECK(bare.extra == Json{{"fraction", "x"}});
}

TEST_CASE("begin and end events round-trip each call's fields", "[protocol]") {
  const event::Begin create{"create"};
  CHECK(create.to_json() == Json{{"event", "begin"}, {"fn", "create"}});
  const event::Begin step{"step", 2};
  const Json b = step.to_json();
  CHECK(b == Json{{"event", "begin"}, {"fn", "step"}, {"idx", 2}});
  const auto begin = event::Begin::from_json(b);
  CHECK(begin.fn == "step");
  CHECK(begin.idx == 2);
  CHECK(begin.to_json() == b);

  // A step that returned OK: its samples, and no message.
  event::End ok;
  ok.fn = "step";
  ok.idx = 2;
  ok.status = 0;
  ok.status_name = "ok";
  ok.seconds = 0.125;
  ok.samples = 64;
  ok.secondary_samples = 0;
  const Json e = ok.to_json();
  CHECK(e == Json{{"event", "end"},
                  {"fn", "step"},
                  {"idx", 2},
                  {"status", 0},
                  {"status_name", "ok"},
                  {"seconds", 0.125},
                  {"samples", 64.0},
                  {"secondary_samples", 0.0}});
  const auto back = event::End::from_json(e);
  CHECK(back.fn == "step");
  CHECK(back.idx == 2);
  CHECK(back.status == 0);
  CHECK(back.status_name == "ok");
  CHECK(back.seconds == 0.125);
  CHECK(back.samples == 64);
  CHECK(back.secondary_samples == 0);
  CHECK_FALSE(back.message);
  CHECK_FALSE(back.instance);
  CHECK_FALSE(back.metrics);
  CHECK_FALSE(back.stats);
  CHECK(back.to_json() == e);
  CHECK(back.call().to_json() == b);

  // create's instance, a failure's message (even an empty one), and
  // evaluate's and stats' JSON as the plugin gave it, null included.
  event::End failed;
  failed.fn = "create";
  failed.status = 3;
  failed.status_name = "skipped";
  failed.instance = false;
  failed.message = "";
  CHECK(failed.to_json().at("message") == "");
  CHECK(event::End::from_json(failed.to_json()).to_json() == failed.to_json());
  event::End evaluate;
  evaluate.fn = "evaluate";
  evaluate.status = 0;
  evaluate.status_name = "ok";
  evaluate.metrics = Json();
  evaluate.stats = Json{{"peak_memory_bytes", 1e6}};
  const Json v = evaluate.to_json();
  CHECK(v.at("metrics").is_null());
  const auto read = event::End::from_json(v);
  REQUIRE(read.metrics);
  CHECK(read.metrics->is_null());
  CHECK(read.stats == Json{{"peak_memory_bytes", 1e6}});
  CHECK(read.to_json() == v);
}

TEST_CASE("an end event's left-out fields read as the host has always read them", "[protocol]") {
  // No status is a failure, as is no status_name; the rest reads as none.
  const auto bare = event::End::from_json({{"event", "end"}});
  CHECK(bare.fn.empty());
  CHECK_FALSE(bare.idx);
  CHECK(bare.status == 1);
  CHECK(bare.status_name == "failed");
  CHECK(bare.seconds == 0);
  CHECK_FALSE(bare.message);
  CHECK_FALSE(bare.instance);
  CHECK_FALSE(bare.samples);
  CHECK_FALSE(bare.secondary_samples);
  CHECK_FALSE(bare.metrics);
  CHECK_FALSE(bare.stats);
  const auto begin = event::Begin::from_json({{"event", "begin"}});
  CHECK(begin.fn.empty());
  CHECK_FALSE(begin.idx);

  // A sample count that was not finite goes out as null and reads as none;
  // a field of the wrong type reads as missing.
  event::End nan_step;
  nan_step.fn = "step";
  nan_step.samples = std::nan("");
  const Json wire = Json::parse(nan_step.to_json().dump());
  CHECK(wire.at("samples").is_null());
  CHECK_FALSE(event::End::from_json(wire).samples);
  const auto odd = event::End::from_json(
      {{"fn", 3}, {"idx", "one"}, {"status", "ok"}, {"instance", 1}, {"seconds", "x"}});
  CHECK(odd.fn.empty());
  CHECK_FALSE(odd.idx);
  CHECK(odd.status == 1);
  CHECK_FALSE(odd.instance);
  CHECK(odd.seconds == 0);
}

TEST_CASE("a protocol object decodes once into its event, an unknown one kept whole",
          "[protocol]") {
  event::Block b;
  b.idx = 2;
  b.seconds = 0.5;
  const event::Event decoded = event::decode(b.to_json());
  REQUIRE(std::holds_alternative<event::Block>(decoded));
  CHECK(std::get<event::Block>(decoded).idx == 2);
  CHECK(std::string(event::kind(decoded)) == "block");
  CHECK(event::encode(decoded) == b.to_json());
  // A snapshot and the last stats are two events, told apart by name.
  CHECK(std::holds_alternative<event::StatsSnapshot>(
      event::decode(event::StatsSnapshot{{{"a", 1}}, 3}.to_json())));
  CHECK(std::holds_alternative<event::Stats>(event::decode(event::Stats{{{"a", 1}}}.to_json())));

  const Json newer = {{"event", "telemetry"}, {"watts", 300}};
  const event::Event other = event::decode(newer);
  REQUIRE(std::holds_alternative<event::Other>(other));
  CHECK(std::string(event::kind(other)) == "telemetry");
  CHECK(event::encode(other) == newer);

  // Text: each line its event, in order; a torn last line is dropped.
  const auto events = event::parse(event::Hello{7}.to_json().dump() + "\n" +
                                   event::Heartbeat{}.to_json().dump() + "\n{\"event\": \"blo");
  REQUIRE(events.size() == 2);
  CHECK(std::get<event::Hello>(events[0]).pid == 7);
  CHECK(std::holds_alternative<event::Heartbeat>(events[1]));
}

TEST_CASE("every phase reads back from its name, and a name that is none as none", "[protocol]") {
  for (Phase p : kPhases) CHECK(phase_of(phase_name(p)) == p);
  CHECK(std::string(phase_name(Phase::evaluate)) == "evaluate");
  CHECK_FALSE(phase_of("measuring"));
  // A phase event of an unknown phase reads as one without a phase.
  CHECK_FALSE(event::Phase::from_json({{"event", "phase"}, {"phase", "lunch"}}).phase);
}
