// Open-file-description locks on the "<db>-runs" file; see run_lock.hpp.
#include <gpusweep/db/run_lock.hpp>
#include <gpusweep/db/sqlite.hpp>

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

namespace gpusweep::db {

std::optional<RunLock> RunLock::try_acquire(const std::string& db_path, int64_t run_id) {
  const std::string path = path_for(db_path);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw DbError("cannot open the run lock file '" + path + "': " + std::strerror(errno) +
                      " (gpusweep needs to write beside the database)",
                  SQLITE_CANTOPEN);
  }
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = run_id;
  lock.l_len = 1;
  // OFD locks belong to this open file description, not to the process: a
  // second acquire in the same process conflicts too, as it should.
  if (::fcntl(fd, F_OFD_SETLK, &lock) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EAGAIN || err == EACCES) return std::nullopt;
    throw DbError("cannot lock '" + path + "': " + std::strerror(err), SQLITE_IOERR);
  }
  return RunLock(fd);
}

bool RunLock::held(const std::string& db_path, int64_t run_id) {
  const std::string path = path_for(db_path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = run_id;
  lock.l_len = 1;
  const bool held = ::fcntl(fd, F_OFD_GETLK, &lock) == 0 && lock.l_type != F_UNLCK;
  ::close(fd);
  return held;
}

RunLock::RunLock(RunLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

RunLock& RunLock::operator=(RunLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the description releases the lock
}

}  // namespace gpusweep::db
