// What the CUDA backend's trace callback costs per allocator event, on
// synthetic TraceEntry sequences (no GPU): CudaTrace::Apply, i.e. the mirror
// of the caching allocator and the tracker's record, as the allocator's
// callback runs it.
//
//   build/bench/cuda_trace_bench [--benchmark_repetitions=N]
//
// Each iteration allocates 64 blocks one after another in one segment (each
// split off the free rest, as the allocator does) and frees them in reverse
// (FREE_REQUESTED then FREE_COMPLETED, each merging with the free rest):
// 192 events. The counter is nanoseconds per event.
#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "bench/synthetic_trace.h"
#include "profiler/capture/cuda_trace.h"

namespace {

void BM_TraceEvent(benchmark::State& state) {
  const memprof::SyntheticTrace synthetic =
      memprof::SplitAndMergeTrace(state.range(0));
  const std::vector<memprof::TraceEntry>& events = synthetic.events;
  memprof::MemoryTracker& tracker = memprof::MemoryTracker::Get();
  memprof::CudaTrace trace(tracker);
  trace.Apply(synthetic.segment);
  tracker.BeginSession();
  double ns = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (const memprof::TraceEntry& e : events) trace.Apply(e);
    ns += std::chrono::duration<double, std::nano>(
              std::chrono::steady_clock::now() - start)
              .count();
    state.PauseTiming();
    tracker.BeginSession();  // the log of freed blocks starts again
    state.ResumeTiming();
  }
  tracker.EndSession();
  if (trace.mismatches() != 0) state.SkipWithError("the mirror disagreed");
  state.counters["ns_per_event"] =
      ns / (static_cast<double>(state.iterations()) * events.size());
}

}  // namespace

// 1 KiB blocks in a small 2 MiB segment; 1.5 MiB blocks (the large pool)
// in a 96 MiB one.
BENCHMARK(BM_TraceEvent)->Arg(1 << 10)->Arg(3 << 19);
BENCHMARK_MAIN();
