// A run on a GPU in the reports: rank reports with a `cuda_run` (built
// here from the committed cpu run, with figures chosen so every cell is
// known) gain the allocator's tables, chart and trace counters; cpu runs
// have none. The reader keeps every figure and names a bad one.
#include <nlohmann/json.hpp>

#include "profiler/base/errors.h"
#include "profiler/report/chrome_trace.h"
#include "profiler/report/report_html.h"
#include "profiler/report/report_markdown.h"
#include "profiler/report/report_text.h"
#include "tests/report/fixture.h"

namespace memprof {
namespace {

constexpr int64_t kMiB = 1 << 20;

// One self-check per phase mark of the rank's timeline, all agreeing; the
// allocated bytes grow by 1 MiB a mark inside 40 MiB of segments.
CudaRun GpuRunOf(const RankReport& rank) {
  CudaRun run;
  run.device = rank.context.rank;
  run.device_name = "Test GPU";
  run.device_total = 80LL << 30;
  int64_t allocated = 0;
  for (const TimelineSegment& segment : rank.timeline) {
    if (segment.step == 0 && segment.phase == Phase::kIdle) continue;
    allocated += kMiB;
    const CudaAllocatorFigures f{allocated - 100, allocated, 40 * kMiB,
                                 2 * kMiB};
    run.checks.push_back({segment.step, segment.phase, f, f});
  }
  run.at_allocated_peak = {30 * kMiB, 31 * kMiB, 40 * kMiB, 3 * kMiB};
  run.peak_reserved = 40 * kMiB;
  run.allocator_peak_allocated = 31 * kMiB;
  run.allocator_peak_reserved = 40 * kMiB;
  run.predicted_at_peak = {29 * kMiB, 30 * kMiB, 38 * kMiB, 2 * kMiB};
  run.predicted_peak_reserved = 38 * kMiB;
  run.before_session_allocated = 8 * kMiB;
  run.moments = {{"cuda_context", 600 * kMiB, 0, 0},
                 {"process_group", 700 * kMiB, 20 * kMiB, 10 * kMiB}};
  return run;
}

std::vector<RankReport> GpuRanks() {
  std::vector<RankReport> ranks = FixtureRanks();
  for (RankReport& rank : ranks) {
    rank.context.device = "cuda";
    rank.cuda_replay.reset();
    rank.cuda_run = GpuRunOf(rank);
  }
  return ranks;
}

const ReportTable* TableNamed(const ReportText& text, const std::string& id) {
  for (const ReportTable& table : text.tables) {
    if (table.id == id) return &table;
  }
  return nullptr;
}

TEST(GpuReport, TheAllocatorTableShowsPredictedAndMeasuredFigures) {
  const ReportText text = BuildReportText(ViewOf(GpuRanks()));
  const ReportTable* table = TableNamed(text, "gpu-allocator");
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->header, (std::vector<std::string>{"figure", "predicted",
                                                     "rank 0", "rank 1"}));
  std::map<std::string, std::vector<std::string>> rows;
  for (const auto& row : table->rows) rows[row[0]] = row;
  EXPECT_EQ(rows["allocated"],
            (std::vector<std::string>{"allocated", "30.0 MiB", "31.0 MiB",
                                      "31.0 MiB"}));
  EXPECT_EQ(rows["inactive split"][2], "3.00 MiB");
  EXPECT_EQ(rows["most reserved"][1], "38.0 MiB");
  EXPECT_EQ(rows["most reserved"][2], "40.0 MiB");
  const size_t marks = GpuRanks()[0].cuda_run->checks.size();
  EXPECT_EQ(rows["self-check (phase marks agreeing)"][2],
            std::to_string(marks) + " of " + std::to_string(marks));
  ASSERT_EQ(table->notes.size(), 2u);
  EXPECT_NE(table->notes[0].find("predicted 38.0 MiB (-5.0%)"),
            std::string::npos)
      << table->notes[0];
  EXPECT_NE(table->notes[0].find("equal the allocator's own"),
            std::string::npos);
  EXPECT_NE(table->notes[0].find("8.00 MiB"), std::string::npos);
}

TEST(GpuReport, ADisagreementWithTheAllocatorIsShownNotHidden) {
  std::vector<RankReport> ranks = GpuRanks();
  ranks[1].cuda_run->checks[2].allocator.allocated += 512;
  ranks[1].cuda_run->mismatches = 1;
  ranks[1].cuda_run->first_mismatch = "ALLOC at 0x10: no free block there";
  const ReportText text = BuildReportText(ViewOf(ranks));
  const ReportTable* table = TableNamed(text, "gpu-allocator");
  ASSERT_NE(table, nullptr);
  const std::string& note = table->notes[1];
  EXPECT_NE(note.find("DIFFER"), std::string::npos) << note;
  EXPECT_NE(note.find("1 phase marks"), std::string::npos) << note;
  EXPECT_NE(note.find("no free block there"), std::string::npos) << note;
  const size_t marks = ranks[1].cuda_run->checks.size();
  EXPECT_EQ(table->rows.back()[3],
            std::to_string(marks - 1) + " of " + std::to_string(marks));
}

TEST(GpuReport, TheOutsideTableHasOneRowPerMoment) {
  const ReportText text = BuildReportText(ViewOf(GpuRanks()));
  const ReportTable* table = TableNamed(text, "gpu-outside");
  ASSERT_NE(table, nullptr);
  ASSERT_EQ(table->rows.size(), 2u);
  EXPECT_EQ(table->rows[0],
            (std::vector<std::string>{"cuda_context", "600 MiB", "600 MiB"}));
  EXPECT_EQ(table->rows[1][1], "680 MiB");
  const std::string markdown = FormatReportMarkdown(text);
  EXPECT_NE(markdown.find("## On the GPU: memory outside the allocator"),
            std::string::npos);
}

TEST(GpuReport, ACpuRunHasNoGpuTablesChartOrCounters) {
  const RunView view = ViewOf(FixtureRanks());
  const ReportText text = BuildReportText(view);
  EXPECT_EQ(TableNamed(text, "gpu-allocator"), nullptr);
  EXPECT_EQ(TableNamed(text, "gpu-outside"), nullptr);
  EXPECT_EQ(FormatReportHtml(view, text).find("gpu-allocator-chart"),
            std::string::npos);
  EXPECT_EQ(ChromeTraceJson(view).dump().find("gpu allocator"),
            std::string::npos);
}

TEST(GpuReport, TheChartStacksTheAllocatorUpToReservedAtEachMark) {
  const RunView view = ViewOf(GpuRanks());
  const std::string html = FormatReportHtml(view, BuildReportText(view));
  const std::vector<Element> areas =
      WithClass(InChart(html, "gpu-allocator-rank-0"), "area");
  std::set<std::string> figures;
  for (const Element& area : areas) figures.insert(area.Get("data-figure"));
  EXPECT_EQ(figures, (std::set<std::string>{"allocated", "inactive_split",
                                            "free_segments"}));
}

TEST(GpuReport, TheTraceCarriesOneAllocatorCounterPerSelfCheck) {
  const std::vector<RankReport> ranks = GpuRanks();
  const nlohmann::ordered_json trace = ChromeTraceJson(ViewOf(ranks));
  int64_t counters = 0, last_allocated = -1;
  for (const auto& event : trace["traceEvents"]) {
    if (event["name"] != "gpu allocator" || event["pid"] != 1)
      continue;  // rank 0
    ++counters;
    const auto& args = event["args"];
    EXPECT_EQ(args["allocated"].get<int64_t>() +
                  args["inactive_split"].get<int64_t>() +
                  args["reserved_free"].get<int64_t>(),
              40 * kMiB);
    EXPECT_GT(args["allocated"].get<int64_t>(), last_allocated);
    last_allocated = args["allocated"].get<int64_t>();
  }
  EXPECT_EQ(counters, static_cast<int64_t>(ranks[0].cuda_run->checks.size()));
}

TEST(GpuReport, TheReaderKeepsEveryFigureOfAGpuRun) {
  const RankReport rank = GpuRanks()[0];
  RankReport with_oom = rank;
  with_oom.cuda_run->out_of_memory = true;
  with_oom.cuda_run->oom_requested_bytes = 64 * kMiB;
  with_oom.cuda_run->oom_device_free_bytes = kMiB;
  with_oom.cuda_run->at_out_of_memory = {1, 512, 2 * kMiB, 0};
  with_oom.cuda_run->memory_limit_bytes = 6LL << 30;
  const nlohmann::ordered_json written = ToJson(with_oom);
  const RankReport read = RankReportFromJson(written, "rank-0.json");
  ASSERT_TRUE(read.cuda_run.has_value());
  EXPECT_EQ(ToJson(read), written);
  EXPECT_EQ(read.cuda_run->checks.size(), rank.cuda_run->checks.size());
  EXPECT_EQ(read.cuda_run->at_out_of_memory.reserved, 2 * kMiB);
  EXPECT_EQ(read.context.config.train.device, "cpu");  // the fixture's config
}

TEST(GpuReport, ANegativeFigureIsRefusedByItsPath) {
  nlohmann::ordered_json doc = ToJson(GpuRanks()[0]);
  doc["cuda_run"]["checks"][1]["allocator"]["reserved_bytes"] = -1;
  try {
    RankReportFromJson(doc, "rank-0.json");
    FAIL() << "accepted a negative reserved_bytes";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "cuda_run.checks[1].allocator.reserved_bytes"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace memprof
