// The memprof binary end to end: exit codes, messages, files written whole.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>

#include <gtest/gtest.h>
#include <torch/version.h>
#include <nlohmann/json.hpp>

#include "profiler/base/errors.h"
#include "profiler/capture/cuda_device.h"
#include "profiler/cli/local_world_size.h"
#include "profiler/cli/profile_command.h"
#include "profiler/predict/prediction.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

namespace memprof {
namespace {

namespace fs = std::filesystem;

using Result = CommandResult;

class CliTest : public TempDirTest {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::string Out() const { return (dir_ / "out").string(); }
  static std::string ReadText(const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)),
                       std::istreambuf_iterator<char>());
  }
  bool NothingWritten() const { return !fs::exists(dir_ / "out"); }
};

constexpr const char* kTiny = MEMPROF_SOURCE_DIR "/configs/mlp-tiny.ini";

TEST_F(CliTest, ProfileWritesTheRankReportWholeAndPrintsTheTable) {
  const Result r = RunMemprof(std::string("profile --config ") + kTiny +
                              " --steps 3 --out " + Out());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The effective config comes first, each key with where it came from,
  // and is kept in the rank report and report.md.
  EXPECT_EQ(r.output.rfind(std::string("effective config (file ") + kTiny, 0),
            0u)
      << r.output;
  const std::string output =
      std::regex_replace(r.output, std::regex(" +"), " ");
  EXPECT_NE(output.find(std::string("\n mlp.hidden 64 ") + kTiny + ":6\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(output.find("\n train.steps 3 --steps\n"), std::string::npos)
      << r.output;
  using Json = nlohmann::json;
  const Json rank = Json::parse(std::ifstream(fs::path(Out()) / "rank-0.json"));
  EXPECT_EQ(rank["context"]["config_origins"]["mlp.hidden"],
            std::string(kTiny) + ":6");
  EXPECT_EQ(rank["context"]["config_origins"]["train.lr"],
            std::string(kTiny) + ":14");
  EXPECT_EQ(rank["context"]["config_origins"]["train.steps"], "--steps");
  EXPECT_EQ(rank["context"]["config_origins"]["train.seed"], "default");
  std::ifstream md(fs::path(Out()) / "report.md");
  const std::string report((std::istreambuf_iterator<char>(md)), {});
  EXPECT_NE(report.find("| train.steps | 3 | --steps |"), std::string::npos)
      << report;
  EXPECT_NE(r.output.find("weights"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("steady-state peak"), std::string::npos);
  // Which LibTorch, and what the run can say about CUDA here.
  EXPECT_NE(r.output.find(std::string("memprof: LibTorch ") + TORCH_VERSION +
                          "; CUDA "),
            std::string::npos)
      << r.output;
  // .memprof.lock: the run's claim on the directory (Note [A run owns its
  // --out]), kept for the next run to lock.
  const std::set<std::string> expected = {
      "rank-0.json", "summary.json", "snapshot-0.json", "report.md",
      "report.html", "trace.json",   ".memprof.lock"};
  std::set<std::string> found;
  for (const auto& entry : fs::directory_iterator(Out())) {
    found.insert(entry.path().filename());
  }
  EXPECT_EQ(found, expected) << "a file missing, or a temporary left behind";
}

// snapshot-0.json replayed: the blocks live at the end, the peak and every
// category's allocated and freed bytes are the rank report's, to the byte
// (every step kept).
TEST_F(CliTest, SnapshotPerCategorySumsMatchTheRankReport) {
  const Result r = RunMemprof(std::string("profile --config ") + kTiny +
                              " --keep-steps all --out " + Out());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  using Json = nlohmann::json;
  const Json rank = Json::parse(std::ifstream(fs::path(Out()) / "rank-0.json"));
  const Json snapshot =
      Json::parse(std::ifstream(fs::path(Out()) / "snapshot-0.json"));
  EXPECT_EQ(snapshot["memprof"]["schema"], "memprof.snapshot/1.1");
  const int64_t peak_seq = rank["peak"]["seq"].get<int64_t>();
  std::map<std::string, int64_t> live, at_peak, allocated, freed, in_segments;
  bool unknown = false;
  for (const Json& e : snapshot["device_traces"].at(0)) {
    const std::string category = e["category"];
    unknown = unknown || category == "unknown";
    const int64_t size = e["size"].get<int64_t>();
    if (e["action"] == "alloc") {
      live[category] += size;
      allocated[category] += size;
    } else if (e["action"] == "free_completed") {
      live[category] -= size;
      freed[category] += size;
    }
    if (e["seq"].get<int64_t>() <= peak_seq) at_peak = live;
  }
  EXPECT_TRUE(unknown) << "the viewer needs a category named unknown";
  for (const Json& segment : snapshot["segments"]) {
    int64_t tiled = 0;
    for (const Json& block : segment["blocks"]) {
      tiled += block["size"].get<int64_t>();
      in_segments[block["category"]] += block["size"].get<int64_t>();
    }
    EXPECT_EQ(tiled, segment["total_size"].get<int64_t>());
  }
  for (const auto& [name, entry] : rank["categories"].items()) {
    EXPECT_EQ(in_segments[name], entry["end_bytes"].get<int64_t>()) << name;
    EXPECT_EQ(live[name], entry["end_bytes"].get<int64_t>()) << name;
    EXPECT_EQ(allocated[name], entry["allocated_bytes"].get<int64_t>()) << name;
    EXPECT_EQ(freed[name], entry["freed_bytes"].get<int64_t>()) << name;
    EXPECT_EQ(at_peak[name], rank["peak"]["breakdown"][name].get<int64_t>())
        << name;
  }
  EXPECT_GT(allocated["weights"], 0);
}

// Note [Kept steps]: a 12-step run keeps steps 1, the steady-state peak's
// and 11-12 in the timeline, the steps' breakdowns and the snapshot, every
// step's peak and time in steps[]; --keep-steps 0 keeps fewer; a bad value
// is refused.
TEST_F(CliTest, LongRunsKeepTheFirstAndLastStepsInDetail) {
  const Result r = RunMemprof(std::string("profile --config ") + kTiny +
                              " --steps 12 --out " + Out());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  using Json = nlohmann::json;
  const Json rank = Json::parse(std::ifstream(fs::path(Out()) / "rank-0.json"));
  const Json snapshot =
      Json::parse(std::ifstream(fs::path(Out()) / "snapshot-0.json"));
  const int peak_step = rank["peak"]["step"].get<int>();
  std::set<int> expected = {1, peak_step, 11, 12};
  std::set<int> detailed, in_timeline;
  ASSERT_EQ(rank["steps"].size(), 12u);
  for (const Json& step : rank["steps"]) {
    EXPECT_GT(step["peak_bytes"].get<int64_t>(), 0);
    if (step.contains("breakdown")) detailed.insert(step["step"].get<int>());
  }
  for (const Json& segment : rank["timeline"]) {
    if (segment["step"].get<int>() >= 1) {
      in_timeline.insert(segment["step"].get<int>());
    }
  }
  EXPECT_EQ(detailed, expected);
  EXPECT_EQ(in_timeline, expected);
  std::set<int> kept;
  for (const Json& s : snapshot["memprof"]["kept_steps"])
    kept.insert(s.get<int>());
  EXPECT_EQ(kept, expected);
  EXPECT_FALSE(fs::exists(fs::path(Out()) / "capture-0.bin"))
      << "a rank that wrote its report leaves no capture";
  const Result bad = RunMemprof(std::string("profile --config ") + kTiny +
                                " --keep-steps some --out " + Out());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--keep-steps some"), std::string::npos)
      << bad.output;
}

// --snapshot-format pickle: snapshot-0.pickle instead of .json, which
// Python's pickle loads into the snapshot (every category's allocated
// bytes are the rank report's); a later JSON run into the same --out
// leaves no stale pickle behind.
TEST_F(CliTest, SnapshotAsPickleLoadsInPythonWithTheRankReportsFigures) {
  const Result r = RunMemprof(std::string("profile --config ") + kTiny +
                              " --snapshot-format pickle --keep-steps all "
                              "--out " +
                              Out());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(fs::path(Out()) / "snapshot-0.json"));
  const fs::path pickle = fs::path(Out()) / "snapshot-0.pickle";
  ASSERT_TRUE(fs::exists(pickle));
  const fs::path sums = dir_ / "sums.json";
  const Result py = RunCommand(
      "python3 -c 'import json, pickle, sys\n"
      "s = pickle.load(open(sys.argv[1], \"rb\"))\n"
      "out = {}\n"
      "for e in s[\"device_traces\"][0]:\n"
      "    if e[\"action\"] == \"alloc\":\n"
      "        out[e[\"category\"]] = out.get(e[\"category\"], 0) + "
      "e[\"size\"]\n"
      "json.dump(out, open(sys.argv[2], \"w\"))' " +
      pickle.string() + " " + sums.string());
  ASSERT_EQ(py.exit_code, 0) << py.output;
  using Json = nlohmann::json;
  const Json allocated = Json::parse(std::ifstream(sums));
  const Json rank = Json::parse(std::ifstream(fs::path(Out()) / "rank-0.json"));
  for (const auto& [name, entry] : rank["categories"].items()) {
    const int64_t expected = entry["allocated_bytes"].get<int64_t>();
    EXPECT_EQ(allocated.value(name, int64_t{0}), expected) << name;
  }
  const Result json =
      RunMemprof(std::string("profile --config ") + kTiny + " --out " + Out());
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_FALSE(fs::exists(pickle));
  EXPECT_TRUE(fs::exists(fs::path(Out()) / "snapshot-0.json"));
  const Result bad = RunMemprof(std::string("profile --config ") + kTiny +
                                " --snapshot-format xml --out " + Out());
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--snapshot-format xml"), std::string::npos)
      << bad.output;
}

// A binary file given as the config: its control bytes are shown escaped,
// not sent to the terminal.
TEST_F(CliTest, ControlBytesInAMessageAreEscaped) {
  const std::string path =
      Write("binary.ini", "model = mlp\n\x1b[31mhidden\x07 = 3\n");
  const Result r = RunMemprof("profile --config " + path + " --out " + Out());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("\\x1b[31mhidden\\x07"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\x07'), std::string::npos) << r.output;
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

// Model configs: each bad value is named with its key and file, exit 2,
// for profile and predict alike, with nothing run.
TEST_F(CliTest, BadModelConfigsNameTheKeyAndTheFile) {
  const std::string model = "model = gpt\n[gpt]\n";
  const std::string llama = "model = llama\n[llama]\n";
  const std::pair<std::string, std::string> cases[] = {
      {model + "d_model = 64\nheads = 5\n",
       ":4: key 'gpt.heads': gpt.heads 5 does not divide gpt.d_model 64"},
      {model + "layers = 0\n",
       ":3: key 'gpt.layers': gpt.layers must be positive"},
      {model + "seq_len = -4\n",
       ":3: key 'gpt.seq_len': gpt.seq_len must be positive"},
      {model + "dropout = 1.5\n", "gpt.dropout must be in [0, 1)"},
      {model + "layers = twelve\n",
       ":3: the argument ('twelve') for option "
       "'gpt.layers' is invalid"},
      {"model = transformer\n",
       ":1: key 'model': unknown model 'transformer'; known models: mlp, gpt, "
       "llama, resnet"},
      {"model = resnet\n[resnet]\ndepth = 42\n",
       ":3: key 'resnet.depth': unsupported resnet.depth 42; supported: 18, "
       "34, 50, 101, 152"},
      {"model = resnet\n[resnet]\nwidth = 0\n",
       "resnet.width must be positive"},
      {"model = resnet\n[resnet]\nresolution = 32\n[train]\nmicro_batch = 1\n",
       "resnet.resolution 32 leaves the last stage at 1x1"},
      {llama + "num_attention_heads = 6\nnum_key_value_heads = 4\n",
       ":4: key 'llama.num_key_value_heads': llama.num_key_value_heads 4 "
       "does not divide llama.num_attention_heads 6"},
      {llama + "hidden_size = 64\nnum_attention_heads = 6\n",
       ":4: key 'llama.num_attention_heads': llama.num_attention_heads 6 "
       "does not divide llama.hidden_size 64, and llama.head_dim is not set"},
      {llama + "head_dim = 7\n",
       ":3: key 'llama.head_dim': the head width 7 is odd"},
      {llama + "intermediate_size = 0\n",
       ":3: key 'llama.intermediate_size': llama.intermediate_size must be "
       "positive, got 0"},
      {llama + "num_key_value_heads = -2\n",
       "llama.num_key_value_heads must be positive, got -2"},
      {llama + "hidden_size = 4294967296\n",
       ":3: key 'llama.hidden_size': llama.hidden_size must be at most "
       "2147483647"},
      {llama + "rms_norm_eps = 0\n",
       ":3: key 'llama.rms_norm_eps': llama.rms_norm_eps must be a finite "
       "positive number, got 0"},
      {llama + "rope_theta = inf\n",
       "llama.rope_theta must be a finite positive number, got inf"},
      {llama + "tie_word_embeddings = maybe\n",
       ":3: the argument ('maybe') for option 'llama.tie_word_embeddings' is "
       "invalid"},
      {llama + "hidden_size = 2147483647\nintermediate_size = 2147483647\n"
               "head_dim = 64\n",
       "too large for memprof to count in bytes"},
  };
  int i = 0;
  for (const auto& [text, expected] : cases) {
    const std::string path = Write("bad" + std::to_string(i++) + ".ini", text);
    for (const std::string command : {"profile", "predict"}) {
      const Result r = RunMemprof(
          command + " --config " + path +
          (command == "profile" ? " --out " + Out() : std::string()));
      EXPECT_EQ(r.exit_code, 2) << command << " " << text << r.output;
      EXPECT_NE(r.output.find(path), std::string::npos) << r.output;
      EXPECT_NE(r.output.find(expected), std::string::npos)
          << command << ": " << r.output;
    }
  }
  EXPECT_TRUE(NothingWritten());
}

TEST_F(CliTest, PredictPrintsTheTableWithoutTrainingAndJsonOnRequest) {
  const std::string config = MEMPROF_SOURCE_DIR "/configs/gpt-1.3b.ini";
  Result r = RunMemprof("predict --config " + config + " --world-size 8");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("P = 1,315,723,264 parameters"), std::string::npos)
      << r.output;
  // 16 bytes per parameter in IEC units only: 19.6 GiB, never "21.1 GB".
  EXPECT_NE(r.output.find("optimizer 8 = 19.6 GiB"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find(" GB"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("does not shrink"), std::string::npos) << r.output;
  r = RunMemprof("predict --config " + config + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto json = nlohmann::json::parse(r.output);
  EXPECT_EQ(json["schema"], "memprof.prediction/1.4");
  EXPECT_EQ(json["categories"]["optimizer_state"]["predicted_bytes"],
            8 * 1315723264LL);
  r = RunMemprof("predict --config " + config + " --table");
  EXPECT_NE(r.output.find("h.23.mlp.c_proj.weight"), std::string::npos);
  r = RunMemprof("predict --config " + config + " --out x");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown flag"), std::string::npos) << r.output;
}

// Note [Local memory]: one rank whose predicted peak is hundreds of GiB is
// refused before any model is built, as N ranks are, naming the figures
// and the way past it.
TEST_F(CliTest, OneRankTheMachineCannotHoldIsRefusedBeforeAnyModel) {
  const Result r = RunMemprof("profile --config " MEMPROF_SOURCE_DIR
                              "/configs/gpt-1.3b.ini --micro-batch 64 --out " +
                              Out());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("gpt at micro-batch 64: one rank of "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("this machine has available"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("--skip-memory-check"), std::string::npos)
      << r.output;
  EXPECT_TRUE(NothingWritten());
  // The flag is accepted (a run that fits anyway).
  const Result skipped = RunMemprof(std::string("profile --config ") + kTiny +
                                    " --skip-memory-check --out " + Out());
  EXPECT_EQ(skipped.exit_code, 0) << skipped.output;
}

TEST(LocalMemory, ThePredictedPeakOrTheMemoryLimitMustFitWhatIsAvailable) {
  const RunConfig big =
      ParseProfileArgs({"--config", MEMPROF_SOURCE_DIR "/configs/gpt-1.3b.ini",
                        "--micro-batch", "64"})
          .config;
  const int64_t gib = int64_t{1} << 30;
  EXPECT_THROW(CheckLocalMemory(big, 0, 64 * gib), InputError);
  // --memory-limit bounds what the hook lets the run take.
  EXPECT_NO_THROW(CheckLocalMemory(big, gib, 2 * gib));
  EXPECT_THROW(CheckLocalMemory(big, 4 * gib, 2 * gib), InputError);
  // Unknown availability is not checked; a GPU run's tensors are the GPU's.
  EXPECT_NO_THROW(CheckLocalMemory(big, 0, 0));
  RunConfig on_gpu = big;
  on_gpu.train.device = "cuda";
  EXPECT_NO_THROW(CheckLocalMemory(on_gpu, 0, gib));
  // N ranks need N times one.
  RunConfig tiny = ParseProfileArgs({"--config", kTiny}).config;
  const int64_t one =
      kRankProcessBytes + PredictBusiestRank(tiny).Peak().Total();
  EXPECT_NO_THROW(CheckLocalMemory(tiny, 0, one));
  EXPECT_THROW(CheckLocalMemory(tiny, 0, one - 1), InputError);
  tiny.ddp.world_size = 2;
  EXPECT_THROW(CheckLocalMemory(tiny, 0, 2 * one - 1), InputError);
}

TEST_F(CliTest, OutThatCannotBeCreatedIsBadInput) {
  const std::string file = Write("plain-file", "x");
  const Result r = RunMemprof(std::string("profile --config ") + kTiny +
                              " --out " + file + "/sub");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--out"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(file + "/sub"));
}

// Each of these once failed late or with the wrong cause: a dangling
// symbolic link said "File exists", an --out with no room left for the
// run's files failed only at the first write after training, and a
// MASTER_ADDR that does not resolve was a failed run (exit 3).
TEST_F(CliTest, OutAndRendezvousMistakesAreBadInputNamedBeforeTraining) {
  fs::create_directory_symlink(dir_ / "gone", dir_ / "link");
  Result r = RunMemprof(std::string("profile --config ") + kTiny + " --out " +
                        (dir_ / "link").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("is a symbolic link to '" + (dir_ / "gone").string() +
                          "', which does not exist"),
            std::string::npos)
      << r.output;
  std::string deep = Out();
  while (deep.size() < 4080) deep += "/d";
  ASSERT_EQ(RunCommand("mkdir -p " + deep).exit_code, 0);
  r = RunMemprof(std::string("profile --config ") + kTiny + " --out " + deep);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("choose a shorter path"), std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::is_empty(deep));
  RunCommand("rm -rf " + Out());  // deeper than remove_all
  r = RunCommand(
      "RANK=0 WORLD_SIZE=1 MASTER_ADDR=no-such-host.invalid "
      "MASTER_PORT=29999 " +
      std::string(MEMPROF_BINARY) + " profile --config " + kTiny + " --out " +
      Out());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("MASTER_ADDR=no-such-host.invalid does not resolve"),
            std::string::npos)
      << r.output;
}

TEST_F(CliTest, UnknownCommandAndNoCommandAreBadInput) {
  Result r = RunMemprof("profiel");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("known commands"), std::string::npos) << r.output;
  EXPECT_EQ(RunMemprof("").exit_code, 2);
  EXPECT_EQ(RunMemprof("profile --help").exit_code, 0);
}

// A job of one that runs out of memory still renders its reports, the
// out-of-memory breakdown first, before the first step too (issue 35: the
// model alone does not fit).
TEST_F(CliTest, OutOfMemoryIsReportedFirstAndExitsThree) {
  Result r =
      RunMemprof(std::string("profile --config ") + kTiny +
                 " --micro-batch 1 --memory-limit 200000 --out " + Out());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("run failed: out of memory in optimizer of step 1"),
            std::string::npos)
      << r.output;
  std::ifstream in(fs::path(Out()) / "report.md");
  const std::string markdown((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  EXPECT_NE(markdown.find("> **Out of memory:**"), std::string::npos);
  EXPECT_LT(markdown.find("## Out of memory"),
            markdown.find("## Memory by category"));
  EXPECT_NE(markdown.find("stopped in step 1 (out of memory)"),
            std::string::npos);
  EXPECT_NE(markdown.find("| weights | 43.3 KiB |"), std::string::npos)
      << markdown;

  r = RunMemprof(std::string("profile --config ") + kTiny +
                 " --memory-limit 10000 --out " + Out() + "-init");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("out of memory in model_init"), std::string::npos)
      << r.output;
  const nlohmann::json report =
      nlohmann::json::parse(std::ifstream(Out() + "-init/rank-0.json"));
  EXPECT_EQ(report["out_of_memory"]["phase"], "model_init");
  EXPECT_EQ(report["out_of_memory"]["refused_by"], "limit");
  // What was live is the half-built model: weights, not temporaries.
  EXPECT_GT(report["out_of_memory"]["live_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(report["out_of_memory"]["breakdown"]["weights"],
            report["out_of_memory"]["live_bytes"]);
  EXPECT_TRUE(report["steps"].empty());
  // Rendered: the model state at the refusal, the verdict and its remedy;
  // nothing compared with a steady state it never reached.
  const std::string init = ReadText(Out() + "-init/report.md");
  EXPECT_NE(init.find("> **Out of memory:**\n> - rank 0: out of memory in "
                      "model_init: tried to allocate"),
            std::string::npos)
      << init;
  EXPECT_NE(init.find("model-state-overflow: weights + gradients + optimizer "
                      "state + DDP buckets are 216 KiB per rank, alone over "
                      "the budget"),
            std::string::npos)
      << init;
  EXPECT_NE(init.find("- **steps**: 4 configured, stopped before step 1 (out "
                      "of memory); no steady-state step completed"),
            std::string::npos)
      << init;
  EXPECT_NE(init.find("| peak (all) | 250 KiB | — | — |"), std::string::npos)
      << init;
  EXPECT_EQ(init.find("## Steps"), std::string::npos) << init;
  EXPECT_TRUE(fs::exists(Out() + "-init/report.html"));
  r = RunMemprof("report --run " + Out() + "-init");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  fs::remove_all(Out() + "-init");
}

// A run the prediction says fits that runs out all the same (here in the
// start-up copy of the weights, which the prediction leaves out): its
// message says "predicted to fit" with the margin, not "fits".
TEST_F(CliTest, OutOfMemoryThePredictionSaidFitsIsSaidSo) {
  const Result r = RunMemprof(
      std::string("profile --config ") + MEMPROF_SOURCE_DIR +
      "/configs/llama-odd.ini --freeze "
      "model.embed_tokens,model.layers,model.norm --memory-limit 450KiB "
      "--out " +
      Out());
  ASSERT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("out of memory in ddp_init"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("(predicted to fit: micro-batch 2 peaks at 434 KiB "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("under the limit, and the run went past it"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("(fits:"), std::string::npos) << r.output;
}

// Issue 35: out of memory in step 2 of 4 (steps from 2 on would have been
// the steady state, clamped to the steps that ran): the cut step is not a
// steady-state step, and its partial figures are not errors.
TEST_F(CliTest, AStepCutShortByOutOfMemoryIsNotTheSteadyState) {
  const Result r = RunMemprof(std::string("profile --config ") + kTiny +
                              " --memory-limit 252000 --out " + Out());
  ASSERT_EQ(r.exit_code, 3) << r.output;
  ASSERT_NE(r.output.find("out of memory in optimizer of step 2"),
            std::string::npos)
      << r.output;
  const nlohmann::json report =
      nlohmann::json::parse(std::ifstream(Out() + "/rank-0.json"));
  ASSERT_EQ(report["steps"].size(), 2u);
  EXPECT_FALSE(report["steps"][1]["completed"]);
  EXPECT_FALSE(report["steps"][1]["steady_state"]);
  const std::string markdown = ReadText(Out() + "/report.md");
  EXPECT_NE(markdown.find("stopped in step 2 (out of memory); no "
                          "steady-state step completed"),
            std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("| 2 | cut short |"), std::string::npos) << markdown;
  EXPECT_EQ(markdown.find("| steady |"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("| weights | 43.3 KiB | — | — |"), std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("rank 0 completed no steady-state step (it ran out "
                          "of memory in step 2 of 4"),
            std::string::npos)
      << markdown;
}

// Note [System refusals]: an allocation no machine here can serve (a 32.7
// TiB weight, within --memory-limit's reach never) ends as the limit's
// refusals do: the report with the breakdown, exit 3, no raw stack.
TEST_F(CliTest, AnAllocationTheSystemCannotServeIsAnOutOfMemory) {
  // Past the local-memory check, which would refuse it before the model.
  const Result r = RunMemprof(std::string("profile --config ") + kTiny +
                              " --mlp.hidden 3000000 --memory-limit 1TiB "
                              "--skip-memory-check --out " +
                              Out());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("run failed: out of memory in model_init: tried to "
                          "allocate 32.7 TiB"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("the system could not serve it (this machine has"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("frame #"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("enforce fail"), std::string::npos) << r.output;
  const nlohmann::json report =
      nlohmann::json::parse(std::ifstream(Out() + "/rank-0.json"));
  const nlohmann::json& oom = report["out_of_memory"];
  EXPECT_EQ(oom["refused_by"], "system");
  EXPECT_EQ(oom["requested_bytes"], int64_t{3000000} * 3000000 * 4);
  int64_t sum = 0;
  for (const auto& [category, bytes] : oom["breakdown"].items()) {
    sum += bytes.get<int64_t>();
  }
  EXPECT_EQ(sum, oom["live_bytes"].get<int64_t>());
  EXPECT_GT(sum, 0) << "the first layer's weight was live";
}

}  // namespace
}  // namespace memprof

namespace memprof {
namespace {

RunConfig OnGpu(const std::string& backend) {
  RunConfig config;
  config.train.device = "cuda";
  config.ddp.backend = backend;
  return config;
}

std::string DeviceError(const RunConfig& config, int local_ranks,
                        const CudaDeviceStatus& cuda) {
  try {
    CheckDevices(config, local_ranks, cuda);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(CheckDevices, ACudaRunWithoutAGpuIsRefusedWithTheReason) {
  const CudaDeviceStatus none{true, false, 0, "no NVIDIA driver"};
  const std::string error = DeviceError(OnGpu(""), 1, none);
  EXPECT_NE(error.find("--train.device cuda: no GPU to train on (no NVIDIA "
                       "driver); use --train.device cpu"),
            std::string::npos)
      << error;
  EXPECT_EQ(DeviceError(RunConfig{}, 4, none), "") << "cpu runs need none";
}

TEST(CheckDevices, NcclRefusesTwoRanksOnOneGpuAndGlooSharesIt) {
  const CudaDeviceStatus one{true, true, 1, "1 x Test GPU"};
  const std::string error = DeviceError(OnGpu("nccl"), 2, one);
  EXPECT_NE(error.find("2 ranks on this machine but 1 GPU(s)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("use --ddp.backend gloo"), std::string::npos);
  EXPECT_NE(DeviceError(OnGpu(""), 2, one), "") << "nccl is the cuda default";
  EXPECT_EQ(DeviceError(OnGpu("gloo"), 2, one), "");
  EXPECT_EQ(DeviceError(OnGpu("nccl"), 1, one), "");
}

// End to end on this machine: without a GPU the run stops before training
// with exit 2; with one (scripts/device-check.sh's machine) it trains.
TEST_F(CliTest, ACudaRunNeedsAGpu) {
  const Result r = RunMemprof(std::string("profile --config ") + kTiny +
                              " --train.device cuda --out " + Out());
  if (ProbeCudaDevice().available) {
    EXPECT_EQ(r.exit_code, 0) << r.output;
  } else {
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--train.device cuda: no GPU to train on"),
              std::string::npos)
        << r.output;
    EXPECT_TRUE(NothingWritten());
  }
}

// fit --measure whose run refuses its input says why, with exit 2 (it said
// "failed (exit 2), not for memory; see LOG", exit 3).
TEST_F(CliTest, FitMeasureNamesWhyItsRunWasRefused) {
  const Result r = RunMemprof(std::string("fit --config ") + kTiny +
                              " --budget 1GiB --measure --train.device cuda "
                              "--out " +
                              Out());
  if (ProbeCudaDevice().available) {
    EXPECT_EQ(r.exit_code, 0) << r.output;
  } else {
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("the measured run at micro-batch 1 refused its "
                            "input: --train.device cuda: no GPU to train on"),
              std::string::npos)
        << r.output;
  }
}

}  // namespace
}  // namespace memprof
