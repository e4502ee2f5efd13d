// report.md (golden file), trace.json and `memprof report --run DIR` over the
// committed rank reports of a two-rank mlp-tiny run (tests/data/).
//
// To refresh the golden file after a deliberate change of report.md:
//   MEMPROF_UPDATE_GOLDEN=1 build/tests/memprof_unit_tests \
//     --gtest_filter='ReportMarkdown.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/base/category.h"
#include "profiler/base/effective_config.h"
#include "profiler/base/errors.h"
#include "profiler/report/chrome_trace.h"
#include "profiler/report/report_html.h"
#include "profiler/report/report_markdown.h"
#include "profiler/report/report_text.h"
#include "profiler/report/run_reports.h"
#include "profiler/report/summary.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"
#include "tests/text_file.h"

namespace memprof {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const fs::path kFixture = MEMPROF_SOURCE_DIR "/tests/data/run-mlp-tiny-ws2";

// A fresh copy of the fixture's rank reports, removed at the end.
class RunDir : public TempDirTest {
 protected:
  void SetUp() override {
    for (const char* name : {"rank-0.json", "rank-1.json"}) {
      fs::copy_file(kFixture / name, dir_ / name);
    }
  }

  CommandResult Report() const {
    return RunMemprof("report --run " + dir_.string());
  }
  bool Exists(const char* name) const { return fs::exists(dir_ / name); }
};

// ------------------------------------------------------------ report.md

TEST(ReportMarkdown, MatchesTheGoldenFile) {
  const RunView view = LoadRunView(kFixture.string());
  ASSERT_TRUE(view.complete());
  const std::string markdown = FormatReportMarkdown(BuildReportText(view));
  const fs::path golden = kFixture / "report.golden.md";
  if (std::getenv("MEMPROF_UPDATE_GOLDEN") != nullptr) {
    WriteFile(golden, markdown);
  }
  EXPECT_EQ(markdown, ReadFile(golden))
      << "report.md changed; if on purpose, refresh the golden file (see the "
         "top of this test)";
}

// The effective config leads the tables, each key with its origin; a
// report written before the origins were recorded says so.
TEST(ReportMarkdown, TheEffectiveConfigLeadsWithWhereEachValueCameFrom) {
  RunView view = LoadRunView(kFixture.string());
  const std::string before = FormatReportMarkdown(BuildReportText(view));
  EXPECT_NE(before.find("| mlp.hidden | 64 | not recorded |"),
            std::string::npos)
      << before;
  EXPECT_NE(before.find("before memprof recorded where each value came from"),
            std::string::npos);
  RunConfig& config = view.ranks.front().context.config;
  for (const ConfigEntry& entry : EffectiveConfig(config)) {
    config.origins[entry.key] = "default";
  }
  config.origins["mlp.hidden"] = "configs/mlp-tiny.ini:6";
  config.origins["train.steps"] = "--steps";
  const std::string after = FormatReportMarkdown(BuildReportText(view));
  const size_t table = after.find("## Effective config");
  ASSERT_NE(table, std::string::npos) << after;
  EXPECT_LT(table, after.find("## Memory by category"));
  EXPECT_NE(after.find("| mlp.hidden | 64 | configs/mlp-tiny.ini:6 |"),
            std::string::npos)
      << after;
  EXPECT_NE(after.find("| train.steps | 4 | --steps |"), std::string::npos);
  EXPECT_NE(after.find("| train.optimizer | adam | default |"),
            std::string::npos);
  EXPECT_EQ(after.find("not recorded"), std::string::npos);
  const std::string html = FormatReportHtml(view, BuildReportText(view));
  EXPECT_NE(html.find("configs/mlp-tiny.ini:6"), std::string::npos);
}

TEST(ReportMarkdown, ReadsInHumanUnitsInCategoryOrder) {
  const RunView view = LoadRunView(kFixture.string());
  const std::string markdown = FormatReportMarkdown(BuildReportText(view));
  // The categories table lists every category a float32 run can hold
  // once, in category order (weight_casts only under bf16-autocast).
  size_t at = markdown.find("## Memory by category");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(markdown.find("| weight_casts |"), std::string::npos);
  for (Category c : kAllCategories) {
    if (c == Category::kWeightCasts) continue;
    const size_t row =
        markdown.find("| " + std::string(CategoryName(c)) + " |", at);
    ASSERT_NE(row, std::string::npos) << CategoryName(c);
    at = row;
  }
  // Weights of mlp-tiny: 44,328 B = 43.3 KiB, on both ranks.
  const std::string weights_row =
      markdown.substr(markdown.find("| weights |"), 200);
  EXPECT_NE(weights_row.find("43.3 KiB"), std::string::npos) << weights_row;
  EXPECT_NE(markdown.find("bit-identical on all 2 ranks"), std::string::npos);
  EXPECT_NE(markdown.find("held in duplicate"), std::string::npos);
  EXPECT_NE(markdown.find("## Peak"), std::string::npos);
  EXPECT_NE(markdown.find("## Steps"), std::string::npos);
  EXPECT_EQ(markdown.find("Incomplete"), std::string::npos);
}

// Scopes add one "By scope" section to report.md and report.html, and
// change nothing else: without it the text is the golden file's.
TEST(ReportMarkdown, ScopesAddOnlyTheByScopeSection) {
  RunView view = LoadRunView(kFixture.string());
  view.ranks[0].scopes = {ScopeReport{"h.0", 3 << 20, 1 << 10, 3 << 20},
                          ScopeReport{"h.0.attn", 1 << 20, 512, std::nullopt}};
  view.ranks[1].scopes = {ScopeReport{"h.0", 3 << 20, 2 << 10, 3 << 20}};
  const std::string markdown = FormatReportMarkdown(BuildReportText(view));
  const size_t begin = markdown.find("## By scope");
  ASSERT_NE(begin, std::string::npos) << markdown;
  const size_t end = markdown.find("\n## ", begin + 1);
  const std::string section = markdown.substr(
      begin, end == std::string::npos ? std::string::npos : end + 1 - begin);
  EXPECT_NE(section.find("| h.0 | 3.00 MiB | 3.00 MiB | 1.00 KiB | 3.00 MiB | "
                         "2.00 KiB |"),
            std::string::npos)
      << section;
  EXPECT_NE(section.find("| h.0.attn | — | 1.00 MiB | 512 B | — | — |"),
            std::string::npos)
      << section;
  std::string without = markdown;
  without.erase(begin, section.size());
  while (without.size() >= 2 && without[without.size() - 2] == '\n') {
    without.pop_back();
  }
  EXPECT_EQ(without, ReadFile(kFixture / "report.golden.md"));
  const std::string html = FormatReportHtml(view, BuildReportText(view));
  EXPECT_NE(html.find("By scope"), std::string::npos);
  EXPECT_NE(html.find("h.0.attn"), std::string::npos);
}

// A program's own scopes have no prediction: the table has no predicted
// column rather than a blank one, and says why.
TEST(ReportMarkdown, ScopesWithoutPredictionHaveNoPredictedColumn) {
  RunView view = LoadRunView(kFixture.string());
  view.ranks[0].scopes = {ScopeReport{"block.1", 3 << 20, 1 << 10, {}}};
  view.ranks[1].scopes = {ScopeReport{"block.1", 3 << 20, 2 << 10, {}}};
  const std::string markdown = FormatReportMarkdown(BuildReportText(view));
  const size_t begin = markdown.find("## By scope");
  ASSERT_NE(begin, std::string::npos) << markdown;
  const std::string section = markdown.substr(begin, 1200);
  EXPECT_EQ(section.find("predicted activations"), std::string::npos)
      << section;
  EXPECT_NE(section.find("predicts the scopes of its own models only"),
            std::string::npos)
      << section;
  EXPECT_NE(section.find("| block.1 | 3.00 MiB | 1.00 KiB | 3.00 MiB | "
                         "2.00 KiB |"),
            std::string::npos)
      << section;
}

// ------------------------------------------------------------ trace.json

// Rank r is process r + 1 (Perfetto reads pid 0 as the kernel's), and no
// span has zero duration (Note [Trace processes]).
TEST(ChromeTrace, OneProcessPerRankWithPhaseSpansInMicroseconds) {
  const RunView view = LoadRunView(kFixture.string());
  const Json trace = Json::parse(ChromeTraceJson(view).dump());
  ASSERT_TRUE(trace["traceEvents"].is_array());
  std::map<int, std::string> names;
  std::map<int, int> phases;
  for (const Json& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid")) << e.dump();
    EXPECT_GE(e["pid"].get<int>(), 1) << e.dump();
    if (e["ph"] == "X") EXPECT_GT(e["dur"].get<double>(), 0) << e.dump();
    if (e["ph"] == "M" && e["name"] == "process_name") {
      names[e["pid"].get<int>()] = e["args"]["name"];
    }
    if (e["ph"] == "X" && e["cat"] == "phase") {
      ++phases[e["pid"].get<int>()];
      EXPECT_GE(e["dur"].get<double>(), 0);
      EXPECT_GE(e["ts"].get<double>(), 0);
    }
  }
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[1].rfind("rank 0", 0), 0u) << names[1];
  EXPECT_EQ(names[2].rfind("rank 1", 0), 0u) << names[2];
  for (const RankReport& rank : view.ranks) {
    const int r = rank.context.rank;
    int timed = 0;
    for (const TimelineSegment& segment : rank.timeline) {
      timed += segment.end_us > segment.begin_us;
    }
    EXPECT_EQ(phases[r + 1], timed);
    EXPECT_GE(timed, static_cast<int>(rank.timeline.size()) - 2);
    // The last phase ends at the session's length, in microseconds.
    EXPECT_GT(rank.timeline.back().end_us, 1000) << "under a millisecond?";
  }
}

TEST(ChromeTrace, CounterTracksCarryTheRankReportsFiguresAtTheSamePoints) {
  const RunView view = LoadRunView(kFixture.string());
  const Json trace = ChromeTraceJson(view);
  // Counter values by (rank, track), in file order.
  std::map<std::pair<int, std::string>, std::vector<int64_t>> tracks;
  std::map<std::pair<int, std::string>, std::vector<double>> times;
  for (const Json& e : trace["traceEvents"]) {
    if (e["ph"] != "C") continue;
    const auto key =
        std::make_pair(e["pid"].get<int>(), e["name"].get<std::string>());
    tracks[key].push_back(e["args"]["bytes"].get<int64_t>());
    times[key].push_back(e["ts"].get<double>());
  }
  for (const RankReport& rank : view.ranks) {
    const int r = rank.context.rank;
    const std::vector<TimelineSegment>& timeline = rank.timeline;
    // float32: no weight_casts track.
    EXPECT_EQ(tracks.count(std::make_pair(r + 1, std::string("weight_casts"))),
              0u);
    for (Category c : kAllCategories) {
      if (c == Category::kWeightCasts) continue;
      const std::string name(CategoryName(c));
      std::vector<int64_t> expected;
      for (const TimelineSegment& segment : timeline) {
        expected.push_back(segment.begin_bytes[Index(c)]);
        if (segment.peak_seq >= 0) {
          expected.push_back(segment.peak_breakdown[Index(c)]);
        }
      }
      expected.push_back(timeline.back().end_bytes[Index(c)]);
      EXPECT_EQ(tracks[std::make_pair(r + 1, name)], expected)
          << "rank " << r << " " << name;
      const std::vector<double>& ts = times[std::make_pair(r + 1, name)];
      for (size_t i = 1; i < ts.size(); ++i) EXPECT_LE(ts[i - 1], ts[i]);
    }
    // The steady-state peak is one of the points of the total track.
    const std::vector<int64_t>& total =
        tracks[std::make_pair(r + 1, std::string("total"))];
    EXPECT_NE(std::find(total.begin(), total.end(), rank.peak.total_bytes),
              total.end())
        << "rank " << r;
  }
}

// ------------------------------------------------------- memprof report

TEST_F(RunDir, ReportRendersTheThreeFilesFromRankReportsAlone) {
  const CommandResult r = Report();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* name : {"report.md", "report.html", "trace.json"}) {
    EXPECT_TRUE(Exists(name)) << name;
  }
  EXPECT_EQ(ReadFile(dir_ / "report.md"),
            ReadFile(kFixture / "report.golden.md"));
  EXPECT_NO_THROW(Json::parse(ReadFile(dir_ / "trace.json")));
  const std::string html = ReadFile(dir_ / "report.html");
  EXPECT_NE(html.find("id=\"predicted-vs-measured\""), std::string::npos);
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos)
        << "left behind: " << entry.path();
  }
}

TEST_F(RunDir, MissingRankIsNamedExitsTwoAndTheRestIsRenderedIncomplete) {
  fs::remove(dir_ / "rank-1.json");
  const CommandResult r = Report();
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.output;
  EXPECT_NE(
      r.output.find("rank 1: " + (dir_ / "rank-1.json").string() + ": missing"),
      std::string::npos)
      << r.output;
  const std::string markdown = ReadFile(dir_ / "report.md");
  EXPECT_NE(markdown.find("**Incomplete:**"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("rank 1 is left out"), std::string::npos);
  EXPECT_NE(markdown.find("| rank 0 |"), std::string::npos);
  EXPECT_EQ(markdown.find("| rank 1 |"), std::string::npos);
  EXPECT_NE(ReadFile(dir_ / "report.html").find("id=\"incomplete\""),
            std::string::npos);
  EXPECT_EQ(Json::parse(ReadFile(dir_ / "trace.json"))["otherData"]["complete"],
            false);
}

// A rank report of another run is left out, named, as a missing one is:
// its figures would be drawn under this run's header.
TEST_F(RunDir, ARankReportOfAnotherRunIsLeftOut) {
  Json other = Json::parse(ReadFile(dir_ / "rank-1.json"));
  other["context"]["config"]["mlp"]["hidden"] = 65;
  WriteFile(dir_ / "rank-1.json", other.dump());
  const CommandResult r = Report();
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.output;
  EXPECT_NE(r.output.find("rank 1: " + (dir_ / "rank-1.json").string() +
                          ": its context (config, device, libtorch, "
                          "parameters) differs from " +
                          (dir_ / "rank-0.json").string() +
                          "'s: the directory mixes runs"),
            std::string::npos)
      << r.output;
  const std::string markdown = ReadFile(dir_ / "report.md");
  EXPECT_NE(markdown.find("rank 1 is left out"), std::string::npos);
  EXPECT_EQ(markdown.find("| rank 1 |"), std::string::npos);
}

TEST_F(RunDir, MalformedRankIsNamedWithWhy) {
  WriteFile(dir_ / "rank-1.json", "{\"schema\": \"memprof.rank/1\", ");
  CommandResult r = Report();
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.output;
  EXPECT_NE(r.output.find("rank-1.json: the file ends early (truncated?)"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(Exists("report.md"));

  Json doc = Json::parse(ReadFile(kFixture / "rank-1.json"));
  doc["peak"].erase("breakdown");
  WriteFile(dir_ / "rank-1.json", doc.dump());
  r = Report();
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.output;
  EXPECT_NE(r.output.find("rank-1.json: peak: missing 'breakdown'"),
            std::string::npos)
      << r.output;
}

TEST_F(RunDir, AnotherMajorSchemaVersionIsRejectedByName) {
  Json doc = Json::parse(ReadFile(kFixture / "rank-0.json"));
  doc["schema"] = "memprof.rank/2";
  WriteFile(dir_ / "rank-0.json", doc.dump());
  const CommandResult r = Report();
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.output;
  EXPECT_NE(r.output.find("major version 2 of memprof.rank"), std::string::npos)
      << r.output;
  // A minor version only adds fields: accepted.
  doc["schema"] = "memprof.rank/1.1";
  doc["a_field_of_a_later_minor"] = 1;
  WriteFile(dir_ / "rank-0.json", doc.dump());
  EXPECT_EQ(Report().exit_code, 0);
}

TEST_F(RunDir, NoUsableRankWritesNothing) {
  fs::remove(dir_ / "rank-1.json");
  WriteFile(dir_ / "rank-0.json", "not json");
  CommandResult r = Report();
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.output;
  EXPECT_NE(r.output.find("no usable rank report"), std::string::npos)
      << r.output;
  EXPECT_FALSE(Exists("report.md"));
  fs::remove(dir_ / "rank-0.json");
  r = Report();
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.output;
  EXPECT_NE(r.output.find("no rank-<r>.json"), std::string::npos) << r.output;
  r = RunMemprof("report --run " + (dir_ / "absent").string());
  EXPECT_EQ(r.exit_code, kExitBadInput);
  EXPECT_NE(r.output.find("no such directory"), std::string::npos) << r.output;
  r = RunMemprof("report");
  EXPECT_EQ(r.exit_code, kExitBadInput);
  EXPECT_NE(r.output.find("--run DIR is required"), std::string::npos)
      << r.output;
}

// Note [Categories a run can fill]: the console summary has no row for a
// category the run's config cannot fill, unless a rank holds bytes in it.
TEST(ReportFiles, SummaryTableShowsTheCategoriesTheRunCanFill) {
  const RunView view = LoadRunView(kFixture.string());
  auto has_row = [](const std::string& text, const std::string& name) {
    return text.find("\n" + name + " ") != std::string::npos;
  };
  const std::string fp32 = FormatSummaryTable(view.ranks);
  EXPECT_FALSE(has_row(fp32, "weight_casts")) << fp32;
  EXPECT_EQ(fp32.find(" \n"), std::string::npos) << "a trailing space";
  EXPECT_TRUE(has_row(fp32, "ddp_buckets")) << fp32;

  std::vector<RankReport> ranks = view.ranks;
  for (RankReport& rank : ranks) {
    rank.context.config.ddp.gradient_as_bucket_view = true;
  }
  // The buckets hold bytes in these reports: shown all the same.
  EXPECT_TRUE(has_row(FormatSummaryTable(ranks), "ddp_buckets"));
  for (RankReport& rank : ranks) {
    CategoryFigures& buckets = rank.categories[Index(Category::kDdpBuckets)];
    buckets = CategoryFigures{};
  }
  const std::string view_buckets = FormatSummaryTable(ranks);
  EXPECT_FALSE(has_row(view_buckets, "ddp_buckets")) << view_buckets;
}

}  // namespace
}  // namespace memprof
