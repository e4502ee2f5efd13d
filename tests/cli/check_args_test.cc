// The check and baseline flags: parsed only in the CLI, errors name the flag.
#include <functional>

#include <gtest/gtest.h>

#include "profiler/base/errors.h"
#include "profiler/cli/config_cli.h"
#include "tests/input_error_of.h"

namespace memprof {
namespace {

TEST(CheckArgs, ParsesEveryFlag) {
  const CheckArgs args = ParseCheckArgs(
      {"--baseline", "b.json", "--run", "out", "--tolerance", "2%",
       "--tolerance", "activations=3%", "--tolerance", "weights=64",
       "--tolerance-bytes", "4096", "--markdown", "m.md", "--json", "c.json",
       "--strict", "--allow-config-change"});
  EXPECT_EQ(args.check.baseline_path, "b.json");
  EXPECT_EQ(args.run_dir, "out");
  EXPECT_EQ(*args.check.tolerances.percent, 2.0);
  EXPECT_EQ(*args.check.tolerances.bytes, 4096);
  EXPECT_EQ(args.check.tolerances.per_key.at("activations").percent, 3.0);
  EXPECT_EQ(args.check.tolerances.per_key.at("weights").bytes, 64);
  EXPECT_EQ(args.check.markdown_path, "m.md");
  EXPECT_EQ(args.check.json_path, "c.json");
  EXPECT_TRUE(args.check.strict);
  EXPECT_TRUE(args.check.allow_config_change);

  const CheckArgs plain = ParseCheckArgs({"--baseline", "b", "--run", "r"});
  EXPECT_FALSE(plain.check.tolerances.percent);
  EXPECT_FALSE(plain.check.tolerances.bytes);
  EXPECT_FALSE(plain.check.strict);
  EXPECT_FALSE(plain.check.allow_config_change);
}

TEST(CheckArgs, BadFlagsAreNamed) {
  EXPECT_NE(InputErrorOf([] {
              ParseCheckArgs({"--run", "r"});
            }).find("--baseline FILE is required"),
            std::string::npos);
  EXPECT_NE(InputErrorOf([] {
              ParseCheckArgs({"--baseline", "b"});
            }).find("--run DIR is required"),
            std::string::npos);
  const std::string unknown_key = InputErrorOf([] {
    ParseCheckArgs(
        {"--baseline", "b", "--run", "r", "--tolerance", "activation=2%"});
  });
  EXPECT_NE(unknown_key.find("--tolerance activation=2%: unknown tolerance "
                             "key 'activation'"),
            std::string::npos)
      << unknown_key;
  EXPECT_NE(InputErrorOf([] {
              ParseCheckArgs(
                  {"--baseline", "b", "--run", "r", "--tolerance", "4096"});
            }).find("--tolerance-bytes 4096"),
            std::string::npos);
  EXPECT_NE(InputErrorOf([] {
              ParseCheckArgs({"--baseline", "b", "--run", "r", "--tolerance",
                              "weights=2 %"});
            }).find("not a percentage"),
            std::string::npos);
  EXPECT_NE(InputErrorOf([] {
              ParseCheckArgs(
                  {"--baseline", "b", "--run", "r", "--tolerance-bytes", "-1"});
            }).find("--tolerance-bytes must be 0 or more"),
            std::string::npos);
  EXPECT_NE(InputErrorOf([] {
              ParseCheckArgs({"--baseline", "b", "--bogus"});
            }).find("unknown flag"),
            std::string::npos);
  EXPECT_TRUE(ParseCheckArgs({"--help"}).help);
}

TEST(BaselineArgs, KeepsKeyedTolerancesOnly) {
  const BaselineArgs args =
      ParseBaselineArgs({"--run", "out", "--out", "b.json", "--tolerance",
                         "activations=2%", "--tolerance", "temporaries=4096"});
  EXPECT_EQ(args.run_dir, "out");
  EXPECT_EQ(args.out_path, "b.json");
  EXPECT_EQ(args.tolerances.at("activations").percent, 2.0);
  EXPECT_EQ(args.tolerances.at("temporaries").bytes, 4096);
  EXPECT_NE(
      InputErrorOf([] {
        ParseBaselineArgs({"--run", "out", "--out", "b", "--tolerance", "2%"});
      }).find("KEY=VALUE"),
      std::string::npos);
  EXPECT_NE(InputErrorOf([] {
              ParseBaselineArgs({"--run", "out"});
            }).find("--out FILE is required"),
            std::string::npos);
}

TEST(ProfileCheckArgs, CheckFlagsNeedCheck) {
  const std::string tiny = MEMPROF_SOURCE_DIR "/configs/mlp-tiny.ini";
  const ProfileArgs args =
      ParseProfileArgs({"--config", tiny, "--check", "b.json", "--tolerance",
                        "activations=2%", "--strict"});
  EXPECT_EQ(args.check.baseline_path, "b.json");
  EXPECT_EQ(args.check.tolerances.per_key.at("activations").percent, 2.0);
  EXPECT_TRUE(args.check.strict);
  EXPECT_TRUE(ParseProfileArgs({"--config", tiny}).check.baseline_path.empty());
  for (const std::vector<std::string>& words :
       std::vector<std::vector<std::string>>{{"--strict"},
                                             {"--tolerance", "2%"},
                                             {"--markdown", "m.md"},
                                             {"--allow-config-change"}}) {
    std::vector<std::string> with_config = {"--config", tiny};
    with_config.insert(with_config.end(), words.begin(), words.end());
    EXPECT_NE(InputErrorOf([&] {
                ParseProfileArgs(with_config);
              }).find("is a check option: add --check BASELINE"),
              std::string::npos)
        << words[0];
  }
}

}  // namespace
}  // namespace memprof
