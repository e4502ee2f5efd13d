#include "profiler/base/atomic_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "profiler/base/errors.h"

namespace memprof {

std::string WriteFailureReason(int error) {
  return std::string(std::strerror(error)) +
         (error == ENOSPC || error == EDQUOT ? "; free space on its filesystem"
                                             : "");
}

void WriteFileAtomically(const std::string& path, const std::string& content) {
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  auto fail = [&](const std::string& what) {
    const std::string reason = WriteFailureReason(errno);
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

void RequireReplaceableFile(const std::string& flag, const std::string& path) {
  if (path.empty()) {
    throw InputError(flag + ": an empty path; give a file's path");
  }
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return;  // a new file
  const std::string what = S_ISLNK(info.st_mode)   ? "a symbolic link"
                           : S_ISDIR(info.st_mode) ? "a directory"
                           : S_ISREG(info.st_mode) ? ""
                           : S_ISCHR(info.st_mode) || S_ISBLK(info.st_mode)
                               ? "a device"
                           : S_ISFIFO(info.st_mode) ? "a FIFO"
                                                    : "not a regular file";
  if (what.empty()) return;
  std::string remedy = "give a regular file's path";
  if (S_ISLNK(info.st_mode)) {
    // The file it leads to, when that is one memprof could write (not
    // /dev/stdout's pipe).
    std::error_code error;
    const std::filesystem::path target =
        std::filesystem::canonical(path, error);
    std::error_code kind_error;
    const bool writable_target =
        !error && std::filesystem::is_regular_file(target, kind_error);
    remedy =
        "memprof writes a new file in its place, which would replace "
        "the link: give the path of the file itself" +
        (writable_target ? " (" + target.string() + ")" : std::string());
  } else if (S_ISDIR(info.st_mode)) {
    remedy = "give a file's path inside it";
  } else {
    remedy = "memprof writes a new regular file in its place: " + remedy;
  }
  throw InputError(flag + " " + path + ": " + what + "; " + remedy);
}

void WriteFlaggedFile(const std::string& flag, const std::string& path,
                      const std::string& content) {
  RequireReplaceableFile(flag, path);
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
