// Local copies of a database on a network filesystem: which filesystems
// count, and copies that are whole while a writer commits and checkpoints.
#include <gpusweep/db/snapshot.hpp>
#include <gpusweep/db/sqlite.hpp>

#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

using namespace gpusweep::db;

TEST_CASE("network filesystems are told from local ones by their statfs type", "[db]") {
  CHECK(network_filesystem_type(0x6969) == std::optional<std::string>("nfs"));
  CHECK(network_filesystem_type(0xFF534D42) == std::optional<std::string>("cifs"));
  CHECK(network_filesystem_type(0xFE534D42) == std::optional<std::string>("smb2"));
  CHECK(network_filesystem_type(0x0BD00BD0) == std::optional<std::string>("lustre"));
  CHECK(network_filesystem_type(0x47504653) == std::optional<std::string>("gpfs"));
  CHECK(network_filesystem_type(0x65735546) == std::optional<std::string>("fuse"));
  CHECK_FALSE(network_filesystem_type(0xEF53));      // ext4
  CHECK_FALSE(network_filesystem_type(0x58465342));  // xfs
  CHECK_FALSE(network_filesystem_type(0x01021994));  // tmpfs
  CHECK_FALSE(network_filesystem_type(0x794C7630));  // overlayfs
  // The scratch folder here is local (the test machines' is): read directly.
  gpusweep::test::TempDir dir("gpusweep_snapshot_fs");
  CHECK_FALSE(network_filesystem(dir.file("r.db")));
}

namespace {

// How many rows the copy holds, after checking it is whole and that every
// batch committed whole (the writer inserts kBatch rows a transaction).
constexpr int kBatch = 50;
int64_t whole_rows(const std::string& copy) {
  Connection c(copy, Connection::Mode::read_only);
  auto check = c.prepare("PRAGMA integrity_check");
  REQUIRE(check.step());
  CHECK(check.get_text(0) == "ok");
  auto torn =
      c.prepare("SELECT count(*) FROM (SELECT batch FROM t GROUP BY batch HAVING count(*) != ?)");
  torn.bind(1, int64_t{kBatch});
  REQUIRE(torn.step());
  CHECK(torn.get_int(0) == 0);
  auto n = c.prepare("SELECT count(*) FROM t");
  REQUIRE(n.step());
  return n.get_int(0);
}

}  // namespace

TEST_CASE("copies taken while a writer commits and checkpoints are whole and catch up", "[db]") {
  gpusweep::test::TempDir dir("gpusweep_snapshot");
  const std::string source = dir.file("r.db");
  Connection w(source, Connection::Mode::read_write);
  w.exec("PRAGMA journal_mode = WAL");
  // Checkpoints every few dozen transactions: the database file is rewritten
  // under the copies again and again, and the WAL starts over.
  w.exec("PRAGMA wal_autocheckpoint = 64");
  w.exec("CREATE TABLE t (batch INTEGER, i INTEGER, pad TEXT)");
  std::atomic<bool> stop{false};
  std::atomic<int64_t> batches{0};
  std::string failed;  // the writer's error, if any
  std::thread writer([&] {
    const std::string pad(200, 'x');
    try {
      while (!stop) {
        w.exec("BEGIN");
        auto ins = w.prepare("INSERT INTO t VALUES (?, ?, ?)");
        for (int i = 0; i < kBatch; ++i) {
          ins.bind(1, batches.load()).bind(2, int64_t{i}).bind(3, pad);
          ins.run();
          ins.reset();
        }
        w.exec("COMMIT");
        ++batches;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a busy sweep: a commit a ms
      }
    } catch (const std::exception& e) {
      failed = e.what();
    }
  });
  // Stopped and joined however the checks below end.
  struct Joiner {
    std::atomic<bool>& stop;
    std::thread& writer;
    ~Joiner() {
      stop = true;
      if (writer.joinable()) writer.join();
    }
  } joiner{stop, writer};
  Snapshots snapshots(source, 0);
  int64_t last = 0;
  std::string first_copy;
  // A copy at most every ten times a copy's time: 1.5 s of asking, every 5 ms.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  while (std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const auto copy = snapshots.current();
    if (first_copy.empty()) first_copy = *copy;
    const int64_t rows = whole_rows(*copy);
    CHECK(rows % kBatch == 0);
    CHECK(rows >= last);  // never older than the copy before
    last = rows;
  }
  stop = true;
  writer.join();
  CHECK(failed.empty());
  INFO(failed);
  CHECK(snapshots.copies() >= 2);
  // Replaced copies went from the disk when their readers let them go.
  CHECK_FALSE(std::filesystem::exists(first_copy));
  // The writer stopped: the next copy has every batch, and one more look at
  // an unchanged database makes no new copy.
  std::this_thread::sleep_for(std::chrono::duration<double>(snapshots.interval_s() + 0.01));
  const auto final_copy = snapshots.current();
  CHECK(whole_rows(*final_copy) == batches * kBatch);
  const int64_t made = snapshots.copies();
  std::this_thread::sleep_for(std::chrono::duration<double>(snapshots.interval_s() + 0.01));
  CHECK(*snapshots.current() == *final_copy);
  CHECK(snapshots.copies() == made);
  // The source was only ever read: no copy or companion of ours beside it.
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) {
    CHECK(e.path().filename().string().rfind("r.db", 0) == 0);
  }
}

TEST_CASE("a copy torn by a checkpoint between the database and its WAL is made again", "[db]") {
  gpusweep::test::TempDir dir("gpusweep_snapshot_torn");
  const std::string source = dir.file("r.db");
  Connection w(source, Connection::Mode::read_write);
  w.exec("PRAGMA journal_mode = WAL");
  w.exec("PRAGMA wal_autocheckpoint = 0");  // checkpoints only where this test says
  w.exec("CREATE TABLE t (batch INTEGER, i INTEGER, pad TEXT)");
  int64_t batches = 0;
  const auto commit = [&](int n) {
    for (int b = 0; b < n; ++b, ++batches) {
      w.exec("BEGIN");
      auto ins = w.prepare("INSERT INTO t VALUES (?, ?, ?)");
      for (int i = 0; i < kBatch; ++i) {
        ins.bind(1, batches).bind(2, int64_t{i}).bind(3, std::string(200, 'x'));
        ins.run();
        ins.reset();
      }
      w.exec("COMMIT");
    }
  };
  commit(20);
  w.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  commit(20);  // in the WAL only
  Snapshots snapshots(source, 0);
  int calls = 0;
  snapshots.on_database_copied([&] {
    if (calls++ > 0) return;
    // Between the first attempt's two copies: the WAL's 20 batches go into
    // the database, the WAL starts over, and 5 more go into it. The copied
    // database lacks the 20; the WAL copied next no longer has them.
    w.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    commit(5);
  });
  const auto copy = snapshots.current();
  CHECK(calls == 2);  // the torn attempt, then a whole one
  CHECK(whole_rows(*copy) == batches * kBatch);
}
