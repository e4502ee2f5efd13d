// A test's own directory for the files it writes: TempDir, and TempDirTest,
// a fixture that gives every test one as dir_.
#pragma once

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

namespace memprof {

// A fresh directory, <system temp>/memprof-test-XXXXXX (mkdtemp: unique even
// across processes running the same test), made by the constructor and
// removed with everything in it by the destructor unless Keep() was called.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "memprof-test-XXXXXX")
            .string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("cannot create a temporary directory " +
                               pattern + ": " + std::strerror(errno));
    }
    path_ = pattern;
  }
  ~TempDir() {
    if (keep_) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Leaves the directory in place: a failed test's files, to be looked at.
  void Keep() { keep_ = true; }

 private:
  std::filesystem::path path_;
  bool keep_ = false;
};

// Every test gets its own empty directory, dir_, removed after the test.
class TempDirTest : public ::testing::Test {
 protected:
  TempDir temp_dir_;
  const std::filesystem::path dir_ = temp_dir_.path();
};

}  // namespace memprof
