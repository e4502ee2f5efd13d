#include "profiler/base/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"

namespace memprof {
namespace {

// What a file that is not a regular file is, in the user's words.
const char* KindOfNonRegular(mode_t mode) {
  if (S_ISDIR(mode)) return "it is a directory";
  if (S_ISFIFO(mode)) return "it is a named pipe (FIFO), not a regular file";
  if (S_ISCHR(mode)) return "it is a character device, not a regular file";
  if (S_ISBLK(mode)) return "it is a block device, not a regular file";
  if (S_ISSOCK(mode)) return "it is a socket, not a regular file";
  return "it is not a regular file";
}

// Closes the descriptor whatever way the read ends.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string ReadRegularFile(const std::string& path, const std::string& kind,
                            int64_t max_bytes, const std::string& remedy) {
  auto fail = [&](const std::string& reason,
                  const std::string& remedy_here = std::string()) {
    throw InputError("cannot read " + (kind.empty() ? "" : kind + " ") + "'" +
                     path + "': " + reason + "; " +
                     (remedy_here.empty() ? remedy : remedy_here));
  };
  const std::string cap =
      HumanBytes(max_bytes) + " memprof reads from such a file";
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused
  // below, before any read.
  const Descriptor fd(
      ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (fd.get() < 0 && (errno == EACCES || errno == EPERM)) {
    // The file is there: the remedy is the permission, not a new file.
    fail(std::strerror(errno),
         "give this user read permission on it (chmod u+r, or run as its "
         "owner)");
  }
  if (fd.get() < 0) fail(std::strerror(errno));
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) fail(std::strerror(errno));
  if (!S_ISREG(status.st_mode)) fail(KindOfNonRegular(status.st_mode));
  if (status.st_size > max_bytes) {
    fail("it is " + HumanBytes(status.st_size) + ", more than the " + cap);
  }
  std::string text(static_cast<size_t>(status.st_size), '\0');
  size_t used = 0;
  for (;;) {
    if (used == text.size()) {
      // The size stat gave is read; one more byte tells whether the file
      // grew since.
      if (static_cast<int64_t>(used) >= max_bytes + 1) break;
      text.resize(std::min<size_t>(text.size() + (64 << 10),
                                   static_cast<size_t>(max_bytes) + 1));
    }
    const ssize_t n = ::read(fd.get(), &text[used], text.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(std::strerror(errno));
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  if (static_cast<int64_t>(used) > max_bytes) {
    fail("it grew past the " + cap + " while being read");
  }
  text.resize(used);
  return text;
}

}  // namespace memprof
