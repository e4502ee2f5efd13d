// The CPU hook sees every storage, from any thread, byte for byte.
#include "profiler/capture/cpu_hook.h"

#include <thread>
#include <vector>

#include <ATen/Parallel.h>
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "profiler/capture/memory_tracker.h"

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
  const Stat before = tracker.Total();
  const int64_t count_before = tracker.allocation_count();
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
  const Stat after = tracker.Total();
  EXPECT_EQ(after.allocated - before.allocated, expected_bytes);
  EXPECT_EQ(after.freed - before.freed, expected_bytes);
  EXPECT_EQ(after.current, before.current);
  EXPECT_EQ(tracker.allocation_count() - count_before, expected_count);
}

TEST(CpuHook, SeesAllocationsInsideTheIntraOpPool) {
  MemoryTracker& tracker = MemoryTracker::Get();
  constexpr int64_t kChunks = 64;
  const Stat before = tracker.Total();
  std::atomic<int64_t> made{0};
  at::parallel_for(0, kChunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      torch::Tensor t = torch::empty({256 + i}, torch::kFloat);
      made += static_cast<int64_t>(t.storage().nbytes());
    }
  });
  const Stat after = tracker.Total();
  EXPECT_EQ(after.allocated - before.allocated, made.load());
  EXPECT_EQ(made.load(), 4 * (256 * kChunks + kChunks * (kChunks - 1) / 2));
}

TEST(CpuHook, SeesAutogradAndOpWorkspace) {
  MemoryTracker& tracker = MemoryTracker::Get();
  const int64_t count_before = tracker.allocation_count();
  torch::Tensor w = torch::randn({64, 64}, torch::requires_grad());
  torch::Tensor loss = torch::tanh(torch::mm(w, w)).sum();
  loss.backward();
  // w, mm output, tanh output, sum, grad seed, two mm grads, w.grad...
  EXPECT_GE(tracker.allocation_count() - count_before, 6);
  EXPECT_NE(tracker.CategoryOf(w.grad().storage().data()),
            Category::kUnattributed);
}

TEST(CpuHook, ZeroByteStoragesPassThrough) {
  const int64_t count_before = MemoryTracker::Get().allocation_count();
  const torch::Tensor t = torch::empty({0}, torch::kFloat);
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(MemoryTracker::Get().allocation_count(), count_before);
}

// oneDNN (the mkldnn convolution) frees a zero-byte raw_allocate with
// raw_deallocate(nullptr); it is not a block and must not abort.
TEST(CpuHook, RawDeallocateOfNullIsNotABlock) {
  c10::Allocator* hook = CpuHookAllocator();
  void* empty = hook->raw_allocate(0);
  EXPECT_EQ(empty, nullptr);
  const Stat before = MemoryTracker::Get().Total();
  hook->raw_deallocate(empty);
  EXPECT_EQ(MemoryTracker::Get().Total().current, before.current);
  void* block = hook->raw_allocate(96);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(MemoryTracker::Get().Total().current, before.current + 96);
  hook->raw_deallocate(block);
  EXPECT_EQ(MemoryTracker::Get().Total().current, before.current);
}

}  // namespace
}  // namespace memprof
