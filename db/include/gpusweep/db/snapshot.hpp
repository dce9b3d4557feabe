// Reading a database that lives on a network filesystem, through local copies.
//
// SQLite's WAL mode keeps its index in shared memory: the -shm file beside
// the database, mapped by every connection. On NFS, SMB, Lustre, GPFS, Ceph
// or FUSE a process on another host than the writer (a login node watching a
// Slurm shard) maps a copy of it that is not the writer's: it may read a
// state the writer never committed, and its read marks may damage the
// writer's index. So a reader there never opens the file with SQLite: it
// copies the database and its WAL to a local folder, checks that the writer
// did not checkpoint during the copy (the only write to the database file in
// WAL mode; appends to the WAL are cut at the last whole transaction by the
// WAL's own checksums), folds the WAL into the copy, and opens that.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace gpusweep::db {

// The kind of filesystem holding `path` ("nfs", "smb", "lustre", ...) when it
// is one SQLite's WAL cannot be shared on; nothing for a local one, or when
// statfs cannot tell.
std::optional<std::string> network_filesystem(const std::string& path);
// The same for a statfs f_type.
std::optional<std::string> network_filesystem_type(int64_t f_type);

// Consistent local copies of one database, made again when it changed, at
// most every so often. A database an older gpusweep wrote is upgraded in
// its copy (the source is never written), so that a reader of the copy
// makes no migrated copy of its own: one upgrade a copy, not one a read.
class Snapshots {
 public:
  // min_interval_s: a fresh copy at most this often; the interval grows to
  // ten times what the last copy took, so that copying a big database costs
  // at most a tenth of the time.
  Snapshots(std::string source, double min_interval_s);
  ~Snapshots();
  Snapshots(const Snapshots&) = delete;
  Snapshots& operator=(const Snapshots&) = delete;

  // The path of the newest copy, made now when none is younger than the
  // interval and the source changed since. The copy stays on disk while a
  // returned pointer lives (a request reading it), and goes when the last
  // one is released after a newer copy replaced it. When the writer
  // checkpoints during a copy, the copy is made again; after the first
  // copy, the last whole one answers until a look finds a quiet moment.
  // Throws DbError naming the source when no first copy could be made in
  // several attempts, or it cannot be read.
  std::shared_ptr<const std::string> current();

  const std::string& source() const { return source_; }
  // The local folder of the copies (for removal at a signal, when no
  // destructor runs).
  const std::string& folder() const { return dir_; }
  // Copies made so far (for tests and the server's log).
  int64_t copies() const;
  // The interval now in force.
  double interval_s() const;
  // For tests: runs in each attempt after the database is copied and before
  // its WAL is (where a writer's checkpoint tears a copy).
  void on_database_copied(std::function<void()> f) { on_database_copied_ = std::move(f); }

 private:
  struct Stamp {
    int64_t size = -1, mtime_ns = -1, inode = -1;
    bool operator==(const Stamp& o) const {
      return size == o.size && mtime_ns == o.mtime_ns && inode == o.inode;
    }
  };
  static Stamp stamp_of(const std::string& path);  // opened afresh
  static Stamp stamp_of(int fd);
  std::shared_ptr<const std::string> copy_once(int attempt);

  std::string source_;
  std::string dir_;  // the local folder of the copies
  double min_interval_s_;
  mutable std::mutex mu_;
  std::shared_ptr<const std::string> copy_;
  std::pair<Stamp, Stamp> copied_;  // the database's and the WAL's, as copied
  std::chrono::steady_clock::time_point at_;
  double interval_s_;
  int64_t copies_ = 0;
  std::function<void()> on_database_copied_;
};

}  // namespace gpusweep::db
