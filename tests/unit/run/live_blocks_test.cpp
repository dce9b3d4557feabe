// The live file of a run's running trials (run/live_blocks.hpp): what serve
// reads for its block strips. It follows trials from start to end, holds
// their blocks' throughput, is replaced at most every half second while
// blocks arrive, and is gone (folder too) when the run ends; a folder it
// cannot write turns it off with the reason, never an exception.
#include "run/live_blocks.hpp"
#include "protocol/events.hpp"

#include "temp_dir.hpp"

#include <gpusweep/db/live.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>

using namespace gpusweep;
using Json = nlohmann::json;

namespace {

Json read(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return Json::parse(in);
}

Json block(double seconds, double samples) {
  return {{"event", "block"}, {"idx", 0}, {"steps", 5}, {"seconds", seconds}, {"samples", samples}};
}

}  // namespace

TEST_CASE("the live file follows the running trials' blocks and goes with the run", "[live]") {
  test::TempDir dir("live_blocks");
  const std::string db = dir.path + "/r.db";
  const std::string path = db::live_blocks_path(db, 7);
  {
    host::LiveBlocks live(db, 7);
    CHECK(live.off_reason().empty());
    CHECK(read(path)["trials"].empty());
    live.started(11);
    CHECK(read(path)["trials"][0]["id"] == 11);
    CHECK(read(path)["trials"][0]["phase"] == "start");
    // Blocks within half a second of the last write wait for the next one.
    live.event(11, host::event::decode({{"event", "phase"}, {"phase", "measure"}}));
    live.event(11, host::event::decode(block(0.5, 10)));
    live.event(11, host::event::decode(block(0.25, 10)));
    CHECK(read(path)["trials"][0]["throughput"].empty());
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    live.event(11, host::event::decode(block(0.1, 10)));
    const Json j = read(path);
    CHECK(j["trials"][0]["phase"] == "measure");
    CHECK(j["trials"][0]["throughput"] == Json::array({20.0, 40.0, 100.0}));
    // An event of a trial it does not follow, and one of no interest: nothing.
    live.event(99, host::event::decode(block(1, 1)));
    live.event(11, host::event::decode({{"event", "eval"}, {"at_step", 3}}));
    // A trial's end is written at once.
    live.started(12);
    live.finished(11);
    CHECK(read(path)["trials"].size() == 1);
    CHECK(read(path)["trials"][0]["id"] == 12);
  }
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK_FALSE(std::filesystem::exists(std::filesystem::path(path).parent_path()));
}

TEST_CASE("a live file that cannot be written turns itself off with the reason", "[live]") {
  test::TempDir dir("live_blocks_ro");
  // The folder it wants is taken by a file.
  std::ofstream(dir.path + "/r.db-live") << "x";
  host::LiveBlocks live(dir.path + "/r.db", 1);
  CHECK_FALSE(live.off_reason().empty());
  live.started(1);
  live.event(1, host::event::decode(block(1, 1)));
  live.finished(1);
  CHECK(std::filesystem::is_regular_file(dir.path + "/r.db-live"));
}

TEST_CASE("a live run's heartbeat names its host and is rewritten while no block arrives",
          "[live]") {
  test::TempDir dir("live_beat");
  const std::string db = dir.path + "/r.db";
  const std::string beat = db::live_beat_path(db, 3);
  {
    host::LiveBlocks live(db, 3, /*beat_s=*/0.05);
    std::string host, pid;
    std::ifstream(beat) >> host >> pid;
    char here[256] = {};
    REQUIRE(::gethostname(here, sizeof here - 1) == 0);
    CHECK(host == here);
    CHECK(pid == std::to_string(::getpid()));
    // Aged by hand, the beat is made young again by the thread alone.
    const auto old = std::filesystem::file_time_type::clock::now() - std::chrono::minutes(5);
    std::filesystem::last_write_time(beat, old);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::filesystem::last_write_time(beat) < old + std::chrono::minutes(4) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(std::filesystem::last_write_time(beat) > old + std::chrono::minutes(4));
    std::ifstream(beat) >> host >> pid;  // rewritten in place, whole
    CHECK(host == here);
  }
  CHECK_FALSE(std::filesystem::exists(beat));  // gone with the run
}
