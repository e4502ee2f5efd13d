#include "profiler/base/atomic_file.h"

#include <unistd.h>

#include <cerrno>
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

void CreateOutputDirectory(const std::string& flag, const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || !std::filesystem::is_directory(dir)) {
    throw InputError(flag + ": cannot create output directory '" + dir +
                     "': " + (error ? error.message() : "not a directory") +
                     "; choose a writable path");
  }
}

}  // namespace memprof
