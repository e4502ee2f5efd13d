// The memprof binary end to end: exit codes, messages, files written whole.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/run_command.h"

namespace memprof {
namespace {

namespace fs = std::filesystem;

using Result = CommandResult;

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("memprof-cli-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::string Out() const { return (dir_ / "out").string(); }
  bool NothingWritten() const { return !fs::exists(dir_ / "out"); }

  fs::path dir_;
};

constexpr const char* kTiny = MEMPROF_SOURCE_DIR "/configs/mlp-tiny.ini";

TEST_F(CliTest, ProfileWritesTheRankReportWholeAndPrintsTheTable) {
  const Result r =
      RunMemprof(std::string("profile --config ") + kTiny + " --out " + Out());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("weights"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("steady-state peak"), std::string::npos);
  EXPECT_TRUE(fs::exists(fs::path(Out()) / "rank-0.json"));
  EXPECT_TRUE(fs::exists(fs::path(Out()) / "summary.json"));
  for (const auto& entry : fs::directory_iterator(Out())) {
    const std::string name = entry.path().filename();
    EXPECT_TRUE(name == "rank-0.json" || name == "summary.json")
        << "left behind: " << entry.path();
  }
}

TEST_F(CliTest, MissingConfigIsBadInput) {
  const Result r = RunMemprof("profile --config " +
                              (dir_ / "nope.ini").string() + " --out " + Out());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("nope.ini"), std::string::npos) << r.output;
  EXPECT_TRUE(NothingWritten());
}

TEST_F(CliTest, UnreadableConfigIsBadInput) {
  const Result r =
      RunMemprof("profile --config " + dir_.string() + " --out " + Out());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(NothingWritten());
}

TEST_F(CliTest, UnknownKeyIsNamedWithTheFile) {
  const std::string path = Write("k.ini", "[mlp]\nhiden = 3\n");
  const Result r = RunMemprof("profile --config " + path + " --out " + Out());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(path + ":2: unknown key 'mlp.hiden'"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(NothingWritten());
}

TEST_F(CliTest, MalformedAndNonPositiveValuesAreBadInput) {
  const std::string malformed = Write("m.ini", "[train]\nsteps = three\n");
  Result r = RunMemprof("profile --config " + malformed + " --out " + Out());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("train.steps"), std::string::npos) << r.output;
  const std::string zero = Write("z.ini", "[mlp]\nhidden = 0\n");
  r = RunMemprof("profile --config " + zero + " --out " + Out());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("mlp.hidden must be positive"), std::string::npos)
      << r.output;
  r = RunMemprof(std::string("profile --config ") + kTiny +
                 " --micro-batch=-1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(NothingWritten());
}

TEST_F(CliTest, OutThatCannotBeCreatedIsBadInput) {
  const std::string file = Write("plain-file", "x");
  const Result r = RunMemprof(std::string("profile --config ") + kTiny +
                              " --out " + file + "/sub");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--out"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(file + "/sub"));
}

TEST_F(CliTest, UnknownCommandAndNoCommandAreBadInput) {
  Result r = RunMemprof("profiel");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("known commands"), std::string::npos) << r.output;
  EXPECT_EQ(RunMemprof("").exit_code, 2);
  EXPECT_EQ(RunMemprof("profile --help").exit_code, 0);
}

}  // namespace
}  // namespace memprof
