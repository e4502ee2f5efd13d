// The CPU hook sees every storage, from any thread, byte for byte.
#include "profiler/capture/cpu_hook.h"

#include <thread>
#include <vector>

#include <ATen/Parallel.h>
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "profiler/capture/memory_tracker.h"
#include "tests/capture/lifetime_block.h"

namespace memprof {
namespace {

TEST(CpuHook, IsTheCpuAllocator) {
  ASSERT_TRUE(CpuHookInstalled());
  EXPECT_EQ(c10::GetCPUAllocator(), CpuHookAllocator());
  const torch::Tensor t = torch::empty({16}, torch::kFloat);
  EXPECT_EQ(t.storage().data_ptr().get_deleter(),
            CpuHookAllocator()->raw_deleter());
}

TEST(CpuHook, SeesAllocationsOfAStdThreadByteForByte) {
  MemoryTracker& tracker = MemoryTracker::Get();
  tracker.BeginSession();
  int64_t expected_bytes = 0;  // independent count, from tensor metadata
  int64_t expected_count = 0;
  std::thread worker([&] {
    std::vector<torch::Tensor> keep;
    for (int64_t n : {1, 7, 1000, 65536, 300001}) {
      keep.push_back(torch::empty({n}, torch::kFloat));
      keep.push_back(torch::empty({n, 3}, torch::kDouble));
    }
    for (const torch::Tensor& t : keep) {
      expected_bytes += static_cast<int64_t>(t.storage().nbytes());
      ++expected_count;
      EXPECT_NE(tracker.CategoryOf(t.storage().data()), Category::kUnattributed)
          << "a live block the tracker does not know";
    }
  });
  worker.join();
  const Capture capture = tracker.EndSession();
  int64_t freed_bytes = 0;
  for (const Lifetime& life : LifetimesOf(capture)) {
    EXPECT_NE(life.free_seq, kLive);
    freed_bytes += life.bytes;
  }
  EXPECT_EQ(freed_bytes, expected_bytes);
  EXPECT_EQ(static_cast<int64_t>(LifetimesOf(capture).size()), expected_count);
}

TEST(CpuHook, SeesAllocationsInsideTheIntraOpPool) {
  MemoryTracker& tracker = MemoryTracker::Get();
  constexpr int64_t kChunks = 64;
  tracker.BeginSession();
  std::atomic<int64_t> made{0};
  at::parallel_for(0, kChunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      torch::Tensor t = torch::empty({256 + i}, torch::kFloat);
      made += static_cast<int64_t>(t.storage().nbytes());
    }
  });
  int64_t recorded = 0;
  for (const Lifetime& life : LifetimesOf(tracker.EndSession())) {
    recorded += life.bytes;
  }
  EXPECT_EQ(recorded, made.load());
  EXPECT_EQ(made.load(), 4 * (256 * kChunks + kChunks * (kChunks - 1) / 2));
}

TEST(CpuHook, SeesAutogradAndOpWorkspace) {
  MemoryTracker& tracker = MemoryTracker::Get();
  tracker.BeginSession();
  torch::Tensor w = torch::randn({64, 64}, torch::requires_grad());
  torch::Tensor loss = torch::tanh(torch::mm(w, w)).sum();
  loss.backward();
  // w, mm output, tanh output, sum, grad seed, two mm grads, w.grad...
  EXPECT_NE(tracker.CategoryOf(w.grad().storage().data()),
            Category::kUnattributed);
  EXPECT_GE(LifetimesOf(tracker.EndSession()).size(), 6u);
}

TEST(CpuHook, ZeroByteStoragesPassThrough) {
  MemoryTracker::Get().BeginSession();
  const torch::Tensor t = torch::empty({0}, torch::kFloat);
  EXPECT_EQ(t.numel(), 0);
  EXPECT_TRUE(LifetimesOf(MemoryTracker::Get().EndSession()).empty());
}

// oneDNN (the mkldnn convolution) frees a zero-byte raw_allocate with
// raw_deallocate(nullptr); it is not a block and must not abort.
TEST(CpuHook, RawDeallocateOfNullIsNotABlock) {
  c10::Allocator* hook = CpuHookAllocator();
  void* empty = hook->raw_allocate(0);
  EXPECT_EQ(empty, nullptr);
  const int64_t before = MemoryTracker::Get().LiveBytes();
  hook->raw_deallocate(empty);
  EXPECT_EQ(MemoryTracker::Get().LiveBytes(), before);
  void* block = hook->raw_allocate(96);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(MemoryTracker::Get().LiveBytes(), before + 96);
  hook->raw_deallocate(block);
  EXPECT_EQ(MemoryTracker::Get().LiveBytes(), before);
}

}  // namespace
}  // namespace memprof
