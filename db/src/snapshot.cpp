// Local copies of a database on a network filesystem; see snapshot.hpp.
#include <gpusweep/db/snapshot.hpp>

#include <gpusweep/db/migrate.hpp>
#include <gpusweep/db/sqlite.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <utility>
#include <vector>

namespace gpusweep::db {

namespace fs = std::filesystem;

std::optional<std::string> network_filesystem_type(int64_t f_type) {
  // statfs(2)'s magic numbers (linux/magic.h, and the vendors' own).
  static const std::pair<uint32_t, const char*> kNetwork[] = {
      {0x6969, "nfs"},          {0x517B, "smb"},       {0xFF534D42, "cifs"}, {0xFE534D42, "smb2"},
      {0x0BD00BD0, "lustre"},   {0x47504653, "gpfs"},  {0x65735546, "fuse"}, {0x00C36400, "ceph"},
      {0x5346414F, "afs"},      {0x6B414653, "afs"},   {0x73757245, "coda"}, {0x01021997, "9p"},
      {0x19830326, "beegfs"},   {0x7461636F, "ocfs2"}, {0x01161970, "gfs2"}, {0xAAD7AAEA, "panfs"},
      {0x20030528, "orangefs"},
  };
  const auto magic = static_cast<uint32_t>(f_type);
  for (const auto& [m, name] : kNetwork) {
    if (m == magic) return std::string(name);
  }
  return std::nullopt;
}

std::optional<std::string> network_filesystem(const std::string& path) {
  // The folder's: the database itself may not exist yet.
  fs::path folder = fs::absolute(path).parent_path();
  struct statfs s {};
  if (::statfs(folder.c_str(), &s) != 0) return std::nullopt;
  return network_filesystem_type(static_cast<int64_t>(s.f_type));
}

namespace {

// A file descriptor closed on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// Copies what `in` holds into a new file `to`; false when a read or a
// write failed (errno says why).
bool copy_fd(int in, const std::string& to) {
  Fd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (out.fd < 0) return false;
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out.fd, buf.data() + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return false;
      done += w;
    }
  }
}

void remove_copy(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path + suffix, ec);
}

}  // namespace

// Opened afresh each time: on NFS, opening a file revalidates what the
// client knows of it (close-to-open consistency), where a stat may answer
// from a cache up to a minute old.
Snapshots::Stamp Snapshots::stamp_of(const std::string& path) {
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  return f.fd < 0 ? Stamp{} : stamp_of(f.fd);
}

Snapshots::Stamp Snapshots::stamp_of(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return {};
  return {static_cast<int64_t>(st.st_size),
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
          static_cast<int64_t>(st.st_ino)};
}

Snapshots::Snapshots(std::string source, double min_interval_s)
    : source_(std::move(source)), min_interval_s_(min_interval_s), interval_s_(min_interval_s) {
  std::string tmpl = (fs::temp_directory_path() / "gpusweep-snapshot-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    throw DbError("cannot make a folder for local copies of '" + source_ + "' in " +
                      fs::temp_directory_path().string() + ": " + std::strerror(errno),
                  SQLITE_CANTOPEN);
  }
  dir_ = tmpl;
}

// The copies still held by requests remove themselves when released; the
// folder goes with the last of them or now.
Snapshots::~Snapshots() {
  copy_.reset();
  std::error_code ec;
  fs::remove(dir_, ec);  // fails, harmlessly, while a request still reads a copy
}

int64_t Snapshots::copies() const {
  std::lock_guard<std::mutex> lock(mu_);
  return copies_;
}

double Snapshots::interval_s() const {
  std::lock_guard<std::mutex> lock(mu_);
  return interval_s_;
}

// One attempt, each step's failure named.
std::shared_ptr<const std::string> Snapshots::copy_once(int attempt) {
  const std::string to =
      dir_ + "/copy-" + std::to_string(copies_) + "-" + std::to_string(attempt) + ".db";
  Fd in(::open(source_.c_str(), O_RDONLY | O_CLOEXEC));
  const Stamp before = in.fd < 0 ? Stamp{} : stamp_of(in.fd);
  if (before == Stamp{}) {
    throw DbError("cannot read '" + source_ + "': " + std::strerror(errno), SQLITE_CANTOPEN);
  }
  const Stamp wal_before = stamp_of(source_ + "-wal");
  if (!copy_fd(in.fd, to)) {
    const std::string why = std::strerror(errno);
    remove_copy(to);
    throw DbError("cannot copy '" + source_ + "' to " + to + ": " + why, SQLITE_IOERR);
  }
  if (on_database_copied_) on_database_copied_();
  // The WAL after the database: it holds every frame a checkpoint could
  // have been writing into the database meanwhile, unless the writer
  // checkpointed and started it over, which the database's stamp shows.
  Fd wal(::open((source_ + "-wal").c_str(), O_RDONLY | O_CLOEXEC));
  if (wal.fd >= 0 && !copy_fd(wal.fd, to + "-wal")) {
    remove_copy(to);
    return nullptr;
  }
  if (!(stamp_of(source_) == before)) {
    remove_copy(to);
    return nullptr;  // checkpointed (or replaced) while copied
  }
  {
    // The WAL folded into the copy: a plain file that read-only
    // connections open without creating anything beside it.
    Connection c(to, Connection::Mode::read_write);
    c.exec("PRAGMA journal_mode = DELETE");
    // A database of an older gpusweep: the copy upgraded once, here, so
    // that each read of it is not a copy and migration of its own.
    if (const int v = current_version(c); v > 0 && v < schema_version()) migrate(c);
  }
  copied_ = {before, wal_before};
  auto* path = new std::string(to);
  return std::shared_ptr<const std::string>(path, [](const std::string* p) {
    remove_copy(*p);
    std::error_code ec;
    fs::remove(fs::path(*p).parent_path(), ec);  // the folder, once it is empty
    delete p;
  });
}

std::shared_ptr<const std::string> Snapshots::current() {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (copy_ && std::chrono::duration<double>(now - at_).count() < interval_s_) return copy_;
  if (copy_ && stamp_of(source_) == copied_.first && stamp_of(source_ + "-wal") == copied_.second) {
    at_ = now;  // unchanged: the copy is still the database's state
    return copy_;
  }
  // The first copy is tried several times; after it, one attempt a look,
  // the last whole copy answering meanwhile: a busy writer delays the view,
  // never breaks it.
  constexpr int kAttempts = 8;
  const int attempts = copy_ ? 1 : kAttempts;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    if (attempt > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(20 << std::min(attempt, 4)));
    if (auto copy = copy_once(attempt)) {
      const auto done = std::chrono::steady_clock::now();
      interval_s_ =
          std::max(min_interval_s_, 10 * std::chrono::duration<double>(done - now).count());
      copy_ = std::move(copy);
      at_ = done;
      ++copies_;
      return copy_;
    }
  }
  if (copy_) {
    at_ = now;
    return copy_;
  }
  throw DbError("no consistent copy of '" + source_ + "' in " + std::to_string(kAttempts) +
                    " attempts: its writer checkpointed during each (it is read through local "
                    "copies, never opened in place; try again)",
                SQLITE_BUSY);
}

}  // namespace gpusweep::db
