// The run's own files are never an output of baseline or check: refused
// by name, through a symbolic link and as a hard link, before anything is
// read or written.
#include "profiler/report/run_files.h"

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "profiler/base/errors.h"
#include "tests/input_error_of.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"
#include "tests/text_file.h"

namespace memprof {
namespace {

namespace fs = std::filesystem;

const fs::path kFixture = MEMPROF_SOURCE_DIR "/tests/data/run-mlp-tiny-ws2";

TEST(RunFiles, NamesEveryFileARunWrites) {
  for (const char* name : {"rank-0.json", "rank-12.json", "snapshot-1.json",
                           "snapshot-3.pickle", "capture-0.bin", "summary.json",
                           "report.md", "report.html", "trace.json"}) {
    EXPECT_TRUE(IsRunFileName(name)) << name;
  }
  for (const char* name :
       {"baseline.json", "rank-0.json.tmp.12", "check.md", "rank-.json"}) {
    EXPECT_FALSE(IsRunFileName(name)) << name;
  }
}

class RunFilesTest : public TempDirTest {
 protected:
  void SetUp() override {
    fs::create_directory(run_);
    for (const char* name : {"rank-0.json", "rank-1.json"}) {
      fs::copy_file(kFixture / name, run_ / name);
    }
  }
  std::string Refusal(const std::string& path) const {
    return InputErrorOf(
        [&] { RequireOutsideRun("--out", path, run_.string()); });
  }
  const fs::path run_ = dir_ / "run";
};

TEST_F(RunFilesTest, ARunFileIsRefusedByNameLinkOrHardLink) {
  EXPECT_EQ(Refusal((run_ / "rank-1.json").string()),
            "--out " + (run_ / "rank-1.json").string() + ": that is " +
                (run_ / "rank-1.json").string() + " of the run in " +
                run_.string() +
                ", which memprof would overwrite; choose a path outside the "
                "run's files");
  // Not yet written, but the run's name for it.
  EXPECT_NE(Refusal((run_ / "report.md").string()), "");
  EXPECT_NE(Refusal((dir_ / "run/../run/rank-0.json").string()), "");
  fs::create_directory_symlink(run_, dir_ / "alias");
  EXPECT_NE(Refusal((dir_ / "alias" / "rank-0.json").string()), "");
  fs::create_hard_link(run_ / "rank-0.json", dir_ / "linked.json");
  EXPECT_NE(Refusal((dir_ / "linked.json").string())
                .find("that is " + (run_ / "rank-0.json").string()),
            std::string::npos);
  EXPECT_NO_THROW(RequireOutsideRun("--out", (dir_ / "baseline.json").string(),
                                    run_.string()));
  EXPECT_NO_THROW(RequireOutsideRun("--out", (run_ / "baseline.json").string(),
                                    run_.string()));
}

// End to end: the rank report stays as it was, and the exit code is 2.
TEST_F(RunFilesTest, BaselineAndCheckRefuseToOverwriteTheRunsReports) {
  const std::string rank1 = (run_ / "rank-1.json").string();
  const std::string before = ReadFile(rank1);
  CommandResult r =
      RunMemprof("baseline --run " + run_.string() + " --out " + rank1);
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.output;
  EXPECT_NE(r.output.find("--out " + rank1 + ": that is"), std::string::npos)
      << r.output;
  const std::string baseline = (dir_ / "baseline.json").string();
  r = RunMemprof("baseline --run " + run_.string() + " --out " + baseline);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const std::string flag : {"--markdown", "--json"}) {
    r = RunMemprof("check --baseline " + baseline + " --run " + run_.string() +
                   " " + flag + " " + rank1);
    EXPECT_EQ(r.exit_code, kExitBadInput) << r.output;
    EXPECT_NE(r.output.find(flag + " " + rank1 + ": that is"),
              std::string::npos)
        << r.output;
    r = RunMemprof("check --baseline " + baseline + " --run " + run_.string() +
                   " " + flag + " " + baseline);
    EXPECT_EQ(r.exit_code, kExitBadInput) << r.output;
    EXPECT_NE(r.output.find("that is the baseline"), std::string::npos)
        << r.output;
  }
  EXPECT_EQ(ReadFile(rank1), before);
}

}  // namespace
}  // namespace memprof
