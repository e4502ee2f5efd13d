// The regression gate end to end: `memprof profile --check` on the committed
// baselines, repeated runs that must not be flaky, a model one unit wider
// that must fail by exactly its extra parameters' bytes, and malformed
// inputs that must be bad input (exit 2), never a crash or a pass.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/run_command.h"
#include "tests/temp_dir.h"
#include "tests/text_file.h"

namespace memprof {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr const char* kTiny = MEMPROF_SOURCE_DIR "/configs/mlp-tiny.ini";
constexpr const char* kBaselines = MEMPROF_SOURCE_DIR "/reports/baselines";
constexpr const char* kSeedReport =
    MEMPROF_SOURCE_DIR "/fuzz/seeds/rank-0.json";
// mlp-tiny at its own micro-batch 8 runs out of memory under this limit in
// step 2's optimizer update (step 1 peaks below it).
constexpr int64_t kStepTwoLimitBytes = 252000;
constexpr const char* kModelState[] = {"weights", "gradients",
                                       "optimizer_state", "ddp_buckets"};

// Parameters of the MLP in `config` (context.config of a rank report):
// Linear(input, hidden), depth - 1 x Linear(hidden, hidden),
// Linear(hidden, output), each with a bias.
int64_t MlpParameters(const Json& config, int64_t hidden) {
  const int64_t input = config["mlp"]["input"].get<int64_t>();
  const int64_t depth = config["mlp"]["depth"].get<int64_t>();
  const int64_t output = config["mlp"]["output"].get<int64_t>();
  return (input * hidden + hidden) + (depth - 1) * (hidden * hidden + hidden) +
         (hidden * output + output);
}

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  ::close(fd);
  return ntohs(addr.sin_port);
}

class RegressionGateTest : public TempDirTest {
 protected:
  std::string Path(const std::string& name) const {
    return (dir_ / name).string();
  }
  static Json Read(const std::string& path) {
    return Json::parse(ReadFile(path));
  }
  std::string Write(const std::string& name, const std::string& text) const {
    std::ofstream(Path(name)) << text;
    return Path(name);
  }
  // A run directory holding the committed one-rank report.
  std::string SeedRun(const std::string& name) const {
    fs::create_directories(Path(name));
    fs::copy_file(kSeedReport, Path(name) + "/rank-0.json");
    return Path(name);
  }
  // Profiles mlp-tiny on two ranks into `name`; fails the test otherwise.
  std::string Profile(const std::string& name, const std::string& flags = "") {
    const CommandResult r =
        RunMemprof(std::string("profile --config ") + kTiny +
                   " --world-size 2 --out " + Path(name) + " " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return Path(name);
  }
  static int64_t Bytes(const Json& rank, const char* category,
                       const char* figure) {
    return rank["categories"][category][figure].get<int64_t>();
  }
  // The row of a memprof.check/1 result.
  static const Json& Row(const Json& check, const std::string& key,
                         const std::string& figure, int rank) {
    for (const Json& row : check["figures"]) {
      if (row["key"] == key && row["figure"] == figure && row["rank"] == rank)
        return row;
    }
    ADD_FAILURE() << "no row " << key << " " << figure << " " << rank;
    static const Json none;
    return none;
  }
  // profile `config` with `flags`, gated on `baseline`: it passes with
  // nothing regressed. Returns the check as JSON.
  Json ProfileAndCheck(const std::string& config, const std::string& flags,
                       const std::string& baseline) const {
    const CommandResult r = RunMemprof(
        "profile --config " + config + " " + flags + " --out " + Path("run") +
        " --check " + baseline + " --json " + Path("c.json"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("0 regressed"), std::string::npos) << r.output;
    if (!fs::exists(Path("c.json"))) return Json::object();
    const Json check = Read(Path("c.json"));
    EXPECT_EQ(check["result"], "ok");
    return check;
  }
};

TEST_F(RegressionGateTest, ProfileCheckPassesOnTheCommittedOneRankBaseline) {
  const CommandResult r = RunMemprof(
      std::string("profile --config ") + kTiny + " --out " + Path("run") +
      " --check " + kBaselines + "/mlp-tiny-ws1.json --json " + Path("c.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("0 regressed"), std::string::npos) << r.output;
  EXPECT_EQ(Read(Path("c.json"))["result"], "ok");
}

TEST_F(RegressionGateTest, ProfileCheckPassesOnTheCommittedTwoRankBaseline) {
  const CommandResult r = RunMemprof(
      std::string("profile --config ") + kTiny + " --world-size 2 --out " +
      Path("run") + " --check " + kBaselines + "/mlp-tiny-ws2.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("0 regressed"), std::string::npos) << r.output;
  // Checked once, by the launcher, after both ranks finished.
  const size_t first = r.output.find("memprof check:");
  ASSERT_NE(first, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("memprof check:", first + 1), std::string::npos)
      << r.output;
  EXPECT_GT(first, r.output.find("reports: ")) << r.output;
}

TEST_F(RegressionGateTest, ProfileCheckPassesOnTheCommittedZeroOneBaseline) {
  const CommandResult r = RunMemprof(
      std::string("profile --config ") + kTiny +
      " --world-size 2 --ddp.zero_stage 1 --out " + Path("run") + " --check " +
      kBaselines + "/mlp-tiny-ws2-zero1.json --json " + Path("c.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("0 regressed"), std::string::npos) << r.output;
  const Json check = Read(Path("c.json"));
  EXPECT_EQ(check["result"], "ok");
  // The ranks hold different optimizer state, each gated to the byte.
  EXPECT_NE(Row(check, "optimizer_state", "peak_bytes", 0)["now_bytes"],
            Row(check, "optimizer_state", "peak_bytes", 1)["now_bytes"]);
  // Plain DDP against it: another config, refused before training.
  const CommandResult plain = RunMemprof(
      std::string("profile --config ") + kTiny + " --world-size 2 --out " +
      Path("plain") + " --check " + kBaselines + "/mlp-tiny-ws2-zero1.json");
  EXPECT_EQ(plain.exit_code, 2) << plain.output;
  EXPECT_NE(plain.output.find("config.ddp.zero_stage: baseline 1, run 0"),
            std::string::npos)
      << plain.output;
}

// Checkpointed gpt-tiny: every figure gated, the activations held lower
// than a plain run's; the plain run is another config, refused before it
// trains.
TEST_F(RegressionGateTest, ProfileCheckPassesOnTheCommittedCheckpointedGpt) {
  const std::string gpt = MEMPROF_SOURCE_DIR "/configs/gpt-tiny.ini";
  const std::string baseline =
      std::string(kBaselines) + "/gpt-tiny-ws1-checkpointed.json";
  const Json check =
      ProfileAndCheck(gpt, "--train.activation_checkpointing blocks", baseline);
  EXPECT_EQ(Row(check, "activations", "peak_bytes", 0)["now_bytes"],
            Row(check, "activations", "peak_bytes", 0)["baseline_bytes"]);
  const CommandResult plain =
      RunMemprof("profile --config " + gpt + " --out " + Path("plain") +
                 " --check " + baseline);
  EXPECT_EQ(plain.exit_code, 2) << plain.output;
  EXPECT_NE(plain.output.find("config.train.activation_checkpointing: "
                              "baseline \"blocks\", run \"none\""),
            std::string::npos)
      << plain.output;
}

// bf16-autocast mlp-tiny: the weights' bfloat16 copies gated to the byte
// beside model state; a float32 run is another config, refused before it
// trains.
TEST_F(RegressionGateTest, ProfileCheckPassesOnTheCommittedAutocastMlp) {
  const std::string baseline =
      std::string(kBaselines) + "/mlp-tiny-ws1-bf16-autocast.json";
  const Json check =
      ProfileAndCheck(kTiny, "--train.dtype bf16-autocast", baseline);
  const Json& casts = Row(check, "weight_casts", "peak_bytes", 0);
  EXPECT_GT(casts["baseline_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(casts["now_bytes"], casts["baseline_bytes"]);
  EXPECT_EQ(casts["allowed_bytes"], 0);
  const CommandResult fp32 =
      RunMemprof(std::string("profile --config ") + kTiny + " --out " +
                 Path("fp32") + " --check " + baseline);
  EXPECT_EQ(fp32.exit_code, 2) << fp32.output;
  EXPECT_NE(fp32.output.find("dtype"), std::string::npos) << fp32.output;
  EXPECT_EQ(fp32.output.find("steady-state peak"), std::string::npos)
      << "trained before refusing: " << fp32.output;
}

// A baseline the run could not be gated against, and an --out it cannot
// write, are refused before anything trains.
TEST_F(RegressionGateTest, ABaselineOfAnotherConfigIsRefusedBeforeTraining) {
  const CommandResult r = RunMemprof(
      std::string("profile --config ") + kTiny + " --mlp.hidden 65 --out " +
      Path("run") + " --check " + kBaselines + "/mlp-tiny-ws1.json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("config.mlp.hidden: baseline 64, run 65"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("steady-state peak"), std::string::npos)
      << "trained before refusing: " << r.output;
  EXPECT_FALSE(fs::exists(Path("run") + "/rank-0.json"));
  const CommandResult unwritable = RunMemprof(std::string("profile --config ") +
                                              kTiny + " --out /proc/self");
  EXPECT_EQ(unwritable.exit_code, 2) << unwritable.output;
  EXPECT_NE(unwritable.output.find("--out /proc/self"), std::string::npos)
      << unwritable.output;
  EXPECT_EQ(unwritable.output.find("steady-state peak"), std::string::npos)
      << unwritable.output;
}

TEST_F(RegressionGateTest, UnderSlurmOnlyRankZeroChecks) {
  const std::string common =
      "MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(FreePort()) +
      " SLURM_NTASKS=2 " + MEMPROF_BINARY + " profile --config " + kTiny +
      " --out " + Path("run") + " --check " + kBaselines + "/mlp-tiny-ws2.json";
  const CommandResult r =
      RunCommand("(SLURM_PROCID=1 " + common + " > " + Path("rank1.log") +
                 " 2>&1 & SLURM_PROCID=0 " + common + "; code=$?; wait $!; " +
                 "exit $(( code | $? )))");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("memprof check:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("0 regressed"), std::string::npos) << r.output;
  EXPECT_EQ(ReadFile(Path("rank1.log")).find("memprof check:"),
            std::string::npos);
}

TEST_F(RegressionGateTest, RepeatedRunsGiveTheSameBytesAndPass) {
  const std::string runs[] = {Profile("a"), Profile("b"), Profile("c")};
  for (int rank = 0; rank < 2; ++rank) {
    const std::string file = "/rank-" + std::to_string(rank) + ".json";
    const Json first = Read(runs[0] + file);
    for (int i = 1; i < 3; ++i) {
      const Json again = Read(runs[i] + file);
      for (const char* category : kModelState) {
        for (const char* figure : {"measured_bytes", "peak_bytes"}) {
          EXPECT_EQ(Bytes(again, category, figure),
                    Bytes(first, category, figure))
              << category << " " << figure << " rank " << rank;
        }
      }
      for (const char* figure : {"measured_bytes", "peak_bytes"}) {
        const double base = Bytes(first, "activations", figure);
        EXPECT_LE(std::abs(Bytes(again, "activations", figure) - base),
                  0.01 * base)
            << figure << " rank " << rank;
      }
    }
  }
  ASSERT_EQ(
      RunMemprof("baseline --run " + runs[0] + " --out " + Path("base.json"))
          .exit_code,
      0);
  for (int i = 1; i < 3; ++i) {
    const CommandResult r =
        RunMemprof("check --baseline " + Path("base.json") + " --run " +
                   runs[i] + " --json " + Path("c.json"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const Json check = Read(Path("c.json"));
    EXPECT_EQ(check["result"], "ok") << r.output;
    for (const char* category : kModelState) {
      EXPECT_EQ(Row(check, category, "measured_bytes", 1)["delta_bytes"], 0);
    }
  }
}

TEST_F(RegressionGateTest, OneUnitWiderFailsOnModelStateByThePredictedBytes) {
  const std::string narrow = Profile("narrow");
  const Json report = Read(narrow + "/rank-0.json");
  const Json& config = report["context"]["config"];
  const int64_t hidden = config["mlp"]["hidden"].get<int64_t>();
  const std::string wide =
      Profile("wide", "--mlp.hidden " + std::to_string(hidden + 1));
  ASSERT_EQ(report["parameters"].get<int64_t>(), MlpParameters(config, hidden));
  const int64_t dp =
      MlpParameters(config, hidden + 1) - MlpParameters(config, hidden);
  // fp32 Adam: weights 4 dP, gradients 4 dP, moments 8 dP, buckets 4 dP.
  const std::pair<const char*, int64_t> expected[] = {
      {"weights", 4 * dp},
      {"gradients", 4 * dp},
      {"optimizer_state", 8 * dp},
      {"ddp_buckets", 4 * dp}};
  ASSERT_EQ(
      RunMemprof("baseline --run " + narrow + " --out " + Path("narrow.json"))
          .exit_code,
      0);
  const std::string base = " --baseline " + Path("narrow.json");

  // A different config is refused...
  CommandResult r = RunMemprof("check" + base + " --run " + wide);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(
      r.output.find("config.mlp.hidden: baseline " + std::to_string(hidden) +
                    ", run " + std::to_string(hidden + 1)),
      std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(Path("narrow.json")), std::string::npos);

  // ...and gated on its figures when the change is declared.
  const std::string summary = Write("step-summary.md", "earlier step\n");
  r = RunCommand("GITHUB_STEP_SUMMARY=" + summary + " " + MEMPROF_BINARY +
                 " check" + base + " --run " + wide +
                 " --allow-config-change --json " + Path("c.json") +
                 " --markdown " + Path("c.md"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const Json check = Read(Path("c.json"));
  EXPECT_EQ(check["result"], "regressed");
  EXPECT_EQ(check["parameters"]["now"].get<int64_t>() -
                check["parameters"]["baseline"].get<int64_t>(),
            dp);
  for (int rank = 0; rank < 2; ++rank) {
    for (const auto& [category, bytes] : expected) {
      for (const char* figure : {"measured_bytes", "peak_bytes"}) {
        const Json& row = Row(check, category, figure, rank);
        EXPECT_EQ(row["delta_bytes"].get<int64_t>(), bytes)
            << category << " " << figure << " rank " << rank;
        EXPECT_EQ(row["verdict"], "regressed") << category;
      }
    }
  }
  EXPECT_NE(r.output.find("weights          at peak      0"), std::string::npos)
      << r.output;
  // In KiB, with the exact bytes of the delta beside it.
  ASSERT_GE(4 * dp, 1000);
  ASSERT_LT(4 * dp, 1000000);
  const std::string low = std::to_string(4 * dp % 1000);
  EXPECT_NE(r.output.find(" KiB (+" + std::to_string(4 * dp / 1000) + "," +
                          std::string(3 - low.size(), '0') + low + " B)"),
            std::string::npos)
      << r.output;

  // --only-changed: the 16 regressed rows, the rest in one line.
  r = RunMemprof("check" + base + " --run " + wide +
                 " --allow-config-change --only-changed");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.find(" ok\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" rows within tolerance not shown (--only-changed)"),
            std::string::npos)
      << r.output;
  const std::string markdown = ReadFile(Path("c.md"));
  EXPECT_EQ(markdown.rfind("### memprof memory check: regressed", 0), 0u);
  EXPECT_NE(markdown.find("| optimizer_state | at peak | 1 |"),
            std::string::npos);
  const std::string appended = ReadFile(summary);
  EXPECT_EQ(appended.rfind("earlier step\n### memprof memory check", 0), 0u)
      << appended;

  // Tolerances that cover exactly the growth pass it; one byte less fails.
  std::string lenient = " --tolerance 5%";
  std::string tight = lenient;
  for (const auto& [category, bytes] : expected) {
    lenient +=
        std::string(" --tolerance ") + category + "=" + std::to_string(bytes);
    tight += std::string(" --tolerance ") + category + "=" +
             std::to_string(bytes - (category == expected[0].first ? 1 : 0));
  }
  r = RunMemprof("check" + base + " --run " + wide + " --allow-config-change" +
                 lenient);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = RunMemprof("check" + base + " --run " + wide + " --allow-config-change" +
                 tight + " --json " + Path("t.json"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(Read(Path("t.json"))["regressed"], 4);  // weights, 2 figs x 2 ranks

  // The other way round it is an improvement: reported, failing only --strict.
  ASSERT_EQ(RunMemprof("baseline --run " + wide + " --out " + Path("wide.json"))
                .exit_code,
            0);
  const std::string back = "check --baseline " + Path("wide.json") + " --run " +
                           narrow + " --allow-config-change";
  r = RunMemprof(back + " --json " + Path("i.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("refresh the baseline"), std::string::npos);
  EXPECT_EQ(
      Row(Read(Path("i.json")), "weights", "measured_bytes", 0)["verdict"],
      "improved");
  EXPECT_EQ(r.output.find("FAILED"), std::string::npos) << r.output;
  const CommandResult strict = RunMemprof(back + " --strict");
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_NE(strict.output.find("FAILED (--strict): "), std::string::npos)
      << strict.output;
}

// --json and --markdown name files memprof replaces: never a device, a
// FIFO or a link (which writing would replace with a regular file), nor an
// empty path. A check that ends without a verdict leaves no table of an
// earlier one, and a step summary it cannot append leaves the verdict as
// it was.
TEST_F(RegressionGateTest, CheckOutputsAreFilesAndAFailedCheckLeavesNone) {
  const std::string run = SeedRun("run");
  ASSERT_EQ(RunMemprof("baseline --run " + run + " --out " + Path("base.json"))
                .exit_code,
            0);
  const std::string check =
      "check --baseline " + Path("base.json") + " --run " + run;
  const std::string outputs =
      " --json " + Path("c.json") + " --markdown " + Path("c.md");
  ASSERT_EQ(RunMemprof(check + outputs).exit_code, 0);
  ASSERT_TRUE(fs::exists(Path("c.json")) && fs::exists(Path("c.md")));
  const std::string bad = Write("bad.json", "{");
  const CommandResult failed =
      RunMemprof("check --baseline " + bad + " --run " + run + outputs);
  EXPECT_EQ(failed.exit_code, 2) << failed.output;
  EXPECT_FALSE(fs::exists(Path("c.json")));
  EXPECT_FALSE(fs::exists(Path("c.md")));

  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0644), 0);
  const std::string kept = Write("kept.json", "kept\n");
  fs::create_symlink(kept, Path("link.json"));
  const std::pair<std::string, std::string> refused[] = {
      {" --json " + Path("fifo"),
       "--json " + Path("fifo") +
           ": a FIFO; memprof writes a new regular file in its place"},
      {" --json /dev/null",
       "--json /dev/null: a device; memprof writes a new regular file"},
      {" --markdown " + Path("link.json"),
       "--markdown " + Path("link.json") +
           ": a symbolic link; memprof writes a new file in its place, "
           "which would replace the link: give the path of the file itself (" +
           kept + ")"},
      {" --json ''", "--json: an empty path; give a file's path"},
  };
  for (const auto& [flags, expected] : refused) {
    const CommandResult r = RunMemprof(check + flags);
    EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.output;
    EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
  }
  EXPECT_TRUE(fs::is_symlink(Path("link.json")));
  EXPECT_EQ(ReadFile(kept), "kept\n");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));

  // A FIFO with no reader as the step summary: no wait, a warning.
  const CommandResult summary =
      RunCommand("GITHUB_STEP_SUMMARY=" + Path("fifo") + " " + MEMPROF_BINARY +
                 " " + check);
  EXPECT_EQ(summary.exit_code, 0) << summary.output;
  EXPECT_NE(summary.output.find(
                "memprof: warning: GITHUB_STEP_SUMMARY=" + Path("fifo") +
                ": the check's table was not appended: "),
            std::string::npos)
      << summary.output;
  // The baseline as the step summary: left whole.
  const std::string whole = ReadFile(Path("base.json"));
  const CommandResult onto =
      RunCommand("GITHUB_STEP_SUMMARY=" + Path("base.json") + " " +
                 MEMPROF_BINARY + " " + check);
  EXPECT_EQ(onto.exit_code, 0) << onto.output;
  EXPECT_NE(onto.output.find("that is the baseline"), std::string::npos)
      << onto.output;
  EXPECT_EQ(ReadFile(Path("base.json")), whole);
}

// A rank report past the run's ranks (left by a run of more ranks) makes
// the directory a mix: check refuses it, naming the file.
TEST_F(RegressionGateTest, ARankFilePastTheRunsRanksIsRefused) {
  const std::string run = SeedRun("run");
  ASSERT_EQ(RunMemprof("baseline --run " + run + " --out " + Path("base.json"))
                .exit_code,
            0);
  fs::copy_file(run + "/rank-0.json", run + "/rank-1.json");
  const CommandResult r =
      RunMemprof("check --baseline " + Path("base.json") + " --run " + run);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(run + "/rank-1.json: a rank report past the run's 1 "
                                "rank(s)"),
            std::string::npos)
      << r.output;
}

// As ci-gate.md's job writes it: the table inside the run's --out, which
// profile creates.
TEST_F(RegressionGateTest, ProfileWritesTheTableInsideTheOutItCreates) {
  // --out with a trailing slash, as a shell's completion writes it.
  const CommandResult r = RunMemprof(
      std::string("profile --config ") + kTiny + " --out " + Path("ci/run/") +
      " --check " + kBaselines + "/mlp-tiny-ws1.json --markdown " +
      Path("ci/run/check.md") + " --json " + Path("ci/run/check.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(Path("ci/run/check.md")));
  EXPECT_EQ(Read(Path("ci/run/check.json"))["result"], "ok");
}

TEST_F(RegressionGateTest, MalformedBaselinesAreBadInputNamingFileAndReason) {
  const std::string run = SeedRun("run");
  const std::string good =
      ReadFile(std::string(kBaselines) + "/mlp-tiny-ws1.json");
  ASSERT_FALSE(good.empty());
  Json negative = Json::parse(good);
  negative["ranks"][0]["categories"]["weights"]["measured_bytes"] = -4;
  Json edited = Json::parse(good);
  edited["ranks"][0]["peak"]["total_bytes"] = 1000000000000;
  Json unknown = Json::parse(good);
  unknown["ranks"][0]["categories"]["weigths"] =
      unknown["ranks"][0]["categories"]["weights"];
  const std::pair<std::string, std::string> cases[] = {
      {Write("truncated.json", good.substr(0, good.size() / 2)), "truncated"},
      {Write("empty.json", ""), "truncated"},
      {Write("garbage.json", "not json at all"), "not valid JSON"},
      {Write("rank.json", ReadFile(kSeedReport)), "this is a rank report"},
      {Write("v2.json", "{\"schema\": \"memprof.baseline/2\"}"),
       "major version 2 of memprof.baseline; this memprof reads version 1"},
      {Write("negative.json", negative.dump()),
       "ranks[0].categories.weights.measured_bytes"},
      {Write("edited.json", edited.dump()),
       "ranks[0].peak.total_bytes: is 1000000000000, but the categories' "
       "measured_bytes sum to "},
      {Write("unknown.json", unknown.dump()),
       "ranks[0].categories.weigths: not a category memprof knows"},
      {Path("missing.json"), "No such file"},
      {dir_.string(), "is a directory"},
  };
  for (const auto& [path, reason] : cases) {
    const CommandResult r =
        RunMemprof("check --baseline " + path + " --run " + run);
    EXPECT_EQ(r.exit_code, 2) << path << ": " << r.output;
    EXPECT_NE(r.output.find(path), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(reason), std::string::npos) << r.output;
  }
}

TEST_F(RegressionGateTest, MalformedRankReportsAreBadInputForCheckAndBaseline) {
  const std::string baseline = std::string(kBaselines) + "/mlp-tiny-ws1.json";
  const std::string text = ReadFile(kSeedReport);
  fs::create_directories(Path("cut"));
  Write("cut/rank-0.json", text.substr(0, text.size() / 3));
  fs::create_directories(Path("half"));  // says two ranks, holds one
  Json two = Json::parse(text);
  two["context"]["world_size"] = 2;
  Write("half/rank-0.json", two.dump());
  const std::pair<std::string, std::string> cases[] = {
      {Path("cut"), "rank-0.json: the file ends early (truncated?)"},
      {Path("half"), "rank-1.json: missing (world_size 2"},
      {Path("none"), "no such directory"},
      {dir_.string(), "no rank-0.json"},
  };
  for (const auto& [run, reason] : cases) {
    CommandResult r =
        RunMemprof("check --baseline " + baseline + " --run " + run);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(reason), std::string::npos) << r.output;
    r = RunMemprof("baseline --run " + run + " --out " + Path("b.json"));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(reason), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(Path("b.json")));
  }
}

// A run whose ranks were killed before writing their reports leaves only
// their captures: a failed run (exit 3) whose reports `memprof report`
// recovers, not a directory of the wrong kind (exit 2).
TEST_F(RegressionGateTest, AnUnrecoveredKilledRunPointsToItsRecovery) {
  const std::string baseline = std::string(kBaselines) + "/mlp-tiny-ws1.json";
  fs::create_directories(Path("killed"));
  Write("killed/capture-0.bin", "");
  fs::create_directories(Path("killed-1"));  // rank 1 of 2 was killed
  Json two = Json::parse(ReadFile(kSeedReport));
  two["context"]["world_size"] = 2;
  Write("killed-1/rank-0.json", two.dump());
  Write("killed-1/capture-1.bin", "");
  for (const auto& [run, rank] :
       {std::pair{Path("killed"), 0}, std::pair{Path("killed-1"), 1}}) {
    const std::string r = std::to_string(rank);
    for (const std::string& command :
         {"check --baseline " + baseline + " --run " + run,
          "baseline --run " + run + " --out " + Path("b.json")}) {
      const CommandResult result = RunMemprof(command);
      EXPECT_EQ(result.exit_code, 3) << result.output;
      EXPECT_NE(result.output.find("no rank-" + r + ".json, but capture-" + r +
                                   ".bin: the run stopped before rank " + r +
                                   " wrote its report"),
                std::string::npos)
          << result.output;
      EXPECT_NE(result.output.find("'memprof report --run " + run + "'"),
                std::string::npos)
          << result.output;
    }
  }
}

// Issue 35: a run stopped by --memory-limit in step 2 passed the gate
// ("improved") and could be kept as a baseline. Both now refuse it with
// exit 3 (the run failed), naming the rank, the reason and the remedy.
TEST_F(RegressionGateTest, CheckAndBaselineRefuseARunCutShortByOutOfMemory) {
  const std::string baseline = std::string(kBaselines) + "/mlp-tiny-ws1.json";
  const CommandResult run =
      RunMemprof(std::string("profile --config ") + kTiny + " --memory-limit " +
                 std::to_string(kStepTwoLimitBytes) + " --out " + Path("oom"));
  ASSERT_EQ(run.exit_code, 3) << run.output;
  ASSERT_NE(run.output.find("out of memory in optimizer of step 2"),
            std::string::npos)
      << run.output;
  CommandResult r =
      RunMemprof("check --baseline " + baseline + " --run " + Path("oom"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("run failed: --run " + Path("oom") +
                          ": rank 0 ran out of memory in step 2 of 4 (out of "
                          "memory in optimizer of step 2"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("make it fit"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("improved"), std::string::npos) << r.output;
  r = RunMemprof("baseline --run " + Path("oom") + " --out " + Path("b.json"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("rank 0 ran out of memory in step 2 of 4"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(Path("b.json")));
}

// Issue 35: ranks killed and recovered from their captures, a step cut
// short, fewer steps than configured: each a failed run that check and
// baseline refuse with exit 3, naming every such rank and why. The runs are
// the committed two-rank run, edited; unedited it gates green.
TEST_F(RegressionGateTest, CheckAndBaselineRefuseKilledAndShortRuns) {
  const std::string data = MEMPROF_SOURCE_DIR "/tests/data/run-mlp-tiny-ws2";
  const auto copy = [&](const std::string& name,
                        const std::function<void(Json&)>& edit) {
    fs::create_directories(Path(name));
    for (const char* rank : {"rank-0.json", "rank-1.json"}) {
      Json report = Read(data + "/" + rank);
      edit(report);
      Write(name + "/" + rank, report.dump());
    }
    return Path(name);
  };
  const std::string good = copy("good", [](Json&) {});
  ASSERT_EQ(RunMemprof("baseline --run " + good + " --out " + Path("b.json"))
                .exit_code,
            0);
  ASSERT_EQ(RunMemprof("check --baseline " + Path("b.json") + " --run " + good)
                .exit_code,
            0);
  const auto killed = [](Json& report) {
    report["post_mortem"] = {{"killed_by", "signal 9 (Killed)"},
                             {"records", 1000},
                             {"torn_record_dropped", false},
                             {"last_seq", 900},
                             {"step", 4},
                             {"phase", "backward"},
                             {"live_bytes", report["run_peak"]["breakdown"]}};
    report["steps"].back()["completed"] = false;
  };
  const std::pair<std::string, std::string> cases[] = {
      {copy("killed", killed),
       "rank 0 killed (signal 9 (Killed)) in step 4 of 4; its report was "
       "recovered from its capture (post-mortem); rank 1 killed"},
      // Past the loop (writing its outputs onto a full disk, say), found
      // by `memprof report`, which cannot tell why it stopped.
      {copy("after",
            [](Json& report) {
              report["post_mortem"] = {
                  {"killed_by", "unknown"},
                  {"records", 1000},
                  {"torn_record_dropped", false},
                  {"last_seq", 900},
                  {"step", 0},
                  {"phase", "idle"},
                  {"live_bytes", report["run_peak"]["breakdown"]}};
            }),
       "rank 0 stopped without its report (killed, or failed: the capture "
       "cannot tell which) after step 4 of 4; its report was recovered"},
      {copy("cut",
            [](Json& report) {
              if (report["context"]["rank"] == 1) {
                report["steps"].back()["completed"] = false;
              }
            }),
       "cut: rank 1 did not complete step 4 of 4. "},
      {copy("short",
            [](Json& report) {
              report["steps"].erase(report["steps"].size() - 1);
            }),
       "short: rank 0 ran 3 of 4 steps; rank 1 ran 3 of 4 steps. "},
  };
  for (const auto& [run, reason] : cases) {
    CommandResult r =
        RunMemprof("check --baseline " + Path("b.json") + " --run " + run);
    EXPECT_EQ(r.exit_code, 3) << r.output;
    EXPECT_NE(r.output.find(reason), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("profile it again to the end"), std::string::npos)
        << r.output;
    r = RunMemprof("baseline --run " + run + " --out " + Path("again.json"));
    EXPECT_EQ(r.exit_code, 3) << r.output;
    EXPECT_NE(r.output.find(reason), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(Path("again.json")));
  }
}

TEST_F(RegressionGateTest,
       WrongWorldSizeIsRefusedEvenWithConfigChangesAllowed) {
  const CommandResult r =
      RunMemprof(std::string("check --allow-config-change --baseline ") +
                 kBaselines + "/mlp-tiny-ws2.json --run " + SeedRun("run"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("world_size: baseline 2, run 1"), std::string::npos)
      << r.output;
}

TEST_F(RegressionGateTest, ProfileWithABadBaselineFailsBeforeTraining) {
  const std::string bad = Write("bad.json", "{\"schema\": ");
  const CommandResult r =
      RunMemprof(std::string("profile --config ") + kTiny + " --out " +
                 Path("run") + " --world-size 2 --check " + bad);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(bad + ": the file ends early"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(Path("run")));
}

// --markdown and --json are checked before training: a directory that does
// not exist, and the two flags naming one file, are bad input at once.
TEST_F(RegressionGateTest,
       ProfileWithAnUnwritableCheckOutputFailsBeforeTraining) {
  const std::string baseline = std::string(kBaselines) + "/mlp-tiny-ws1.json";
  const CommandResult missing = RunMemprof(
      std::string("profile --config ") + kTiny + " --out " + Path("run") +
      " --check " + baseline + " --markdown " + Path("no/such/dir/c.md"));
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("--markdown " + Path("no/such/dir/c.md") +
                                ": its directory '" + Path("no/such/dir") +
                                "' does not exist"),
            std::string::npos)
      << missing.output;
  EXPECT_FALSE(fs::exists(Path("run")));
  fs::create_directories(Path("tables"));
  const CommandResult directory = RunMemprof(
      std::string("profile --config ") + kTiny + " --out " + Path("run") +
      " --check " + baseline + " --json " + Path("tables"));
  EXPECT_EQ(directory.exit_code, 2) << directory.output;
  EXPECT_NE(directory.output.find("--json " + Path("tables") +
                                  ": a directory; give a file's path (" +
                                  Path("tables") + "/check.json)"),
            std::string::npos)
      << directory.output;
  EXPECT_FALSE(fs::exists(Path("run")));
  const CommandResult same =
      RunMemprof(std::string("profile --config ") + kTiny + " --out " +
                 Path("run") + " --check " + baseline + " --markdown " +
                 Path("c.out") + " --json " + Path("c.out"));
  EXPECT_EQ(same.exit_code, 2) << same.output;
  EXPECT_NE(same.output.find("--markdown and --json both name"),
            std::string::npos)
      << same.output;
  EXPECT_FALSE(fs::exists(Path("run")));
}

TEST_F(RegressionGateTest, BaselineHoldsEveryRanksFiguresAndItsContext) {
  const std::string run = SeedRun("run");
  const CommandResult r =
      RunMemprof("baseline --run " + run + " --out " + Path("b.json") +
                 " --tolerance activations=2%");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json baseline = Read(Path("b.json"));
  const Json report = Read(kSeedReport);
  EXPECT_EQ(baseline["schema"], "memprof.baseline/1");
  EXPECT_EQ(baseline["context"]["world_size"], report["context"]["world_size"]);
  // The seed report predates ddp.zero_stage (memprof.rank/1.3),
  // train.momentum and train.activation_checkpointing (1.5), and
  // train.freeze (1.11) and train.grad_accum (1.12): their absence reads as
  // stage 0, no momentum, none, nothing frozen and no accumulation, which
  // the baseline writes out.
  Json config = report["context"]["config"];
  ASSERT_FALSE(config["ddp"].contains("zero_stage"));
  ASSERT_FALSE(config["train"].contains("momentum"));
  config["ddp"]["zero_stage"] = 0;
  config["train"]["momentum"] = 0.0;
  config["train"]["activation_checkpointing"] = "none";
  config["train"]["freeze"] = "";
  config["train"]["grad_accum"] = 1;
  config["lora"] = {{"rank", 0},
                    {"alpha", 8.0},
                    {"dropout", 0.0},
                    {"targets", ""}};  // 1.12 too: no adapters
  EXPECT_EQ(baseline["context"]["config"], config);
  EXPECT_EQ(baseline["context"]["libtorch_version"],
            report["context"]["libtorch_version"]);
  EXPECT_EQ(baseline["context"]["device"], report["context"]["device"]);
  EXPECT_EQ(baseline["context"]["dtype"],
            report["context"]["config"]["train"]["dtype"]);
  EXPECT_EQ(baseline["tolerances"]["activations"], "2%");
  ASSERT_EQ(baseline["ranks"].size(), 1u);
  const Json& rank = baseline["ranks"][0];
  for (const auto& [name, entry] : report["categories"].items()) {
    EXPECT_EQ(rank["categories"][name]["measured_bytes"],
              entry["measured_bytes"])
        << name;
    EXPECT_EQ(rank["categories"][name]["peak_bytes"], entry["peak_bytes"])
        << name;
  }
  EXPECT_EQ(rank["peak"]["total_bytes"], report["peak"]["total_bytes"]);
  // A run against its own baseline passes.
  EXPECT_EQ(RunMemprof("check --baseline " + Path("b.json") + " --run " + run)
                .exit_code,
            0);
}

}  // namespace
}  // namespace memprof
