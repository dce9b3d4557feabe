// Which process runs a sweep run. Two `gpusweep run --resume` (or `resume`)
// of the same run at once would execute its pending trials twice; the second
// must refuse instead. The lock is an open-file-description lock on one byte
// (the run's id) of a file beside the database, "<db>-runs": the kernel drops
// it when the holder exits however it exits (SIGKILL included), so a run left
// behind by a killed host can be resumed at once, with no stale lock to clear.
// Distinct runs lock distinct bytes and proceed side by side.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gpusweep::db {

class RunLock {
 public:
  // The lock of run `run_id` of the database at `db_path`, or nothing when
  // another process holds it. Throws DbError when the lock file can't be
  // opened (a read-only directory, say).
  static std::optional<RunLock> try_acquire(const std::string& db_path, int64_t run_id);

  RunLock(RunLock&& other) noexcept;
  RunLock& operator=(RunLock&& other) noexcept;
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock();

  // Whether a process holds run `run_id`'s lock now (it is running it): a
  // test that takes nothing (F_OFD_GETLK), for readers such as `serve`.
  // False when there is no lock file.
  static bool held(const std::string& db_path, int64_t run_id);

  // The lock file of a database.
  static std::string path_for(const std::string& db_path) { return db_path + "-runs"; }

 private:
  explicit RunLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace gpusweep::db
