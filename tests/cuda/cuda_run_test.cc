// Tier 4, on a GPU only: a rank trained on CUDA under the CUDA backend of
// the hook. Not registered with ctest (a machine without a GPU cannot run
// it, and a test that skips itself would read as passed there);
// scripts/device-check.sh runs it on the GPU machine.
#include <gtest/gtest.h>

#include "profiler/base/cuda_run.h"
#include "profiler/predict/cuda_prediction.h"
#include "profiler/train/trainer.h"

namespace memprof {
namespace {

const size_t kW = Index(Category::kWeights);
const size_t kG = Index(Category::kGradients);
const size_t kO = Index(Category::kOptimizerState);
const size_t kB = Index(Category::kDdpBuckets);
const size_t kU = Index(Category::kUnattributed);

RunConfig TinyGpt() {
  RunConfig c;
  c.model = "gpt";
  c.gpt = {/*layers=*/2,  /*d_model=*/64,
           /*heads=*/4,   /*seq_len=*/32,
           /*vocab=*/256, /*dropout=*/0};
  c.train.micro_batch = 4;
  c.train.steps = 4;
  c.train.device = "cuda";
  return c;
}

RankRun RunOnGpu(const RunConfig& config, int64_t memory_limit_bytes = 0) {
  const RankTopology solo;  // on a free port
  GroupBackend backend;
  backend.backend = DdpBackend(config);
  backend.cuda = true;
  ProcessGroup group(solo, /*timeout_s=*/60, backend);
  return RunRank(config, group, memory_limit_bytes, /*cuda_device=*/0);
}

TEST(CudaRun, ModelStateIsMeasuredToTheByteAtTheRoundedRequests) {
  const RankRun r = RunOnGpu(TinyGpt());
  ASSERT_TRUE(r.cuda.has_value());
  const Analysis& a = r.analysis;
  for (size_t c : {kW, kG, kO, kB}) {
    EXPECT_EQ(a.steady_max[c], r.prediction.bytes[c])
        << CategoryName(static_cast<Category>(c));
  }
  EXPECT_EQ(a.stats[kU].allocated, 0) << "nothing is ever unattributed";
  EXPECT_EQ(r.ownership_not_found, 0);
  EXPECT_EQ(r.ownership_conflicts, 0);
}

TEST(CudaRun, TheMirrorAgreesWithTheAllocatorAtEveryPhaseMark) {
  const RankRun r = RunOnGpu(TinyGpt());
  ASSERT_TRUE(r.cuda.has_value());
  const CudaRun& cuda = *r.cuda;
  EXPECT_GT(cuda.checks.size(), 20u);
  for (const CudaSelfCheck& c : cuda.checks) {
    EXPECT_TRUE(c.Matches())
        << "step " << c.step << " " << PhaseName(c.phase) << ": memprof "
        << c.memprof.allocated << "/" << c.memprof.reserved << ", allocator "
        << c.allocator.allocated << "/" << c.allocator.reserved;
  }
  EXPECT_EQ(cuda.mismatches, 0) << cuda.first_mismatch;
  EXPECT_EQ(cuda.at_allocated_peak.allocated, cuda.allocator_peak_allocated);
  EXPECT_EQ(cuda.peak_reserved, cuda.allocator_peak_reserved);
  // The categories count rounded requests; the blocks hold at least that.
  EXPECT_GE(cuda.at_allocated_peak.allocated,
            r.analysis.steady_peak.total_bytes);
}

TEST(CudaRun, TheDeviceMemoryOutsideTheAllocatorIsReadAtItsMoments) {
  const RankRun r = RunOnGpu(TinyGpt());
  ASSERT_TRUE(r.cuda.has_value());
  std::vector<std::string> names;
  for (const CudaMoment& m : r.cuda->moments) {
    // process_start comes once per process, from NVML, before any context.
    if (m.moment == "process_start") continue;
    names.push_back(m.moment);
    EXPECT_GT(m.outside(), 0) << m.moment << ": the CUDA context at least";
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"cuda_context", "cuda_libraries", "model",
                                      "process_group", "step_1", "step_4"}));
}

TEST(CudaRun, AMemoryLimitRunsTheRealAllocatorOutOfMemory) {
  RunConfig config = TinyGpt();
  config.gpt.seq_len = 256;
  config.train.micro_batch = 64;
  const int64_t limit = 64 << 20;
  const RankRun r = RunOnGpu(config, limit);
  ASSERT_TRUE(r.cuda.has_value());
  EXPECT_TRUE(r.RanOutOfMemory());
  EXPECT_TRUE(r.cuda->out_of_memory);
  EXPECT_GT(r.cuda->oom_requested_bytes, 0);
  EXPECT_LE(r.cuda->at_out_of_memory.reserved, limit);
  EXPECT_EQ(r.analysis.out_of_memory_bytes[kW], r.prediction.bytes[kW]);
}

}  // namespace
}  // namespace memprof
