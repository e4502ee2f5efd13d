// libFuzzer target: the baseline and rank-report parsers
// (profiler/gate/baseline.h) and the comparison on whatever they accept. Every
// input is either rejected with InputError or parsed into figures that
// survive a write-and-read round trip and compare equal to themselves;
// anything else (another exception, a crash, a sanitizer report, a trap)
// is a bug. Built and run by fuzz/CMakeLists.txt and tests/CMakeLists.txt;
// a longer run: README "Memory regression in CI".
#include <cstddef>
#include <cstdint>
#include <string>

#include "profiler/gate/baseline.h"
#include "profiler/base/errors.h"
#include "profiler/gate/regression_check.h"

namespace memprof {
namespace {

// Our own output must read back as what was written.
Baseline RoundTrip(const Baseline& baseline) {
  const std::string text = BaselineToJson(baseline).dump(2);
  try {
    const Baseline again = ParseBaseline(text, "round-trip.json");
    if (!SameFigures(baseline.run, again.run) ||
        again.run.context.config != baseline.run.context.config) {
      __builtin_trap();
    }
    if (again.tolerances.size() != baseline.tolerances.size()) {
      __builtin_trap();
    }
    for (const auto& [key, tolerance] : baseline.tolerances) {
      const Tolerance& read = again.tolerances.at(key);
      if (read.percent != tolerance.percent || read.bytes != tolerance.bytes) {
        __builtin_trap();
      }
    }
    return again;
  } catch (const InputError&) {
    __builtin_trap();  // a baseline we wrote was refused
  }
}

void Exercise(const Baseline& baseline) {
  const Baseline again = RoundTrip(baseline);
  const CheckReport report = CompareWithBaseline(
      again, "baseline.json", baseline.run, "run", ToleranceSettings{}, false);
  if (report.regressed != 0 || report.improved != 0) __builtin_trap();
  const std::string text = FormatCheckTable(report) +
                           FormatCheckMarkdown(report) +
                           CheckReportToJson(report).dump();
  if (text.empty()) __builtin_trap();
}

}  // namespace
}  // namespace memprof

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memprof;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    Exercise(ParseBaseline(text, "fuzz-baseline.json"));
  } catch (const InputError&) {
  }
  try {
    const RankReportFigures report = ParseRankReport(text, "rank-0.json");
    Baseline baseline;
    baseline.run = CombineRankReports({report}, {"rank-0.json"});
    Exercise(baseline);
  } catch (const InputError&) {
    // includes a report of a larger world with its other ranks missing
  }
  return 0;
}
