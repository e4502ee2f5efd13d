// libFuzzer target: the rank-report reader of `memprof report`
// (ValidateRankReport, profiler/report/run_reports.h) and every renderer on
// whatever it accepts. Every input is either rejected with InputError or
// rendered as report.md, report.html and trace.json without any other
// exception; a crash, a sanitizer report or another exception is a bug.
// Built and run by fuzz/CMakeLists.txt and tests/CMakeLists.txt, seeded
// with the committed rank reports of tests/data/.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/report/chrome_trace.h"
#include "profiler/base/errors.h"
#include "profiler/report/report_html.h"
#include "profiler/report/report_markdown.h"
#include "profiler/report/report_text.h"
#include "profiler/report/run_reports.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using Json = nlohmann::ordered_json;
  const std::string text(reinterpret_cast<const char*>(data), size);
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  try {
    memprof::ValidateRankReport(doc);
  } catch (const memprof::InputError&) {
    return 0;
  }
  // One rank of a world of its own size, as `memprof report` would render
  // it (the others missing).
  std::vector<Json> ranks = {doc};
  const memprof::RunView view = memprof::RunViewOf("fuzz", std::move(ranks));
  const memprof::ReportText report = memprof::BuildReportText(view);
  const std::string markdown = memprof::FormatReportMarkdown(report);
  const std::string html = memprof::FormatReportHtml(view, report);
  const std::string trace = memprof::ChromeTraceJson(view).dump();
  if (markdown.empty() || html.empty() || trace.empty()) __builtin_trap();
  return 0;
}
