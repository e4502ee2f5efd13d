// What the hook adds to one allocate+free pair, by block size.
//
//   build/bench/hook_alloc_bench [--benchmark_repetitions=N]
//
// Each iteration times a batch of pairs through the bare default CPU
// allocator, right after it a batch through the hook wrapping that same
// allocator (with a session recording lifetimes, as during a profile), and
// a batch through a straightforward hook (one std::mutex, a node-based
// std::unordered_map, a heap-allocated deleter context per block) for
// comparison, so all three see the same machine noise. The counters are
// nanoseconds per pair; the table printed at the end gives the medians
// over the repetitions, and the added nanoseconds' minimum and maximum.
#include <benchmark/benchmark.h>

#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <vector>

#include "bench/naive_hook.h"
#include "profiler/base/statistics.h"
#include "profiler/capture/cpu_hook.h"
#include "profiler/capture/memory_tracker.h"

namespace {

constexpr int64_t kSizes[] = {64,      1 << 10,  16 << 10, 256 << 10,
                              1 << 20, 16 << 20, 64 << 20};
constexpr int kBatch = 256;  // pairs per timed batch
// Lifetime log entries kept before the bench starts a fresh session.
constexpr int64_t kLogLimit = 1 << 20;

double BatchNanos(c10::Allocator* allocator, size_t bytes) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kBatch; ++i) {
    c10::DataPtr block = allocator->allocate(bytes);
    benchmark::DoNotOptimize(block.get());
  }
  return std::chrono::duration<double, std::nano>(
             std::chrono::steady_clock::now() - start)
      .count();
}

void BM_HookedVsBare(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  c10::Allocator* bare = c10::GetDefaultCPUAllocator();
  c10::Allocator* hooked = memprof::CpuHookAllocator();
  static memprof::NaiveHook naive(bare);
  memprof::MemoryTracker& tracker = memprof::MemoryTracker::Get();
  tracker.BeginSession();
  double bare_ns = 0, hooked_ns = 0, naive_ns = 0;
  int64_t logged = 0;
  for (auto _ : state) {
    bare_ns += BatchNanos(bare, bytes);
    hooked_ns += BatchNanos(hooked, bytes);
    naive_ns += BatchNanos(&naive, bytes);
    if ((logged += kBatch) >= kLogLimit) {
      state.PauseTiming();
      tracker.BeginSession();
      logged = 0;
      state.ResumeTiming();
    }
  }
  tracker.EndSession();
  const double pairs = static_cast<double>(state.iterations()) * kBatch;
  state.counters["bare_ns"] = bare_ns / pairs;
  state.counters["hooked_ns"] = hooked_ns / pairs;
  state.counters["added_ns"] = (hooked_ns - bare_ns) / pairs;
  state.counters["naive_added_ns"] = (naive_ns - bare_ns) / pairs;
}

// Collects, per size, the median counters and the added nanoseconds'
// minimum and maximum over the repetitions, next to the console output.
class MedianCollector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Aggregate) continue;
      Row& row = rows_[std::stoll(run.run_name.args)];
      if (run.aggregate_name == "median") {
        row.bare = run.counters.at("bare_ns").value;
        row.hooked = run.counters.at("hooked_ns").value;
        row.added = run.counters.at("added_ns").value;
        row.naive_added = run.counters.at("naive_added_ns").value;
      } else if (run.aggregate_name == "min") {
        row.added_min = run.counters.at("added_ns").value;
      } else if (run.aggregate_name == "max") {
        row.added_max = run.counters.at("added_ns").value;
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void PrintTable() const {
    if (rows_.empty()) return;
    std::printf("\n%10s %10s %10s %24s %16s\n", "bytes", "bare ns", "hooked ns",
                "added ns min/median/max", "naive added ns");
    std::vector<double> added, naive;
    for (const auto& [bytes, row] : rows_) {
      std::printf("%10lld %10.1f %10.1f %8.1f /%6.1f /%6.1f %16.1f\n",
                  static_cast<long long>(bytes), row.bare, row.hooked,
                  row.added_min, row.added, row.added_max, row.naive_added);
      added.push_back(row.added);
      naive.push_back(row.naive_added);
    }
    std::printf(
        "median over sizes: the hook adds %.1f ns per allocate+free "
        "pair (straightforward design: %.1f ns)\n",
        memprof::Median(added), memprof::Median(naive));
  }

 private:
  struct Row {
    double bare = 0, hooked = 0, added = 0, naive_added = 0;
    double added_min = 0, added_max = 0;
  };
  std::map<int64_t, Row> rows_;
};

}  // namespace

int main(int argc, char** argv) {
  for (int64_t size : kSizes) {
    benchmark::RegisterBenchmark("BM_HookedVsBare", BM_HookedVsBare)
        ->Arg(size)
        ->ComputeStatistics("min",
                            [](const std::vector<double>& v) {
                              return *std::min_element(v.begin(), v.end());
                            })
        ->ComputeStatistics("max", [](const std::vector<double>& v) {
          return *std::max_element(v.begin(), v.end());
        });
  }
  std::vector<char*> args(argv, argv + argc);
  std::string reps = "--benchmark_repetitions=5";
  std::string aggregates = "--benchmark_report_aggregates_only=true";
  args.insert(args.begin() + 1, {reps.data(), aggregates.data()});
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  MedianCollector reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintTable();
  return 0;
}
