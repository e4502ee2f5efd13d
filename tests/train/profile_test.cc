// A single-rank training run, measured to the byte.
#include <filesystem>

#include <gtest/gtest.h>
#include <torch/version.h>

#include "profiler/base/schema_version.h"
#include "profiler/cli/config_cli.h"
#include "tests/train/solo_run.h"

namespace memprof {
namespace {

constexpr int kW = static_cast<int>(Category::kWeights);
constexpr int kG = static_cast<int>(Category::kGradients);
constexpr int kO = static_cast<int>(Category::kOptimizerState);
constexpr int kA = static_cast<int>(Category::kActivations);
constexpr int kB = static_cast<int>(Category::kDdpBuckets);
constexpr int kU = static_cast<int>(Category::kUnattributed);

RunConfig TinyConfig(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--config",
                                   MEMPROF_SOURCE_DIR "/configs/mlp-tiny.ini"};
  args.insert(args.end(), extra.begin(), extra.end());
  return ParseProfileArgs(args).config;
}

const Segment& FirstSegmentOf(const Analysis& a, int32_t step) {
  for (const Segment& s : a.segments) {
    if (s.step == step) return s;
  }
  throw std::runtime_error("no segment for step " + std::to_string(step));
}

TEST(Profile, ModelStateIsMeasuredToTheByte) {
  const RankRun r = RunSolo(TinyConfig());
  const int64_t p = r.parameters;
  ASSERT_EQ(p, 11082);  // 32*64+64 + 2*(64*64+64) + 64*10+10
  const Analysis& a = r.analysis;
  EXPECT_EQ(a.steady_peak.bytes[kW], 4 * p);
  EXPECT_EQ(a.steady_peak.bytes[kG], 4 * p);
  EXPECT_EQ(a.steady_peak.bytes[kO], 8 * p);
  EXPECT_EQ(a.steady_peak.bytes[kB], 4 * p);  // DDP buckets, even for 1 rank
  EXPECT_EQ(a.steady_peak.bytes[kU], 0);
  EXPECT_EQ(a.stats[kU].allocated, 0) << "nothing is ever unattributed";
  EXPECT_EQ(a.steady_max[kW], 4 * p);
  EXPECT_EQ(a.steady_max[kO], 8 * p);
  EXPECT_EQ(Sum(a.steady_peak.bytes), a.steady_peak.total_bytes);
  EXPECT_EQ(r.ownership_not_found, 0);
  EXPECT_EQ(r.ownership_conflicts, 0);
}

TEST(Profile, ActivationsAreTheForwardTensorsKeptForBackward) {
  const RunConfig config = TinyConfig();
  const RankRun r = RunSolo(config);
  // Each hidden layer keeps at least its [B, hidden] ReLU output.
  const int64_t floor =
      config.mlp.depth * config.train.micro_batch * config.mlp.hidden * 4;
  EXPECT_GE(r.analysis.steady_max[kA], floor);
  EXPECT_LE(r.analysis.steady_max[kA], floor * 11 / 10 + 1024);
  EXPECT_GT(r.analysis.steady_peak.bytes[kA], 0);
}

TEST(Profile, StepOneCreatesGradientsAndOptimizerStateLazily) {
  const RankRun r = RunSolo(TinyConfig());
  const int64_t p = r.parameters;
  const Segment& step1 = FirstSegmentOf(r.analysis, 1);
  EXPECT_EQ(step1.begin_bytes[kG], 0);
  EXPECT_EQ(step1.begin_bytes[kO], 0);
  const Segment& step2 = FirstSegmentOf(r.analysis, 2);
  EXPECT_EQ(step2.begin_bytes[kG], 4 * p);
  EXPECT_EQ(step2.begin_bytes[kO], 8 * p);
  // DDP rebuilds its buckets in step 2: the steady state starts at step 3,
  // or a step later when a Gloo worker freed an old bucket late (Note [Late
  // bucket frees] in trainer.cc).
  EXPECT_GE(r.analysis.steady_first_step, 3);
  EXPECT_LE(r.analysis.steady_first_step, 4);
  ASSERT_EQ(r.step_records.size(), 4u);
}

TEST(Profile, OptimizerChoiceSetsItsState) {
  const RankRun sgd = RunSolo(TinyConfig({"--train.optimizer", "sgd"}));
  EXPECT_EQ(sgd.analysis.steady_peak.bytes[kO], 0);
  EXPECT_EQ(sgd.analysis.steady_peak.bytes[kG], 4 * sgd.parameters);
  const RankRun adamw = RunSolo(TinyConfig({"--train.optimizer", "adamw"}));
  EXPECT_EQ(adamw.analysis.steady_peak.bytes[kO], 8 * adamw.parameters);
}

// Momentum SGD keeps one buffer per parameter, made in step 1.
TEST(Profile, MomentumSgdKeepsOneBufferPerParameter) {
  const RankRun r = RunSolo(
      TinyConfig({"--train.optimizer", "sgd", "--train.momentum", "0.9"}));
  const int64_t p = r.parameters;
  EXPECT_EQ(FirstSegmentOf(r.analysis, 1).begin_bytes[kO], 0);
  EXPECT_EQ(FirstSegmentOf(r.analysis, 2).begin_bytes[kO], 4 * p);
  EXPECT_EQ(r.analysis.steady_max[kO], 4 * p);
  EXPECT_EQ(r.analysis.steady_peak.bytes[kG], 4 * p);
  EXPECT_EQ(r.analysis.steady_peak.bytes[kU], 0);
}

TEST(Profile, BucketViewMakesTheBucketsTheGradients) {
  const RankRun r =
      RunSolo(TinyConfig({"--ddp.gradient_as_bucket_view", "true"}));
  EXPECT_EQ(r.analysis.steady_peak.bytes[kB], 0);
  EXPECT_EQ(r.analysis.steady_peak.bytes[kG], 4 * r.parameters);
  EXPECT_EQ(r.analysis.steady_peak.bytes[kU], 0);
  EXPECT_EQ(r.ownership_conflicts, 0);
}

TEST(Profile, SetToNoneFreesGradientsBetweenSteps) {
  const RankRun r =
      RunSolo(TinyConfig({"--train.zero_grad_set_to_none", "true"}));
  EXPECT_EQ(FirstSegmentOf(r.analysis, 2).begin_bytes[kG], 0);
  EXPECT_EQ(r.analysis.steady_max[kG], 4 * r.parameters);
  EXPECT_EQ(r.analysis.steady_peak.bytes[kU], 0);
}

TEST(Profile, ReportJsonHasTheKeysOtherToolsReadAsIntegers) {
  const RankRun r = RunSolo(TinyConfig());
  const nlohmann::ordered_json j = ToJson(ReportOf(r));
  EXPECT_EQ(j["schema"], kRankSchema);
  EXPECT_EQ(j["context"]["rank"], 0);
  EXPECT_EQ(j["context"]["world_size"], 1);
  EXPECT_EQ(j["context"]["device"], "cpu");
  EXPECT_EQ(j["context"]["libtorch_version"], TORCH_VERSION);
  // What the build and this machine say about CUDA, as the probe found it.
  const nlohmann::ordered_json& cuda = j["context"]["cuda"];
#if MEMPROF_WITH_CUDA
  EXPECT_TRUE(cuda["compiled"].get<bool>());
#else
  EXPECT_FALSE(cuda["compiled"].get<bool>());
#endif
  EXPECT_EQ(cuda["available"].get<bool>(), cuda["devices"].get<int>() > 0);
  EXPECT_FALSE(cuda["status"].get<std::string>().empty());
  if (!std::filesystem::exists("/dev/nvidiactl")) {  // no driver, no GPU
    EXPECT_FALSE(cuda["available"].get<bool>());
  }
  // The run replayed on the CUDA caching allocator's model: 512-byte
  // blocks inside 2 MiB-multiple segments.
  const nlohmann::ordered_json& replay = j["cuda_replay"];
  const int64_t requested = replay["requested_bytes"];
  const int64_t allocated = replay["allocated_bytes"];
  const int64_t reserved = replay["reserved_bytes"];
  EXPECT_GT(requested, 0);
  EXPECT_LE(requested, allocated);
  EXPECT_EQ(allocated % 512, 0);
  EXPECT_LE(allocated + replay["inactive_split_bytes"].get<int64_t>(),
            reserved);
  EXPECT_LE(reserved, replay["peak_reserved_bytes"].get<int64_t>());
  EXPECT_EQ(replay["peak_reserved_bytes"].get<int64_t>() % (2 << 20), 0);
  EXPECT_TRUE(j["parameters"].is_number_integer());
  int64_t sum = 0;
  for (Category c : kAllCategories) {
    const auto& entry = j["categories"][std::string(CategoryName(c))];
    ASSERT_TRUE(entry["measured_bytes"].is_number_integer()) << CategoryName(c);
    ASSERT_TRUE(entry["peak_bytes"].is_number_integer()) << CategoryName(c);
    sum += entry["measured_bytes"].get<int64_t>();
  }
  EXPECT_EQ(sum, j["peak"]["total_bytes"].get<int64_t>());
  EXPECT_TRUE(j["peak"]["phase"].is_string());
  EXPECT_GE(j["peak"]["step"].get<int>(), 3);
  ASSERT_EQ(j["steps"].size(), 4u);
  EXPECT_FALSE(j["steps"][0]["steady_state"].get<bool>());
  EXPECT_FALSE(j["steps"][1]["steady_state"].get<bool>());
  EXPECT_TRUE(j["steps"][2]["steady_state"].get<bool>());
  EXPECT_EQ(j["ddp"]["buckets"], 1);
  EXPECT_TRUE(j["redundancy"]["weights"]["identical_across_ranks"].get<bool>());
}

// Note [Memory limit]: mlp-tiny's model state with DDP buckets is 20P =
// 221,640 B; its steady-state peak at micro-batch 8 is 255,512 B and its
// step-1 peak 249,800 B (measured).
TEST(Profile, LimitBelowModelStateStopsEvenMicroBatchOne) {
  const RankRun r = RunSolo(TinyConfig({"--micro-batch", "1"}),
                            /*memory_limit_bytes=*/200000);
  ASSERT_TRUE(r.RanOutOfMemory());
  const OutOfMemory& oom = r.capture.out_of_memory;
  EXPECT_EQ(oom.step, 1);
  EXPECT_GT(oom.live_bytes + oom.requested_bytes, 200000);
  EXPECT_LE(oom.live_bytes, 200000);
  EXPECT_EQ(Sum(r.analysis.out_of_memory_bytes), oom.live_bytes)
      << "the breakdown sums to the live bytes at the refused allocation";
  EXPECT_EQ(r.analysis.out_of_memory_bytes[kU], 0);
  EXPECT_EQ(r.analysis.out_of_memory_bytes[kW], 4 * r.parameters);
  const nlohmann::ordered_json j = ToJson(ReportOf(r));
  EXPECT_EQ(j["out_of_memory"]["fit"]["verdict"], "model-state-overflow");
  EXPECT_EQ(j["out_of_memory"]["live_bytes"], oom.live_bytes);
  ASSERT_EQ(j["steps"].size(), 1u);
  EXPECT_FALSE(j["steps"][0]["completed"].get<bool>());
  EXPECT_EQ(j["redundancy"].size(), 0u) << "no audit after out-of-memory";
}

TEST(Profile, OutOfMemoryKeepsTheStepsBeforeIt) {
  const RankRun unlimited = RunSolo(TinyConfig());
  const int64_t step1_peak = unlimited.analysis.steps[0].peak.total_bytes;
  const int64_t steady_peak = unlimited.analysis.steady_peak.total_bytes;
  ASSERT_LT(step1_peak, steady_peak);
  // Room for step 1, not for the steady state.
  const RankRun r = RunSolo(TinyConfig(), (step1_peak + steady_peak) / 2);
  ASSERT_TRUE(r.RanOutOfMemory());
  EXPECT_GE(r.capture.out_of_memory.step, 2);
  ASSERT_GE(r.step_records.size(), 2u);
  EXPECT_TRUE(r.step_records[0].completed);
  EXPECT_FALSE(r.step_records.back().completed);
  EXPECT_EQ(r.analysis.steps[0].peak.total_bytes, step1_peak)
      << "step 1's figures are those of the run without a limit";
  EXPECT_EQ(Sum(r.analysis.out_of_memory_bytes),
            r.capture.out_of_memory.live_bytes);
}

TEST(Profile, LimitAboveThePeakChangesNothing) {
  const RankRun unlimited = RunSolo(TinyConfig());
  const RankRun r =
      RunSolo(TinyConfig(), unlimited.analysis.run_peak.total_bytes);
  EXPECT_FALSE(r.RanOutOfMemory());
  EXPECT_EQ(r.analysis.steady_peak.total_bytes,
            unlimited.analysis.steady_peak.total_bytes);
  EXPECT_TRUE(ToJson(ReportOf(r))["out_of_memory"].is_null());
}

}  // namespace
}  // namespace memprof
