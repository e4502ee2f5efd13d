#include "profiler/cli/config_cli.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "profiler/base/effective_config.h"
#include "profiler/base/errors.h"
#include "tests/input_error_of.h"
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

// A whole GPT config but for [train]'s last lines (line 10 is the next).
constexpr const char* kGpt =
    "model = gpt\n"
    "[gpt]\n"
    "layers = 2\n"
    "d_model = 64\n"
    "heads = 4\n"
    "seq_len = 16\n"
    "vocab = 100\n"
    "[train]\n"
    "micro_batch = 2\n";

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
  EXPECT_NE(error.find("unknown key 'mlp.width'; see 'memprof profile --help' "
                       "for the keys"),
            std::string::npos)
      << error;
  // A key mistyped by a letter or two: the keys it is close to.
  const std::string typo =
      Write("typo.ini", "model = mlp\n[mlp]\nhiden = 3\n[trian]\nsteps = 3\n");
  const std::string hidden = ErrorOf({"--config", typo});
  EXPECT_NE(hidden.find(typo + ":3: unknown key 'mlp.hiden'; did you mean "
                               "mlp.hidden? See 'memprof profile --help'"),
            std::string::npos)
      << hidden;
}

// A line the INI parser cannot read (no '=', an unclosed section, a colon
// for '=') is named by its number; a key given twice by the line that
// repeats it, with the first.
TEST_F(ConfigCliTest, SyntaxErrorsAndRepeatedKeysNameTheirLine) {
  for (const char* bad : {"junk here", "[mlp", "hidden: 3"}) {
    const std::string path =
        Write("bad.ini", std::string("model = mlp\n# a comment\n") + bad +
                             "  # and one after\n[train]\nsteps = 3\n");
    const std::string error = ErrorOf({"--config", path});
    EXPECT_NE(error.find(path + ":3: "), std::string::npos) << error;
    EXPECT_NE(error.find("lines are 'key = value' or '[section]'"),
              std::string::npos)
        << error;
  }
  const std::string twice = Write(
      "twice.ini", "model = mlp\n[train]\nsteps = 3\nlr = 0.1\nsteps = 4\n");
  const std::string error = ErrorOf({"--config", twice});
  EXPECT_NE(error.find(twice + ":5: "), std::string::npos) << error;
  EXPECT_NE(error.find("(first on line 3); keep one of them"),
            std::string::npos)
      << error;
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
  EXPECT_EQ(
      ParseProfileArgs({"--config", Write("good.ini", kGood), "--steps", "3"})
          .config.train.steps,
      3);
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
      "ckpt.ini", std::string(kGpt) + "activation_checkpointing = layers\n");
  const std::string unknown = ErrorOf({"--config", path});
  EXPECT_NE(unknown.find(path + ":10"), std::string::npos) << unknown;
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
      Write("dtype.ini", std::string(kGpt) + "dtype = float16\n");
  const std::string unknown = ErrorOf({"--config", path});
  EXPECT_NE(unknown.find(path + ":10"), std::string::npos) << unknown;
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
  const std::string other = ErrorOf(
      {"--config", Write("g.ini", "model = gpt\n"), "--mlp.hidden", "64"});
  EXPECT_NE(other.find("--mlp.hidden: the model is gpt"), std::string::npos)
      << other;
  // The global batch alone still decides the micro-batch.
  EXPECT_EQ(ParseProfileArgs(
                {"--config", Write("good.ini", kGood), "--global-batch", "8"})
                .config.train.global_batch,
            8);
}

// Note [Accumulation from the batches]: the global batch and the
// micro-batch together set train.grad_accum; each refusal names the flags
// or lines and the remedy.
TEST_F(ConfigCliTest, GlobalAndMicroBatchSetTheAccumulation) {
  const std::string good = Write("good.ini", kGood);  // micro_batch = 4
  const auto parse = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--config", good});
    return ParseProfileArgs(args).config;
  };
  const auto error = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--config", good});
    return ErrorOf(args);
  };
  const RunConfig flags = parse(
      {"--global-batch", "16", "--micro-batch", "2", "--world-size", "2"});
  EXPECT_EQ(flags.train.grad_accum, 4);
  EXPECT_EQ(MicroBatch(flags), 2);
  EXPECT_EQ(GlobalBatch(flags), 16);
  EXPECT_NE(flags.origins.at("train.grad_accum").find("16 / 4"),
            std::string::npos)
      << flags.origins.at("train.grad_accum");
  // The file's micro-batch yields to a --global-batch flag.
  const RunConfig global = parse({"--global-batch", "8", "--world-size", "2"});
  EXPECT_EQ(global.train.grad_accum, 1);
  EXPECT_EQ(MicroBatch(global), 4);
  // Note [Micro-batch from the global batch]: the config records the
  // micro-batch the run trains at, with where it came from.
  const RunConfig derived =
      parse({"--global-batch", "16", "--world-size", "2"});
  EXPECT_EQ(derived.train.micro_batch, 8);
  EXPECT_EQ(derived.origins.at("train.micro_batch"),
            "global / (ranks x accumulation): 16 / (2 x 1)");
  const RunConfig split = parse({"--global-batch", "16", "--grad-accum", "2"});
  EXPECT_EQ(MicroBatch(split), 8);
  EXPECT_EQ(split.train.micro_batch, 8);
  // Both in the file; the file's global batch with a --micro-batch flag.
  const std::string both =
      Write("both.ini", std::string(kGood) + "global_batch = 16\n");
  const RunConfig file =
      ParseProfileArgs({"--config", both, "--world-size", "2"}).config;
  EXPECT_EQ(file.train.grad_accum, 2);
  EXPECT_EQ(MicroBatch(file), 4);
  EXPECT_EQ(ParseProfileArgs({"--config", both, "--micro-batch", "1"})
                .config.train.grad_accum,
            16);
  // Refused: an accumulation that is no whole number, a disagreeing
  // grad_accum, a grad_accum of 0 or less, a global batch that does not
  // divide over ranks x grad_accum.
  const std::string uneven = error(
      {"--global-batch", "10", "--micro-batch", "4", "--world-size", "2"});
  for (const char* part : {"--global-batch 10", "--micro-batch 4", "on 2 ranks",
                           "not a whole number", "a multiple of 8",
                           "divides the per-rank batch 5"}) {
    EXPECT_NE(uneven.find(part), std::string::npos) << part << "\n" << uneven;
  }
  const std::string uneven_file =
      ErrorOf({"--config", both, "--world-size", "3"});
  EXPECT_NE(uneven_file.find(both + ":8: key 'train.micro_batch' 4"),
            std::string::npos)
      << uneven_file;
  const std::string conflict =
      error({"--global-batch", "16", "--micro-batch", "2", "--world-size", "2",
             "--grad-accum", "2"});
  for (const char* part : {"make 4 micro-batches per optimizer step",
                           "--grad-accum is 2", "make them agree"}) {
    EXPECT_NE(conflict.find(part), std::string::npos) << part << "\n"
                                                      << conflict;
  }
  for (const char* k : {"0", "-1", "5000"}) {
    const std::string bad = error({"--grad-accum", k});
    EXPECT_NE(bad.find("--grad-accum: train.grad_accum must be between 1"),
              std::string::npos)
        << bad;
    EXPECT_NE(bad.find("set it to the number of micro-batches"),
              std::string::npos)
        << bad;
  }
  const std::string indivisible =
      error({"--global-batch", "16", "--world-size", "2", "--grad-accum", "3"});
  EXPECT_NE(indivisible.find("does not divide over ddp.world_size 2 x "
                             "train.grad_accum 3; choose a multiple of 6"),
            std::string::npos)
      << indivisible;
  EXPECT_NE(error({"--grad-accum", "2", "--train.grad_accum", "2"})
                .find("--grad-accum and --train.grad_accum both given"),
            std::string::npos);
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
  // One token leaves the loss nothing to predict: a NaN loss at every step.
  const std::string one_token =
      ErrorOf({"--model", "llama", "--llama.seq_len", "1"});
  EXPECT_NE(one_token.find("--llama.seq_len: llama.seq_len 1 leaves no next "
                           "token to predict"),
            std::string::npos)
      << one_token;
  EXPECT_NE(one_token.find("use 2 or more"), std::string::npos) << one_token;
  const std::string path = Write("syntax.ini", "[mlp]\njust words\n");
  EXPECT_NE(ErrorOf({"--config", path}).find(path), std::string::npos);
  for (const char* seed : {"-1", "2147483648"}) {
    EXPECT_NE(
        ErrorOf({"--config", Write("good.ini", kGood), "--train.seed", seed})
            .find("train.seed must be in [0, 2147483647], got"),
        std::string::npos)
        << seed;
  }
}

// Boost would take a flag's unambiguous prefix as the flag: --micro 2 would
// set the micro-batch. Every command takes a flag only as written in full,
// and suggests the flags the prefix would have matched, or those a letter
// or two away.
TEST_F(ConfigCliTest, NoFlagIsTakenFromAPrefix) {
  const std::string path = Write("gpt.ini", kGpt);
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--gpt.layer", "3"}, "'--gpt.layer'; did you mean --gpt.layers?"},
      {{"--train.opt", "sgd"},
       "'--train.opt'; did you mean --train.optimizer?"},
      {{"--micro", "2"}, "'--micro'; did you mean --micro-batch?"},
      {{"--mem", "1GiB"}, "'--mem'; did you mean --memory-limit?"},
      // A flag mistyped by a letter or two.
      {{"--gpt.d_modle", "8"}, "'--gpt.d_modle'; did you mean --gpt.d_model?"},
  };
  for (const auto& [flag, expected] : cases) {
    std::vector<std::string> words = {"--config", path};
    words.insert(words.end(), flag.begin(), flag.end());
    const std::string error = ErrorOf(words);
    EXPECT_NE(error.find("unknown flag " + expected), std::string::npos)
        << error;
  }
  EXPECT_NE(InputErrorOf([&] {
              ParseFitArgs({"--config", path, "--bud", "1GiB"});
            }).find("unknown flag '--bud'; did you mean --budget?"),
            std::string::npos);
  EXPECT_NE(InputErrorOf([] {
              ParseCheckArgs({"--base", "b.json", "--run", "r"});
            }).find("unknown flag '--base'; did you mean --baseline?"),
            std::string::npos);
  EXPECT_NE(InputErrorOf([] {
              ParseReportArgs({"--ru", "r"});
            }).find("unknown flag '--ru'"),
            std::string::npos);
}

// Note [Config file text]: "\r" and "\r\n" line ends and a UTF-8 byte order
// mark read as a "\n" file would; a UTF-16 file is refused by name.
TEST_F(ConfigCliTest, LineEndsAndAByteOrderMarkReadAsPlainText) {
  const std::string plain = kGood;
  std::string cr = plain, crlf;
  std::replace(cr.begin(), cr.end(), '\n', '\r');
  for (char c : plain)
    crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  for (const auto& [name, text] :
       std::vector<std::pair<std::string, std::string>>{
           {"cr.ini", cr},
           {"crlf.ini", crlf},
           {"bom.ini", "\xEF\xBB\xBF" + plain}}) {
    const std::string path = Write(name, text);
    const ProfileArgs args = ParseProfileArgs({"--config", path});
    EXPECT_EQ(args.config.model, "mlp") << name;
    EXPECT_EQ(args.config.mlp.input, 12) << name;
    EXPECT_EQ(args.config.mlp.hidden, 34) << name;
    EXPECT_EQ(args.config.train.steps, 6) << name;
    EXPECT_EQ(args.config.origins.at("mlp.hidden"), path + ":4") << name;
    EXPECT_EQ(FindKeyLine(path, "train.steps"), 9) << name;
    // A bad value is named at its line, whatever the line ends.
    const std::string bad_path =
        Write("bad-" + name, text.substr(0, text.find("34")) + "0" +
                                 text.substr(text.find("34") + 2));
    const std::string error = ErrorOf({"--config", bad_path});
    EXPECT_NE(error.find(bad_path + ":4: key 'mlp.hidden'"), std::string::npos)
        << name << ": " << error;
  }
  const std::string utf16 = Write("utf16.ini", std::string("\xFF\xFEm\0=\0"));
  const std::string error = ErrorOf({"--config", utf16});
  EXPECT_NE(error.find(utf16 + ": the file is UTF-16 or UTF-32 text"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("save it as UTF-8"), std::string::npos) << error;
  // A NUL byte cut the message that quoted its value ("the argument ('32"),
  // and a 900 KB value was quoted whole: both are named by their line,
  // quoting nothing.
  const std::string nul =
      Write("nul.ini", std::string("model = mlp\n[mlp]\ninput = 32\0\n", 30));
  const std::string nul_error = ErrorOf({"--config", nul});
  EXPECT_NE(nul_error.find(nul + ":3: a NUL byte (binary data, not a config "
                                 "file)"),
            std::string::npos)
      << nul_error;
  const std::string wide =
      Write("wide.ini",
            "model = mlp\n[mlp]\ninput = " + std::string(900000, '9') + "\n");
  const std::string wide_error = ErrorOf({"--config", wide});
  EXPECT_NE(wide_error.find(wide + ":3: 900008 bytes on one line, more than "
                                   "the 4096"),
            std::string::npos)
      << wide_error.substr(0, 300);
  EXPECT_LT(wide_error.size(), 1000u);
}

// A flag whose value was forgotten takes the next flag as it: named, with
// the remedy, not "unexpected argument 'x.ini'" about the word after.
TEST_F(ConfigCliTest, AFlagThatTookTheNextFlagAsItsValueIsNamed) {
  const std::string path = Write("good.ini", kGood);
  EXPECT_NE(ErrorOf({"--hf-config", "--config", path})
                .find("--hf-config took the next flag, '--config', as its "
                      "value: give --hf-config its value"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--config", path, "--freeze", "--micro-batch", "2"})
                .find("--freeze took the next flag, '--micro-batch'"),
            std::string::npos);
  const std::string check = InputErrorOf([] {
    ParseCheckArgs({"--baseline", "--run", "r"});
  });
  EXPECT_NE(check.find("--baseline took the next flag, '--run'"),
            std::string::npos)
      << check;
}

// Note [Config file text]: a comment after a value, from "#" or from ";"
// after a space, is not part of the value; a value the key cannot take
// says what it takes.
TEST_F(ConfigCliTest, CommentsAfterAValueAreNotPartOfIt) {
  std::string text = kGood;
  text.replace(text.find("34"), 2, "34  ; wider than the input");
  text.replace(text.find("steps = 6"), 9, "steps = 6\t# few");
  const std::string path = Write("comments.ini", text);
  const ProfileArgs args = ParseProfileArgs({"--config", path});
  EXPECT_EQ(args.config.mlp.hidden, 34);
  EXPECT_EQ(args.config.train.steps, 6);
  EXPECT_EQ(args.config.origins.at("mlp.hidden"), path + ":4");
  std::string glued = kGood;
  glued.replace(glued.find("34"), 2, "34;wider");
  const std::string bad = Write("glued.ini", glued);
  const std::string error = ErrorOf({"--config", bad});
  EXPECT_NE(error.find(bad + ":4: the argument ('34;wider') for option "
                             "'mlp.hidden' is invalid: mlp.hidden takes a "
                             "whole number"),
            std::string::npos)
      << error;
  const std::string flag = ErrorOf({"--config", path, "--lora-alpha", "high"});
  EXPECT_NE(flag.find("'--lora-alpha' is invalid: lora.alpha takes a number"),
            std::string::npos)
      << flag;
}

// Note [No guessed model]: the model, its size keys and the micro-batch come
// from the file or a flag, never from a silent default.
TEST_F(ConfigCliTest, AModelWithoutItsSizesOrMicroBatchIsRefused) {
  const std::string bare = Write("bare.ini", "model = gpt\n");
  const std::string sizes = ErrorOf({"--config", bare});
  EXPECT_NE(sizes.find(bare + ": the model is gpt (" + bare +
                       ":1) but gpt.d_model, gpt.heads, gpt.layers, "
                       "gpt.seq_len, gpt.vocab are not set"),
            std::string::npos)
      << sizes;
  EXPECT_NE(sizes.find("does not guess"), std::string::npos) << sizes;
  const std::string one =
      ErrorOf({"--model", "mlp", "--mlp.input", "3", "--mlp.hidden", "4",
               "--mlp.depth", "1", "--micro-batch", "2"});
  EXPECT_NE(one.find("the model is mlp (--model) but mlp.output is not set"),
            std::string::npos)
      << one;
  std::string no_batch = kGpt;
  no_batch.erase(no_batch.find("[train]"));
  const std::string path = Write("nobatch.ini", no_batch);
  const std::string batch = ErrorOf({"--config", path});
  EXPECT_NE(batch.find(path + ": the micro-batch is not set"),
            std::string::npos)
      << batch;
  EXPECT_EQ(ParseProfileArgs({"--config", path, "--micro-batch", "2"})
                .config.train.micro_batch,
            2);
  EXPECT_EQ(ParseProfileArgs({"--config", path, "--global-batch", "4"})
                .config.train.global_batch,
            4);
  const std::string none = ErrorOf({"--steps", "3"});
  EXPECT_NE(none.find("profile: no config: pass --config FILE"),
            std::string::npos)
      << none;
  std::string no_model = kGood;
  no_model.erase(0, no_model.find('\n') + 1);
  const std::string unnamed = Write("unnamed.ini", no_model);
  EXPECT_NE(
      ErrorOf({"--config", unnamed}).find(unnamed + ": no 'model = ...' line"),
      std::string::npos);
  // Flags alone are a whole config too.
  const ProfileArgs flags = ParseProfileArgs(
      {"--model", "mlp", "--mlp.input", "3", "--mlp.hidden", "4", "--mlp.depth",
       "1", "--mlp.output", "2", "--micro-batch", "2"});
  EXPECT_EQ(flags.config.mlp.output, 2);
  EXPECT_EQ(flags.config.origins.at("train.steps"), "default");
}

// Note [Sweep's accumulation list]: sweep --grad-accum takes a list, each
// checked, and the world size defaults to the config's.
TEST_F(ConfigCliTest, SweepTakesAListOfAccumulations) {
  const std::string good = Write("good.ini", kGood);
  const SweepArgs args =
      ParseSweepArgs({"--config", good, "--world-size", "2", "--global-batch",
                      "16", "--grad-accum", "1,2,4"});
  EXPECT_EQ(args.grad_accums, (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(args.world_sizes, (std::vector<int64_t>{2}));
  for (const std::string& word : args.profile_words) {
    EXPECT_EQ(word.find("grad-accum"), std::string::npos) << word;
  }
  const auto error = [&](std::vector<std::string> extra) {
    std::vector<std::string> words = {"--config", good, "--global-batch", "16"};
    words.insert(words.end(), extra.begin(), extra.end());
    try {
      ParseSweepArgs(words);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error({"--grad-accum", "1,1"}).find("1 is given twice"),
            std::string::npos);
  EXPECT_NE(error({"--grad-accum", "0"})
                .find("'0' is not a number of micro-batches per optimizer "
                      "step in [1, 4096]"),
            std::string::npos);
  EXPECT_NE(error({"--grad-accum", "3", "--world-sizes", "1"})
                .find("not divisible by world size 1 x accumulation 3"),
            std::string::npos);
}

// A section, or a dotted key, for a model other than the chosen one would be
// ignored; it is refused at its line, and so is a section memprof does not
// know.
TEST_F(ConfigCliTest, ASectionForAnotherModelIsRefusedAtItsLine) {
  const std::string other =
      Write("other.ini", std::string(kGood) + "[gpt]\nlayers = 2\n");
  const std::string error = ErrorOf({"--config", other});
  EXPECT_NE(error.find(other +
                       ":10: section [gpt] is for model gpt, but the "
                       "model is mlp (" +
                       other + ":1)"),
            std::string::npos)
      << error;
  const std::string empty =
      Write("empty.ini", std::string(kGood) + "[resnet]\n");
  EXPECT_NE(ErrorOf({"--config", empty}).find(empty + ":10: section [resnet]"),
            std::string::npos);
  const std::string dotted =
      Write("dotted.ini", "gpt.layers = 2\n" + std::string(kGood));
  EXPECT_NE(ErrorOf({"--config", dotted})
                .find(dotted + ":1: key 'gpt.layers' is for model gpt"),
            std::string::npos);
  const std::string typo = Write("typo.ini", std::string(kGood) + "[trian]\n");
  EXPECT_NE(ErrorOf({"--config", typo})
                .find(typo + ":10: unknown section [trian]; known: mlp, gpt, "
                             "llama, resnet, train, ddp, lora"),
            std::string::npos);
}

// Integers are at most 2^31 - 1 (reference.md), steps at most 100,000; a
// command's timeout at most a day.
TEST_F(ConfigCliTest, StepsAndTheCommandTimeoutAreBounded) {
  const std::string path = Write("good.ini", kGood);
  const std::string steps =
      ErrorOf({"--config", path, "--steps", "2147483648"});
  EXPECT_NE(steps.find("train.steps must be at most 2147483647, got "
                       "2147483648"),
            std::string::npos)
      << steps;
  // Every step adds to the rank report, which memprof's readers take up to
  // 64 MiB of: 300,000 steps wrote one they refused.
  const std::string long_run = ErrorOf({"--config", path, "--steps", "100001"});
  EXPECT_NE(long_run.find("train.steps must be at most 100000, got 100001: "
                          "each step adds to the rank report"),
            std::string::npos)
      << long_run;
  std::string timeout;
  try {
    ParseFitArgs({"--runs", "a,b", "--budget", "1GiB", "--measure", "--command",
                  "run {micro_batch}", "--command-timeout", "86401"});
  } catch (const InputError& e) {
    timeout = e.what();
  }
  EXPECT_NE(timeout.find("--command-timeout 86401: expected seconds, from 1 "
                         "to 86400 (a day)"),
            std::string::npos)
      << timeout;
}

// Note [Kept detail bound]: at most 5,000 micro-batches keep their detail,
// so the report stays readable; every step's peak is kept regardless.
TEST_F(ConfigCliTest, KeptDetailIsBoundedSoTheReportStaysReadable) {
  const std::string path = Write("good.ini", kGood);
  const std::string all =
      ErrorOf({"--config", path, "--steps", "5001", "--keep-steps", "all"});
  EXPECT_NE(all.find("--keep-steps all: 5001 steps of 1 micro-batch(es) would "
                     "keep their detail"),
            std::string::npos)
      << all;
  EXPECT_EQ(
      ErrorOf({"--config", path, "--steps", "5000", "--keep-steps", "all"}),
      "");
  EXPECT_EQ(ErrorOf({"--config", path, "--steps", "100000"}), "");
  const std::string accumulated =
      ErrorOf({"--config", path, "--steps", "3000", "--keep-steps", "2999",
               "--grad-accum", "2"});
  EXPECT_NE(accumulated.find("--keep-steps 2999: 3000 steps of 2 "),
            std::string::npos)
      << accumulated;
}

// A word without a flag is refused, not ignored, by every command: '--quiet
// yes' would otherwise run as --quiet.
TEST_F(ConfigCliTest, AWordWithoutAFlagIsRefused) {
  const std::string path = Write("good.ini", kGood);
  const std::string error = ErrorOf({"--config", path, "--quiet", "yes"});
  EXPECT_NE(error.find("unexpected argument 'yes': every argument is a --flag "
                       "or a flag's value (a switch such as --strict or "
                       "--quiet takes none)"),
            std::string::npos)
      << error;
}

// [lora], as fine-tuning.md writes it, beside any model's own section.
TEST_F(ConfigCliTest, ReadsALoraSection) {
  const std::string path =
      Write("lora.ini", std::string(kGpt) +
                            "[lora]\nrank = 4\nalpha = 16\ntargets = c_attn\n");
  const ProfileArgs args = ParseProfileArgs({"--config", path});
  EXPECT_EQ(args.config.lora.rank, 4);
  EXPECT_EQ(args.config.lora.alpha, 16);
  EXPECT_EQ(args.config.lora.targets, "c_attn");
  EXPECT_EQ(args.config.origins.at("lora.rank"), path + ":11");
  const std::string typo =
      Write("typo.ini", std::string(kGpt) + "[lora]\nrnak = 4\n");
  EXPECT_NE(ErrorOf({"--config", typo}).find(typo + ":11: unknown key "),
            std::string::npos)
      << ErrorOf({"--config", typo});
}

// The effective config: each key's value with where it came from.
TEST_F(ConfigCliTest, EachKeyRecordsWhereItsValueCameFrom) {
  const std::string path = Write("good.ini", kGood);
  const ProfileArgs args = ParseProfileArgs(
      {"--config", path, "--steps", "5", "--train.lr", "0.01"});
  const std::map<std::string, std::string>& origins = args.config.origins;
  EXPECT_EQ(origins.at("model"), path + ":1");
  EXPECT_EQ(origins.at("mlp.hidden"), path + ":4");
  EXPECT_EQ(origins.at("train.micro_batch"), path + ":8");
  EXPECT_EQ(origins.at("train.steps"), "--steps");
  EXPECT_EQ(origins.at("train.lr"), "--train.lr");
  EXPECT_EQ(origins.at("train.optimizer"), "default");
  EXPECT_EQ(origins.at("ddp.world_size"), "default");
  EXPECT_EQ(origins.count("gpt.layers"), 0u) << "only the chosen model's keys";
  // Aligned columns, read here with each run of spaces as one.
  const std::string text = std::regex_replace(
      FormatEffectiveConfig(args.config), std::regex(" +"), " ");
  EXPECT_EQ(text.rfind("effective config (file " + path, 0), 0u) << text;
  EXPECT_NE(text.find("\n mlp.hidden 34 " + path + ":4\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\n train.lr 0.01 --train.lr\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\n train.optimizer adam default\n"), std::string::npos)
      << text;
}

// A sweep runs each world size (and stage) once.
TEST_F(ConfigCliTest, ASweepPointGivenTwiceIsRefused) {
  const std::string path = Write("good.ini", kGood);
  const auto error_of = [&](const std::string& sizes,
                            const std::string& stages) {
    try {
      ParseSweepArgs({"--config", path, "--global-batch", "4", "--world-sizes",
                      sizes, "--zero-stages", stages});
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of("1,2,1", "0")
                .find("--world-sizes 1,2,1: 1 is given "
                      "twice; give each world size once"),
            std::string::npos);
  EXPECT_NE(error_of("1,2", "0,1,0")
                .find("--zero-stages 0,1,0: 0 is given "
                      "twice; give each stage once"),
            std::string::npos);
  EXPECT_EQ(error_of("1,2", "0,1"), "");
}

// Each sweep point's micro-batch is G/(N K): a --micro-batch would be
// dropped, so it is refused, naming --grad-accum for accumulation.
TEST_F(ConfigCliTest, ASweepRefusesAMicroBatch) {
  const std::string path = Write("good.ini", kGood);
  for (const std::vector<std::string>& flag :
       std::vector<std::vector<std::string>>{{"--micro-batch", "2"},
                                             {"--micro-batch=2"},
                                             {"--train.micro_batch", "2"}}) {
    std::vector<std::string> words = {
        "--config", path, "--global-batch", "8", "--world-sizes", "1,2"};
    words.insert(words.end(), flag.begin(), flag.end());
    const std::string error = InputErrorOf([&] { ParseSweepArgs(words); });
    EXPECT_NE(error.find("is not a sweep flag: each world size N runs at "
                         "micro-batch G/(N K)"),
              std::string::npos)
        << flag[0] << ": " << error;
  }
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
