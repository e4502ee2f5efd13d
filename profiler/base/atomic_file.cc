#include "profiler/base/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "profiler/base/errors.h"

namespace memprof {

void WriteFileAtomically(const std::string& path, const std::string& content) {
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  auto fail = [&](const std::string& what) {
    const std::string reason = std::strerror(errno);
    std::remove(temp.c_str());
    throw std::runtime_error("cannot " + what + " '" + path + "': " + reason);
  };
  std::FILE* file = std::fopen(temp.c_str(), "wb");
  if (file == nullptr) fail("write");
  const bool written =
      std::fwrite(content.data(), 1, content.size(), file) == content.size();
  const bool flushed = std::fflush(file) == 0 && ::fsync(fileno(file)) == 0;
  if (std::fclose(file) != 0 || !written || !flushed) fail("write");
  if (std::rename(temp.c_str(), path.c_str()) != 0) fail("rename onto");
}

void WriteFlaggedFile(const std::string& flag, const std::string& path,
                      const std::string& content) {
  try {
    WriteFileAtomically(path, content);
  } catch (const std::runtime_error& e) {
    throw InputError(flag + ": " + e.what() + "; choose a writable path");
  }
}

void CreateOutputDirectory(const std::string& flag, const std::string& dir,
                           size_t room) {
  // PATH_MAX counts the terminating NUL.
  if (dir.size() + 1 + room > PATH_MAX - 1) {
    throw InputError(flag + ": the path is " + std::to_string(dir.size()) +
                     " characters; memprof writes files of up to " +
                     std::to_string(room) + " characters in it, and this " +
                     "system takes paths of at most " +
                     std::to_string(PATH_MAX - 1) + ": choose a shorter path");
  }
  std::error_code error;
  if (std::filesystem::is_symlink(dir, error) &&
      !std::filesystem::exists(dir, error)) {
    throw InputError(
        flag + ": '" + dir + "' is a symbolic link to '" +
        std::filesystem::read_symlink(dir, error).string() +
        "', which does not exist; create that directory or choose another "
        "path");
  }
  std::filesystem::create_directories(dir, error);
  if (error || !std::filesystem::is_directory(dir)) {
    throw InputError(flag + ": cannot create output directory '" + dir +
                     "': " + (error ? error.message() : "not a directory") +
                     "; choose a writable path");
  }
}

}  // namespace memprof
