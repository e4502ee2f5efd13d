// Instructions of the hot paths, counted by callgrind: run it through
// bench/instructions.sh (also as the ctest hot-path gate), which starts it
// under `valgrind --tool=callgrind` and reads the counts back. Each measured
// region is a callgrind client request pair: CALLGRIND_ZERO_STATS before,
// CALLGRIND_DUMP_STATS_AT("<label> <units>") after, so a dump holds that
// region's instructions and nothing else (no start-up, no other region).
//
//   instruction_bench [hook|cuda-trace|all]   (default all)
//
// Regions (labels):
//   pairs <variant> <bytes> <n>   n allocate+free pairs of `bytes` through
//                                 the bare default CPU allocator (bare), the
//                                 hook wrapping it during a recording session
//                                 (hook), and the straightforward design
//                                 (naive); added = variant minus bare
//   cuda-trace <block> <n>        n synthetic caching-allocator entries
//                                 through CudaTrace::Apply (64 blocks split
//                                 off one segment, freed in reverse)
// Outside valgrind the requests do nothing; the program then only runs.
#include <sys/wait.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include <c10/core/CPUAllocator.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/naive_hook.h"
#include "bench/synthetic_trace.h"
#include "profiler/capture/cpu_hook.h"
#include "profiler/capture/cuda_trace.h"
#include "profiler/capture/memory_tracker.h"

namespace {

constexpr int64_t kSizes[] = {64,      1 << 10,  16 << 10, 256 << 10,
                              1 << 20, 16 << 20, 64 << 20};
constexpr int kPairs = 2000;  // pairs per region
constexpr int kWarmUp = 200;  // pairs before it, unmeasured

void Pairs(c10::Allocator* allocator, size_t bytes, int n) {
  for (int i = 0; i < n; ++i) {
    c10::DataPtr block = allocator->allocate(bytes);
    // Keep the allocation from being folded away.
    __asm__ volatile("" : : "r"(block.get()) : "memory");
  }
}

void Dump(const std::string& label) { CALLGRIND_DUMP_STATS_AT(label.c_str()); }

void HookRegions() {
  c10::Allocator* bare = c10::GetDefaultCPUAllocator();
  static memprof::NaiveHook naive(bare);
  const std::pair<const char*, c10::Allocator*> variants[] = {
      {"bare", bare}, {"hook", memprof::CpuHookAllocator()}, {"naive", &naive}};
  memprof::MemoryTracker& tracker = memprof::MemoryTracker::Get();
  tracker.BeginSession();  // the hook records lifetimes, as in a profile
  for (int64_t bytes : kSizes) {
    for (const auto& [name, allocator] : variants) {
      // Each region runs in a child forked from the same parent, so every
      // variant starts from the same malloc heap: otherwise glibc's cost
      // for a block depends on what the region before it left (up to 60
      // instructions per pair at 64 B), and "added" would measure that.
      const pid_t child = ::fork();
      if (child == 0) {
        Pairs(allocator, static_cast<size_t>(bytes), kWarmUp);
        CALLGRIND_ZERO_STATS;
        Pairs(allocator, static_cast<size_t>(bytes), kPairs);
        Dump(std::string("pairs ") + name + " " + std::to_string(bytes) + " " +
             std::to_string(kPairs));
        std::_Exit(0);
      }
      int status = 0;
      if (child < 0 || ::waitpid(child, &status, 0) != child ||
          !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "instruction_bench: the %s region failed\n", name);
        std::exit(1);
      }
    }
  }
  tracker.EndSession();
}

// The sequence bench/cuda_trace_bench times (bench/synthetic_trace.h).
void CudaTraceRegions() {
  constexpr int kRounds = 20;
  memprof::MemoryTracker& tracker = memprof::MemoryTracker::Get();
  for (int64_t block : {int64_t{1} << 10, int64_t{3} << 19}) {
    const memprof::SyntheticTrace synthetic =
        memprof::SplitAndMergeTrace(block);
    memprof::CudaTrace trace(tracker);
    trace.Apply(synthetic.segment);
    tracker.BeginSession();
    for (const memprof::TraceEntry& e : synthetic.events)
      trace.Apply(e);  // warm-up
    CALLGRIND_ZERO_STATS;
    for (int round = 0; round < kRounds; ++round) {
      for (const memprof::TraceEntry& e : synthetic.events) trace.Apply(e);
    }
    Dump("cuda-trace " + std::to_string(block) + " " +
         std::to_string(kRounds * synthetic.events.size()));
    tracker.EndSession();
    if (trace.mismatches() != 0) {
      std::fprintf(stderr, "instruction_bench: the mirror disagreed: %s\n",
                   trace.first_mismatch().c_str());
      std::exit(1);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "all";
  if (what != "all" && what != "hook" && what != "cuda-trace") {
    std::fprintf(stderr, "usage: instruction_bench [hook|cuda-trace|all]\n");
    return 2;
  }
  if (!RUNNING_ON_VALGRIND) {
    std::fprintf(stderr,
                 "instruction_bench: not under valgrind; the counts come from "
                 "bench/instructions.sh\n");
  }
  if (what != "cuda-trace") HookRegions();
  if (what != "hook") CudaTraceRegions();
  return 0;
}
