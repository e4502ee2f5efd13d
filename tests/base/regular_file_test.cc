// The reader of every file a user names: regular files only, at most the
// caller's cap, refused before anything is read (a FIFO must not block, a
// device must not be read without end).
#include "profiler/base/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "tests/input_error_of.h"
#include "tests/temp_dir.h"
#include "tests/text_file.h"

namespace memprof {
namespace {

constexpr int64_t kCap = 1000;

std::string ErrorReading(const std::string& path) {
  return InputErrorOf(
      [&] { ReadRegularFile(path, "test file", kCap, "fix it"); });
}

class RegularFile : public TempDirTest {};

TEST_F(RegularFile, ReadsAFileUpToTheCapWhole) {
  const std::string text(kCap, 'x');
  WriteFile(dir_ / "at-cap", text);
  EXPECT_EQ(ReadRegularFile((dir_ / "at-cap").string(), "", kCap, ""), text);
  WriteFile(dir_ / "empty", "");
  EXPECT_EQ(ReadRegularFile((dir_ / "empty").string(), "", kCap, ""), "");
}

TEST_F(RegularFile, AFileOverTheCapIsRefusedWithItsSizeAndTheCap) {
  WriteFile(dir_ / "big", std::string(kCap + 1, 'x'));
  const std::string path = (dir_ / "big").string();
  EXPECT_EQ(ErrorReading(path),
            "cannot read test file '" + path +
                "': it is 1001 B, more than the 1000 B memprof reads from "
                "such a file; fix it");
  // A sparse file: refused by its size, nothing read.
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, int64_t{8} << 30), 0);
  ::close(fd);
  EXPECT_NE(ErrorReading(path).find("it is 8.00 GiB, more than the 1000 B"),
            std::string::npos);
}

// /proc's files are regular but their size reads 0: the cap holds while
// reading.
TEST_F(RegularFile, AFileLargerThanItsStatedSizeIsHeldToTheCap) {
  ASSERT_GT(ReadFile("/proc/self/maps").size(), size_t{kCap});
  EXPECT_NE(ErrorReading("/proc/self/maps")
                .find("it grew past the 1000 B memprof reads from such a file "
                      "while being read; fix it"),
            std::string::npos);
}

TEST_F(RegularFile, AFifoIsRefusedWithoutWaitingForAWriter) {
  const std::string path = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_EQ(ErrorReading(path),
            "cannot read test file '" + path +
                "': it is a named pipe (FIFO), not a regular file; fix it");
}

TEST_F(RegularFile, DevicesAndDirectoriesAreRefused) {
  EXPECT_NE(ErrorReading("/dev/zero")
                .find("'/dev/zero': it is a character device, not a regular "
                      "file; fix it"),
            std::string::npos);
  EXPECT_NE(ErrorReading(dir_.string()).find("it is a directory; fix it"),
            std::string::npos);
}

TEST_F(RegularFile, AMissingFileIsNamedWithTheReason) {
  const std::string path = (dir_ / "none").string();
  EXPECT_EQ(ErrorReading(path), "cannot read test file '" + path +
                                    "': No such file or directory; fix it");
}

}  // namespace
}  // namespace memprof
