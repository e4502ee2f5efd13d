// Config files and values that once ran past memprof's bounds: a config
// that is a device or a FIFO (read forever, or blocked), a timeout or a
// bucket size past what the clocks and int64 hold, a world whose totals
// overflow int64. Each is refused up front, naming the file or flag.
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "profiler/base/errors.h"
#include "profiler/cli/config_cli.h"
#include "tests/input_error_of.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"
#include "tests/text_file.h"

namespace memprof {
namespace {

const std::string kTiny = MEMPROF_SOURCE_DIR "/configs/mlp-tiny.ini";

std::string ErrorOf(const std::vector<std::string>& words) {
  return InputErrorOf([&] { ParseProfileArgs(words); });
}

class ConfigBounds : public TempDirTest {};

TEST_F(ConfigBounds, AConfigThatIsNotARegularFileIsRefusedUnread) {
  EXPECT_EQ(ErrorOf({"--config", "/dev/zero"}),
            "cannot read config file '/dev/zero': it is a character device, "
            "not a regular file; pass an INI file to --config");
  const std::string fifo = (dir_ / "config.ini").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(ErrorOf({"--config", fifo}).find("it is a named pipe (FIFO)"),
            std::string::npos);
  // End to end: exit 2, at once.
  const CommandResult r = RunMemprof("predict --config /dev/zero");
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.output;
  EXPECT_NE(r.output.find("character device"), std::string::npos) << r.output;
}

TEST_F(ConfigBounds, AConfigOverTheCapIsRefusedWithTheCap) {
  const std::string path = (dir_ / "big.ini").string();
  WriteFile(path, "# " + std::string(kMaxConfigFileBytes, 'x') + "\n");
  EXPECT_NE(ErrorOf({"--config", path})
                .find("more than the 1.00 MiB memprof reads from such a file; "
                      "pass an INI file to --config"),
            std::string::npos);
}

TEST_F(ConfigBounds, ATimeoutPastADayIsRefused) {
  for (const char* value : {"86401", "10000000000", "100000000000"}) {
    EXPECT_EQ(ErrorOf({"--config", kTiny, "--ddp.timeout_s", value}),
              std::string("--ddp.timeout_s: ddp.timeout_s must be at most "
                          "86400, got ") +
                  value);
  }
  EXPECT_EQ(ParseProfileArgs({"--config", kTiny, "--ddp.timeout_s", "86400"})
                .config.ddp.timeout_s,
            86400);
}

TEST_F(ConfigBounds, ABucketCapPastATebibyteIsRefused) {
  EXPECT_EQ(ErrorOf({"--config", kTiny, "--ddp.bucket_cap_mb", "1e300"}),
            "--ddp.bucket_cap_mb: ddp.bucket_cap_mb must be at most 1048576 "
            "(1 TiB), got 1e+300");
  EXPECT_EQ(
      ParseProfileArgs({"--config", kTiny, "--ddp.bucket_cap_mb", "1048576"})
          .config.ddp.bucket_cap_mb,
      1048576);
}

// 34 billion fp32 parameters: the model state of 2^24 ranks added up is
// past int64, and predict and fit printed wrapped figures ("-6291096 TiB
// in all", "-8388320 TiB in duplicate").
TEST_F(ConfigBounds, AWorldWhoseTotalsOverflowIsRefusedByPredictAndFit) {
  const std::string big = (dir_ / "big.ini").string();
  WriteFile(big,
            "model = mlp\n[mlp]\ninput = 65536\nhidden = 65536\ndepth = 8\n"
            "output = 10\n[train]\nmicro_batch = 8\n");
  for (const std::string command :
       {"predict --config " + big + " --world-size 16777216",
        "fit --config " + big + " --budget 80GiB --world-size 16777216"}) {
    const CommandResult r = RunMemprof(command);
    EXPECT_EQ(r.exit_code, kExitBadInput) << command << "\n" << r.output;
    EXPECT_NE(r.output.find("--world-size: ddp.world_size 16777216: the model "
                            "state of that many ranks, added up, is more "
                            "bytes than memprof can count (2^63 - 1); choose "
                            "at most "),
              std::string::npos)
        << command << "\n"
        << r.output;
  }
  const CommandResult fine =
      RunMemprof("predict --config " + big + " --world-size 4096 --json");
  EXPECT_EQ(fine.exit_code, 0) << fine.output;
  EXPECT_EQ(fine.output.find("\"group_bytes\": -"), std::string::npos)
      << fine.output;
  EXPECT_EQ(fine.output.find("\"duplicated_bytes\": -"), std::string::npos)
      << fine.output;
}

}  // namespace
}  // namespace memprof
