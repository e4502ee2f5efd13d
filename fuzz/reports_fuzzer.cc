// libFuzzer target: the readers of memprof's own files and everything behind
// them. Each input is tried as a rank report (RankReportFromJson, the one
// reader of rank-<r>.json) and as a baseline (ParseBaseline). Whatever is
// accepted must survive a write-and-read round trip unchanged, render as
// report.md, report.html, trace.json, summary.json and the console table,
// and pass the regression gate against itself; everything else must be
// refused with InputError. Another exception, a crash, a sanitizer report
// or a trap is a bug. Built and run by fuzz/CMakeLists.txt and
// tests/CMakeLists.txt; a longer run: docs/internals.md "Fuzzing the readers".
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "profiler/base/errors.h"
#include "profiler/gate/baseline.h"
#include "profiler/gate/regression_check.h"
#include "profiler/report/chrome_trace.h"
#include "profiler/report/rank_report.h"
#include "profiler/report/report_html.h"
#include "profiler/report/report_markdown.h"
#include "profiler/report/report_text.h"
#include "profiler/report/run_reports.h"
#include "profiler/report/summary.h"

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

void Gate(const Baseline& baseline) {
  const Baseline again = RoundTrip(baseline);
  const CheckReport report = CompareWithBaseline(
      again, "baseline.json", baseline.run, "run", ToleranceSettings{}, false);
  if (report.regressed != 0 || report.improved != 0) __builtin_trap();
  const std::string text = FormatCheckTable(report, false) +
                           FormatCheckMarkdown(report, true) +
                           CheckReportToJson(report).dump();
  if (text.empty()) __builtin_trap();
}

void Render(const RankReport& report) {
  // One rank of a world of its own size, as `memprof report` would render
  // it (the others missing).
  const std::vector<RankReport> ranks = {report};
  const RunView view = RunViewOf("fuzz", ranks);
  const ReportText text = BuildReportText(view);
  const std::string out = FormatReportMarkdown(text) +
                          FormatReportHtml(view, text) +
                          ChromeTraceJson(view).dump() +
                          SummaryJson(ranks).dump() + FormatSummaryTable(ranks);
  if (out.empty()) __builtin_trap();
}

void RankReportInput(const std::string& text) {
  RankReport report;
  try {
    report = ParseRankReport(text, "rank-0.json");
  } catch (const InputError&) {
    return;
  }
  const std::string written = ToJson(report).dump();
  try {
    if (ToJson(ParseRankReport(written, "round-trip.json")).dump() != written) {
      __builtin_trap();  // the reader and the writer disagree
    }
  } catch (const InputError&) {
    __builtin_trap();  // a rank report we wrote was refused
  }
  if (!report.hook.installed) return;  // step times only: nothing to render
  Render(report);
  try {
    Baseline baseline;
    baseline.run =
        CombineRankReports({FiguresOf(report, "rank-0.json")}, {"rank-0.json"});
    Gate(baseline);
  } catch (const InputError&) {
    // a report of a larger world, its other ranks missing
  }
}

}  // namespace
}  // namespace memprof

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memprof;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    Gate(ParseBaseline(text, "fuzz-baseline.json"));
  } catch (const InputError&) {
  }
  RankReportInput(text);
  return 0;
}
