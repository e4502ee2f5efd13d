#include "profiler/cli/config_cli.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "profiler/base/errors.h"
#include "tests/temp_dir.h"

namespace memprof {
namespace {

namespace fs = std::filesystem;

class ConfigCliTest : public TempDirTest {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // The InputError message of parsing `args`, or "" when it parsed.
  static std::string ErrorOf(const std::vector<std::string>& args) {
    try {
      ParseProfileArgs(args);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
};

constexpr const char* kGood =
    "model = mlp\n"
    "[mlp]\n"
    "input = 12\n"
    "hidden = 34\n"
    "depth = 2\n"
    "output = 5\n"
    "[train]\n"
    "micro_batch = 4\n"
    "steps = 6\n";

TEST_F(ConfigCliTest, ReadsSectionsAsDottedKeys) {
  const std::string path = Write("good.ini", kGood);
  const ProfileArgs args = ParseProfileArgs({"--config", path});
  EXPECT_EQ(args.config.source, path);
  EXPECT_EQ(args.config.mlp.input, 12);
  EXPECT_EQ(args.config.mlp.hidden, 34);
  EXPECT_EQ(args.config.mlp.output, 5);
  EXPECT_EQ(args.config.train.micro_batch, 4);
  EXPECT_EQ(args.config.train.steps, 6);
  EXPECT_EQ(args.config.train.optimizer, "adam");  // default kept
}

TEST_F(ConfigCliTest, FlagsWinOverTheFile) {
  const std::string path = Write("good.ini", kGood);
  const ProfileArgs args =
      ParseProfileArgs({"--config", path, "--mlp.hidden", "7", "--steps", "5",
                        "--micro-batch", "3", "--out", "d"});
  EXPECT_EQ(args.config.mlp.hidden, 7);
  EXPECT_EQ(args.config.train.steps, 5);
  EXPECT_EQ(args.config.train.micro_batch, 3);
  EXPECT_EQ(args.out_dir, "d");
}

TEST_F(ConfigCliTest, UnknownKeyNamesFileLineAndKey) {
  const std::string path =
      Write("unknown.ini", "model = mlp\n[mlp]\nhidden = 3\nwidth = 9\n");
  const std::string error = ErrorOf({"--config", path});
  EXPECT_NE(error.find(path + ":4"), std::string::npos) << error;
  EXPECT_NE(error.find("unknown key 'mlp.width'"), std::string::npos) << error;
}

TEST_F(ConfigCliTest, MalformedValueNamesFileLineAndKey) {
  const std::string path = Write("bad.ini", "[mlp]\nhidden = wide\n");
  const std::string error = ErrorOf({"--config", path});
  EXPECT_NE(error.find(path + ":2"), std::string::npos) << error;
  EXPECT_NE(error.find("mlp.hidden"), std::string::npos) << error;
}

TEST_F(ConfigCliTest, NonPositiveSizeNamesWhereItCameFrom) {
  const std::string path = Write("zero.ini", "[mlp]\ninput = 4\ndepth = 0\n");
  const std::string from_file = ErrorOf({"--config", path});
  EXPECT_NE(from_file.find(path + ":3"), std::string::npos) << from_file;
  EXPECT_NE(from_file.find("mlp.depth must be positive"), std::string::npos)
      << from_file;
  const std::string from_flag = ErrorOf({"--mlp.hidden=-8"});
  EXPECT_NE(from_flag.find("--mlp.hidden"), std::string::npos) << from_flag;
  const std::string from_alias = ErrorOf({"--steps", "0"});
  EXPECT_NE(from_alias.find("--steps"), std::string::npos) << from_alias;
}

// A run of one or two steps has no steady state to report (the one-time
// allocations of steps 1 and 2 would be read as the steady state's).
TEST_F(ConfigCliTest, TooFewStepsForASteadyStateAreRefused) {
  for (const char* steps : {"1", "2"}) {
    const std::string error = ErrorOf({"--steps", steps});
    EXPECT_NE(error.find("--steps"), std::string::npos) << error;
    EXPECT_NE(error.find("must be at least 3, got " + std::string(steps)),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("steady state"), std::string::npos) << error;
  }
  EXPECT_EQ(ParseProfileArgs({"--steps", "3"}).config.train.steps, 3);
}

TEST_F(ConfigCliTest, InfinityAndNanAreRefusedAndIntegersEchoedAsSuch) {
  for (const char* key : {"--train.lr", "--ddp.bucket_cap_mb"}) {
    for (const char* value : {"inf", "nan", "-inf"}) {
      const std::string error = ErrorOf({key, value});
      EXPECT_NE(error.find(std::string(key + 2) +
                           " must be a finite positive number, got " + value),
                std::string::npos)
          << error;
    }
  }
  const std::string zero = ErrorOf({"--mlp.hidden", "0"});
  EXPECT_NE(zero.find("mlp.hidden must be positive, got 0"), std::string::npos)
      << zero;
  EXPECT_EQ(zero.find("got 0.0"), std::string::npos) << zero;
  const std::string dropout = ErrorOf(
      {"--config", Write("gpt.ini", "model = gpt\n"), "--gpt.dropout", "nan"});
  EXPECT_NE(dropout.find("gpt.dropout must be in [0, 1), got nan"),
            std::string::npos)
      << dropout;
}

TEST_F(ConfigCliTest, MomentumIsSgdsAndBelowOne) {
  for (const char* value : {"1", "-0.1", "inf", "nan"}) {
    const std::string error =
        ErrorOf({"--train.optimizer", "sgd", "--train.momentum", value});
    EXPECT_NE(error.find("train.momentum must be in [0, 1), got "),
              std::string::npos)
        << error;
  }
  const std::string adam = ErrorOf({"--train.momentum", "0.9"});
  EXPECT_NE(adam.find("train.momentum is sgd's; adam keeps its own moments"),
            std::string::npos)
      << adam;
  const std::string path =
      Write("momentum.ini", std::string(kGood) + "momentum = 0.9\n");
  const std::string from_file = ErrorOf({"--config", path});
  EXPECT_NE(from_file.find(path + ":10"), std::string::npos) << from_file;
  EXPECT_EQ(ParseProfileArgs({"--config", path, "--train.optimizer", "sgd"})
                .config.train.momentum,
            0.9);
}

TEST_F(ConfigCliTest, ActivationCheckpointingNeedsAKnownModeAndBlocks) {
  const std::string path = Write(
      "ckpt.ini", "model = gpt\n[train]\nactivation_checkpointing = layers\n");
  const std::string unknown = ErrorOf({"--config", path});
  EXPECT_NE(unknown.find(path + ":3"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("unknown train.activation_checkpointing 'layers'; "
                         "known: none, blocks"),
            std::string::npos)
      << unknown;
  const std::string mlp =
      ErrorOf({"--train.activation_checkpointing", "blocks"});
  EXPECT_NE(mlp.find("--train.activation_checkpointing"), std::string::npos)
      << mlp;
  EXPECT_NE(mlp.find("mlp has none"), std::string::npos) << mlp;
  EXPECT_EQ(ParseProfileArgs({"--config", path,
                              "--train.activation_checkpointing", "blocks"})
                .config.train.activation_checkpointing,
            "blocks");
}

TEST_F(ConfigCliTest, DtypeIsOneOfTheThreePrecisions) {
  const std::string path =
      Write("dtype.ini", "model = gpt\n[train]\ndtype = float16\n");
  const std::string unknown = ErrorOf({"--config", path});
  EXPECT_NE(unknown.find(path + ":3"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("unknown train.dtype 'float16'; known: float32, "
                         "bf16-autocast"),
            std::string::npos)
      << unknown;
  const std::string flag = ErrorOf({"--train.dtype", "bf16"});
  EXPECT_NE(flag.find("--train.dtype"), std::string::npos) << flag;
  for (const char* dtype : {"float32", "bf16-autocast", "bfloat16"}) {
    EXPECT_EQ(ParseProfileArgs({"--config", path, "--train.dtype", dtype})
                  .config.train.dtype,
              dtype);
  }
}

TEST_F(ConfigCliTest, AStrayArgumentAndTwoBatchSizesAreRefused) {
  const std::string stray = ErrorOf({"stray", "--steps", "2"});
  EXPECT_NE(stray.find("unexpected argument 'stray'"), std::string::npos)
      << stray;
  const std::string both =
      ErrorOf({"--global-batch", "8", "--micro-batch", "2"});
  EXPECT_NE(both.find("--micro-batch and --global-batch both given"),
            std::string::npos)
      << both;
  const std::string other = ErrorOf(
      {"--config", Write("g.ini", "model = gpt\n"), "--mlp.hidden", "64"});
  EXPECT_NE(other.find("--mlp.hidden: the model is gpt"), std::string::npos)
      << other;
  // The global batch alone still decides the micro-batch.
  EXPECT_EQ(ParseProfileArgs({"--global-batch", "8"}).config.train.global_batch,
            8);
}

TEST_F(ConfigCliTest, MissingFileNamesItAndTheRemedy) {
  const std::string error = ErrorOf({"--config", "/nonexistent/x.ini"});
  EXPECT_NE(error.find("'/nonexistent/x.ini'"), std::string::npos) << error;
  EXPECT_NE(error.find("No such file"), std::string::npos) << error;
}

TEST_F(ConfigCliTest, BadFlagsAndValuesAreRejected) {
  EXPECT_NE(ErrorOf({"--no-such-flag"}).find("unknown flag"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--model", "transformer"}).find("known models: mlp"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--train.optimizer", "lion"}).find("adam, adamw, sgd"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--world-size", "3", "--global-batch", "8"})
                .find("does not divide"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--world-size", "2", "--ddp.world_size", "2"})
                .find("both given"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--train.device", "tpu"}).find("known: cpu, cuda"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--ddp.backend", "mpi"}).find("known: gloo, nccl"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--ddp.backend", "nccl"})
                .find("ddp.backend nccl needs train.device cuda"),
            std::string::npos);
  const std::string path = Write("syntax.ini", "[mlp]\njust words\n");
  EXPECT_NE(ErrorOf({"--config", path}).find(path), std::string::npos);
}

TEST(FindKeyLine, TracksSections) {
  const TempDir dir;
  const std::string path = (dir.path() / "findkey.ini").string();
  std::ofstream(path) << "# c\nmodel = mlp\n\n[train]\n steps = 1\n[mlp]\n"
                         "steps = 2\n";
  EXPECT_EQ(FindKeyLine(path, "model"), 2);
  EXPECT_EQ(FindKeyLine(path, "train.steps"), 5);
  EXPECT_EQ(FindKeyLine(path, "mlp.steps"), 7);
  EXPECT_EQ(FindKeyLine(path, "mlp.hidden"), 0);
}

}  // namespace
}  // namespace memprof
