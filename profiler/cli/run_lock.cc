#include "profiler/cli/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <regex>

#include "profiler/base/errors.h"
#include "profiler/capture/capture_file.h"

namespace memprof {

RunReadLock::RunReadLock(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string lock_path = (fs::path(dir) / ".memprof.lock").string();
  fd_ = ::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ >= 0 && ::flock(fd_, LOCK_SH | LOCK_NB) != 0) {
    ::close(fd_);
    fd_ = -1;
    throw InputError("--run " + dir +
                     ": a memprof run is still writing there (it holds " +
                     lock_path + "); wait for the run to end");
  }
  static const std::regex kCapture("capture-(0|[1-9][0-9]{0,5})\\.bin");
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    std::smatch match;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, match, kCapture)) continue;
    if (CaptureLive(entry.path().string())) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = -1;
      throw InputError("--run " + dir + ": rank " + match[1].str() +
                       " is still running (it holds " + entry.path().string() +
                       "); wait for the run to end");
    }
  }
}

RunReadLock::~RunReadLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace memprof
