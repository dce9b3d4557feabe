// A sweep's progress in a log (not a terminal): a long setup or warmup says
// so as it goes, at doubling intervals, and says how long it took.
#include "run/progress.hpp"
#include "protocol/events.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

using Catch::Matchers::Contains;
using gpusweep::host::Progress;
using Json = nlohmann::json;

namespace {

std::string read_all(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[512];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  return out;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("a long setup says so as it goes and how long it took, in a log", "[progress]") {
  std::FILE* out = std::tmpfile();
  REQUIRE(out != nullptr);
  // Lines at 0.1 s of setup and again at 0.2 s; none sooner.
  Progress progress(2, 1, false, out, 0.1);
  progress.started(1, "batch_size=8 compile=true");
  progress.event(1, gpusweep::host::event::decode({{"event", "phase"}, {"phase", "setup"}}));
  progress.event(1, gpusweep::host::event::decode({{"event", "heartbeat"}}));
  CHECK(read_all(out).empty());
  const auto heartbeats_for = [&](double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      progress.event(1, gpusweep::host::event::decode({{"event", "heartbeat"}}));
    }
  };
  heartbeats_for(0.25);
  progress.event(
      1, gpusweep::host::event::decode({{"event", "phase"}, {"phase", "measure"}, {"blocks", 5}}));
  const std::string text = read_all(out);
  INFO(text);
  CHECK(count(text, "note: batch_size=8 compile=true: still in setup after ") == 2);
  CHECK_THAT(text, Contains("(loading, building the model, its first step)"));
  CHECK_THAT(text, Contains("note: batch_size=8 compile=true: setup took "));
  CHECK_THAT(text, Contains("; now measure"));
  // Measuring is not starting: its heartbeats say nothing.
  heartbeats_for(0.25);
  CHECK(count(read_all(out), "still in") == 2);
  std::fclose(out);
}
