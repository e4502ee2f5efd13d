// Output directories a flag names: refused up front when no run could
// write its files there, with the cause named.
#include "profiler/base/atomic_file.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/input_error_of.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

namespace memprof {
namespace {

namespace fs = std::filesystem;

// Every "cannot write" of a report, a snapshot or a rank report (the
// atomic writes and DocumentWriter) gives the remedy for a full disk or
// quota: it used to stop at "No space left on device".
TEST(WriteFailureReason, AFullDiskOrQuotaNamesTheRemedy) {
  for (const int error : {ENOSPC, EDQUOT}) {
    EXPECT_EQ(WriteFailureReason(error), std::string(std::strerror(error)) +
                                             "; free space on its filesystem");
  }
  EXPECT_EQ(WriteFailureReason(EACCES), std::strerror(EACCES));
}

class OutputDirectory : public TempDirTest {};

// An existing directory whose path is too long only for the files a run
// writes inside it: a run used to train, then fail at its first write.
TEST_F(OutputDirectory, APathWithNoRoomForTheRunsFilesIsRefusedUpFront) {
  std::string dir = dir_.string();
  while (dir.size() + 1 + kLongestOutputName <= PATH_MAX - 1) dir += "/d";
  // mkdir -p works relative to each component, below the path limit.
  ASSERT_EQ(RunCommand("mkdir -p " + dir).exit_code, 0);
  const std::string message =
      InputErrorOf([&] { CreateOutputDirectory("--out", dir); });
  EXPECT_EQ(message.rfind("--out: the path is " + std::to_string(dir.size()) +
                              " characters; memprof writes files of up to 64 "
                              "characters in it, and this system takes paths "
                              "of at most 4095: choose a shorter path",
                          0),
            0u)
      << message;
  // Two characters shorter, there is room.
  dir.resize(dir.size() - 2);
  EXPECT_NO_THROW(CreateOutputDirectory("--out", dir));
  RunCommand("rm -rf " + (dir_ / "d").string());  // deeper than remove_all
}

TEST_F(OutputDirectory, ADanglingSymbolicLinkIsNamedAsSuch) {
  fs::create_directory_symlink(dir_ / "gone", dir_ / "out");
  const std::string message = InputErrorOf(
      [&] { CreateOutputDirectory("--out", (dir_ / "out").string()); });
  EXPECT_EQ(message, "--out: '" + (dir_ / "out").string() +
                         "' is a symbolic link to '" +
                         (dir_ / "gone").string() +
                         "', which does not exist; create that directory or "
                         "choose another path");
  EXPECT_EQ(message.find("File exists"), std::string::npos);
}

}  // namespace
}  // namespace memprof
