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
// nanoseconds per pair; the table printed at the end gives the medians.
#include <benchmark/benchmark.h>

#include <c10/core/CPUAllocator.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "profiler/base/statistics.h"
#include "profiler/capture/cpu_hook.h"
#include "profiler/capture/memory_tracker.h"

namespace {

constexpr int64_t kSizes[] = {64,      1 << 10,  16 << 10, 256 << 10,
                              1 << 20, 16 << 20, 64 << 20};
constexpr int kBatch = 256;  // pairs per timed batch
// Lifetime log entries kept before the bench starts a fresh session.
constexpr int64_t kLogLimit = 1 << 20;

// The straightforward design the hook is measured against.
class NaiveHook final : public c10::Allocator {
 public:
  explicit NaiveHook(c10::Allocator* base) : base_(base) {}
  c10::DataPtr allocate(size_t bytes) override {
    c10::DataPtr block = base_->allocate(bytes);
    void* data = block.get();
    auto* context =
        new Context{this, data, block.get_context(), block.get_deleter()};
    block.release_context();
    {
      std::lock_guard<std::mutex> guard(mutex_);
      blocks_[data] = Block{static_cast<int64_t>(bytes), seq_++};
      current_ += static_cast<int64_t>(bytes);
    }
    return c10::DataPtr(data, context, &Delete, block.device());
  }
  void copy_data(void* dest, const void* src,
                 std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

 private:
  struct Block {
    int64_t bytes, seq;
  };
  struct Context {
    const NaiveHook* hook;
    void* data;
    void* ctx;
    c10::DeleterFnPtr deleter;
  };
  static void Delete(void* raw) {
    auto* context = static_cast<Context*>(raw);
    {
      std::lock_guard<std::mutex> guard(context->hook->mutex_);
      auto it = context->hook->blocks_.find(context->data);
      context->hook->current_ -= it->second.bytes;
      context->hook->blocks_.erase(it);
      ++context->hook->seq_;
    }
    context->deleter(context->ctx);
    delete context;
  }
  c10::Allocator* base_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<void*, Block> blocks_;
  mutable int64_t seq_ = 0, current_ = 0;
};

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
  static NaiveHook naive(bare);
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

// Collects the median counters of each size next to the console output.
class MedianCollector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type == Run::RT_Aggregate && run.aggregate_name == "median") {
        rows_[std::stoll(run.run_name.args)] = {
            run.counters.at("bare_ns").value,
            run.counters.at("hooked_ns").value,
            run.counters.at("added_ns").value,
            run.counters.at("naive_added_ns").value};
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void PrintTable() const {
    if (rows_.empty()) return;
    std::printf("\n%10s %10s %10s %10s %16s\n", "bytes", "bare ns", "hooked ns",
                "added ns", "naive added ns");
    std::vector<double> added, naive;
    for (const auto& [bytes, row] : rows_) {
      std::printf("%10lld %10.1f %10.1f %10.1f %16.1f\n",
                  static_cast<long long>(bytes), row[0], row[1], row[2],
                  row[3]);
      added.push_back(row[2]);
      naive.push_back(row[3]);
    }
    std::printf(
        "median over sizes: the hook adds %.1f ns per allocate+free "
        "pair (straightforward design: %.1f ns)\n",
        memprof::Median(added), memprof::Median(naive));
  }

 private:
  std::map<int64_t, std::array<double, 4>> rows_;
};

}  // namespace

int main(int argc, char** argv) {
  for (int64_t size : kSizes) {
    benchmark::RegisterBenchmark("BM_HookedVsBare", BM_HookedVsBare)->Arg(size);
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
