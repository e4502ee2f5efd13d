// The one reader of rank-<r>.json (RankReportFromJson): it reads back what
// the writer wrote, and `memprof report` and `memprof check` accept and
// refuse exactly the same rank reports, fed the same malformed corpus:
// every member of a one-rank report given the wrong type, a negative value
// or removed, one at a time. Whatever the reader accepts, every renderer
// renders.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/base/errors.h"
#include "profiler/base/json_reader.h"
#include "profiler/gate/gate_run.h"
#include "profiler/predict/fit.h"
#include "profiler/report/chrome_trace.h"
#include "profiler/report/rank_report.h"
#include "profiler/report/report_html.h"
#include "profiler/report/report_markdown.h"
#include "profiler/report/report_text.h"
#include "profiler/report/run_reports.h"
#include "profiler/report/summary.h"
#include "tests/input_error_of.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"
#include "tests/text_file.h"

namespace memprof {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const fs::path kFixture = MEMPROF_SOURCE_DIR "/tests/data/run-mlp-tiny-ws2";

// Rank 0 of the committed two-rank run as a run of its own.
Json OneRankReport() {
  Json doc = Json::parse(ReadFile(kFixture / "rank-0.json"));
  doc["context"]["world_size"] = 1;
  doc["context"]["config"]["ddp"]["world_size"] = 1;
  return doc;
}

// Calls `each` on every member (the first element of each array), with its
// JSON path.
void Visit(Json& node, const std::string& path,
           const std::function<void(Json&, const std::string&)>& each) {
  if (node.is_object()) {
    for (auto& [key, value] : node.items()) {
      const std::string where = path.empty() ? key : path + "." + key;
      each(value, where);
      Visit(value, where, each);
    }
  } else if (node.is_array() && !node.empty()) {
    each(node.front(), path + "[0]");
    Visit(node.front(), path + "[0]", each);
  }
}

// The variants: each member in turn replaced by each of a few wrong values.
std::vector<std::pair<std::string, Json>> MalformedCorpus() {
  const Json fixture = OneRankReport();
  std::vector<std::string> paths;
  Json copy = fixture;
  Visit(copy, "",
        [&](Json&, const std::string& where) { paths.push_back(where); });
  const Json replacements[] = {Json("x"), Json(-1), Json(nullptr),
                               Json::object(), Json(1.5)};
  std::vector<std::pair<std::string, Json>> corpus;
  for (size_t target = 0; target < paths.size(); ++target) {
    for (const Json& replacement : replacements) {
      Json doc = fixture;
      size_t i = 0;
      Visit(doc, "", [&](Json& node, const std::string&) {
        if (i++ == target) node = replacement;
      });
      corpus.emplace_back(paths[target] + " = " + replacement.dump(), doc);
    }
  }
  return corpus;
}

class Corpus : public TempDirTest {
 protected:
  void Write(const Json& doc) const {
    WriteFile(dir_ / "rank-0.json", doc.dump());
  }
  // What `memprof report --run` reads: LoadRunView keeps a rank or names
  // why not.
  bool ReportAccepts() const {
    try {
      return LoadRunView(dir_.string()).complete();
    } catch (const InputError&) {
      return false;
    }
  }
  // What `memprof check` and `memprof baseline` read: LoadRun.
  bool CheckAccepts() const {
    try {
      LoadRun(dir_.string());
      return true;
    } catch (const InputError&) {
      return false;
    }
  }
  // report, check against `baseline` and baseline, each on the run in
  // dir_: bad input, with `refusal` in the output.
  void ExpectEveryReaderRefuses(const std::string& baseline,
                                const std::string& refusal) const {
    for (const std::string command :
         {"report --run " + dir_.string(),
          "check --baseline " + baseline + " --run " + dir_.string(),
          "baseline --run " + dir_.string() + " --out " +
              (dir_ / "b2.json").string()}) {
      const CommandResult r = RunMemprof(command);
      EXPECT_EQ(r.exit_code, kExitBadInput) << command << "\n" << r.output;
      EXPECT_NE(r.output.find(refusal), std::string::npos) << command << "\n"
                                                           << r.output;
    }
  }
};

TEST(RankReportReader, ReadsBackWhatTheWriterWrote) {
  for (const char* name : {"rank-0.json", "rank-1.json"}) {
    const RankReport report = ReadRankReport((kFixture / name).string());
    const Json written = ToJson(report);
    const RankReport again = RankReportFromJson(written, "written");
    EXPECT_EQ(ToJson(again), written) << name;
  }
}

// context.cuda arrived in memprof.rank/1.1: a 1.0 report (the fixture)
// has none and reads as "not compiled"; a 1.1 one is read back and checked.
TEST(RankReportReader, ContextCudaIsReadSinceSchemaOnePointOne) {
  Json doc = OneRankReport();
  ASSERT_FALSE(doc["context"].contains("cuda"));
  EXPECT_FALSE(RankReportFromJson(doc, "r0.json").context.cuda.compiled);
  doc["context"]["cuda"] = {{"compiled", true},
                            {"available", true},
                            {"devices", 2},
                            {"status", "2 x GPU, 1024 MiB"}};
  const CudaContext cuda = RankReportFromJson(doc, "r0.json").context.cuda;
  EXPECT_TRUE(cuda.compiled);
  EXPECT_TRUE(cuda.available);
  EXPECT_EQ(cuda.devices, 2);
  EXPECT_EQ(cuda.status, "2 x GPU, 1024 MiB");
  EXPECT_EQ(ToJson(RankReportFromJson(doc, "r0.json"))["context"]["cuda"],
            doc["context"]["cuda"]);
  doc["context"]["cuda"]["devices"] = "two";
  EXPECT_NE(InputErrorOf([&] {
              RankReportFromJson(doc, "r0.json");
            }).find("r0.json: context.cuda.devices"),
            std::string::npos);
}

TEST(RankReportReader, CudaReplayIsReadSinceSchemaOnePointOne) {
  Json doc = OneRankReport();
  EXPECT_FALSE(RankReportFromJson(doc, "r0.json").cuda_replay.has_value());
  doc["cuda_replay"] = {
      {"requested_bytes", 1000},        {"allocated_bytes", 1024},
      {"reserved_bytes", 2097152},      {"inactive_split_bytes", 2096128},
      {"peak_reserved_bytes", 2097152}, {"segments", 1}};
  const RankReport report = RankReportFromJson(doc, "r0.json");
  ASSERT_TRUE(report.cuda_replay.has_value());
  EXPECT_EQ(report.cuda_replay->at_allocated_peak.allocated, 1024);
  EXPECT_EQ(ToJson(report)["cuda_replay"], doc["cuda_replay"]);
  doc["cuda_replay"]["reserved_bytes"] = -1;
  EXPECT_NE(InputErrorOf([&] {
              RankReportFromJson(doc, "r0.json");
            }).find("r0.json: cuda_replay.reserved_bytes"),
            std::string::npos);
}

// scopes arrived in memprof.rank/1.10: an earlier report has none; a
// scope with and one without a prediction read back as written.
TEST(RankReportReader, ScopesAreReadSinceSchemaOnePointTen) {
  Json doc = OneRankReport();
  ASSERT_FALSE(doc.contains("scopes"));
  EXPECT_TRUE(RankReportFromJson(doc, "r0.json").scopes.empty());
  RankReport report = RankReportFromJson(doc, "r0.json");
  report.scopes = {ScopeReport{"h.0", 4096, 512, 4096},
                   ScopeReport{"h.0.attn", 1024, 256, std::nullopt}};
  doc = ToJson(report);
  const RankReport again = RankReportFromJson(doc, "r0.json");
  ASSERT_EQ(again.scopes.size(), 2u);
  EXPECT_EQ(again.scopes[0].name, "h.0");
  EXPECT_EQ(again.scopes[0].activations_bytes, 4096);
  EXPECT_EQ(again.scopes[0].temporaries_peak_bytes, 512);
  EXPECT_EQ(again.scopes[0].predicted_activations_bytes, 4096);
  EXPECT_FALSE(again.scopes[1].predicted_activations_bytes.has_value());
  EXPECT_EQ(ToJson(again)["scopes"], doc["scopes"]);
  doc["scopes"][1]["activations_bytes"] = -1;
  EXPECT_NE(InputErrorOf([&] {
              RankReportFromJson(doc, "r0.json");
            }).find("r0.json: scopes[1].activations_bytes"),
            std::string::npos);
}

TEST(RankReportReader, ErrorsNameTheFileAndTheJsonPath) {
  Json doc = OneRankReport();
  doc["steps"][1]["breakdown"]["weights"] = -5;
  EXPECT_EQ(InputErrorOf([&] { RankReportFromJson(doc, "r0.json"); })
                .rfind("r0.json: steps[1].breakdown.weights: expected an "
                       "integer in [0, ",
                       0),
            0u);
  doc = OneRankReport();
  doc["steps"][1]["step"] = 7;
  EXPECT_NE(InputErrorOf([&] {
              RankReportFromJson(doc, "r0.json");
            }).find("steps[1].step: is 7, expected 2"),
            std::string::npos);
  doc = OneRankReport();
  doc["peak"]["total_bytes"] = 1;
  EXPECT_NE(InputErrorOf([&] {
              RankReportFromJson(doc, "r0.json");
            }).find("peak.total_bytes: is 1, but its breakdown sums to "),
            std::string::npos);
  doc = OneRankReport();
  doc["peak"]["phase"] = "lunch";
  EXPECT_NE(InputErrorOf([&] {
              RankReportFromJson(doc, "r0.json");
            }).find("peak.phase: unknown phase 'lunch'"),
            std::string::npos);
}

// A diverged run's loss is NaN, which JSON writes as null: read back as NaN
// (it failed a two-rank run's gathering: "steps[0].loss: expected a
// number, got null"), and written as null again.
TEST(RankReportReader, ANullLossIsReadAsNotANumber) {
  Json doc = OneRankReport();
  doc["steps"][1]["loss"] = nullptr;
  const RankReport report = RankReportFromJson(doc, "r0.json");
  EXPECT_TRUE(std::isnan(report.steps[1].loss));
  EXPECT_TRUE(Json::parse(ToJson(report).dump())["steps"][1]["loss"].is_null());
  doc["steps"][1]["loss"] = "1.5";
  EXPECT_NE(InputErrorOf([&] {
              RankReportFromJson(doc, "r0.json");
            }).find("steps[1].loss"),
            std::string::npos);
}

// A category's measured_bytes is its entry in peak.breakdown and never over
// its own peak_bytes: the fuzzer found a report, read, whose baseline the
// baseline reader refused (measured 5 B over a peak of 0).
TEST(RankReportReader, RefusesCategoryFiguresThePeakDoesNotHave) {
  Json doc = OneRankReport();
  ASSERT_NO_THROW(RankReportFromJson(doc, "r0.json"));
  doc["categories"]["optimizer_state"]["measured_bytes"] =
      doc["categories"]["optimizer_state"]["measured_bytes"].get<int64_t>() + 5;
  EXPECT_NE(InputErrorOf([&] {
              RankReportFromJson(doc, "r0.json");
            }).find("r0.json: categories.optimizer_state.measured_bytes: is "),
            std::string::npos);
  doc = OneRankReport();
  const int64_t at_peak =
      doc["categories"]["weights"]["measured_bytes"].get<int64_t>();
  ASSERT_GT(at_peak, 0);
  doc["categories"]["weights"]["peak_bytes"] = at_peak - 1;
  EXPECT_NE(InputErrorOf([&] { RankReportFromJson(doc, "r0.json"); })
                .find("categories.weights.measured_bytes: is " +
                      std::to_string(at_peak) +
                      ", over the category's own peak_bytes " +
                      std::to_string(at_peak - 1)),
            std::string::npos);
}

// Issue 35: a rank whose model alone did not fit stops before step 1 with
// no step; its report is read (since memprof.rank/1.8) and rendered, its
// figures not compared with a steady state it never reached; a report with
// no step and no cause is still refused.
TEST(RankReportReader, AReportWithNoStepIsReadWhenTheRankStoppedBeforeIt) {
  RankReport report = RankReportFromJson(OneRankReport(), "fixture");
  report.steps.clear();
  report.step_details.clear();
  report.timeline.clear();
  report.series = LiveSeries{};
  report.redundancy.clear();
  const std::string empty =
      InputErrorOf([&] { RankReportFromJson(ToJson(report), "rank-0.json"); });
  EXPECT_NE(empty.find("rank-0.json: steps: empty (no step ran), yet the rank "
                       "neither ran out of memory nor was killed"),
            std::string::npos)
      << empty;

  OutOfMemoryFigures oom;
  oom.limit_bytes = 30000;
  oom.requested_bytes = 16384;
  oom.live_bytes = 20480;
  oom.seq = 12;
  oom.phase = Phase::kModelInit;
  oom.breakdown[Index(Category::kWeights)] = 20480;
  oom.fit = Fit(report.context.config, oom.limit_bytes);
  report.out_of_memory = oom;
  const RankReport read = RankReportFromJson(ToJson(report), "rank-0.json");
  EXPECT_TRUE(read.steps.empty());
  const RunView view = RunViewOf("run", {read});
  const ReportText text = BuildReportText(view);
  const std::string markdown = FormatReportMarkdown(text);
  EXPECT_NE(markdown.find("stopped before step 1 (out of memory); no "
                          "steady-state step completed"),
            std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("| weights | 20.0 KiB |"), std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("model-state-overflow"), std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("| weights | 43.3 KiB | — | — |"), std::string::npos)
      << markdown;
  const std::string html = FormatReportHtml(view, text);
  EXPECT_NE(html.find("No steady-state step completed on this rank: it ran "
                      "out of memory before step 1 of 4"),
            std::string::npos);
  EXPECT_FALSE(ChromeTraceJson(view).dump().empty());
  EXPECT_FALSE(FormatSummaryTable({read}).empty());
}

TEST_F(Corpus, ReportAndCheckAcceptAndRefuseTheSameRankReports) {
  Write(OneRankReport());
  ASSERT_TRUE(ReportAccepts());
  ASSERT_TRUE(CheckAccepts());
  const auto corpus = MalformedCorpus();
  ASSERT_GT(corpus.size(), 500u);
  size_t refused = 0, accepted = 0;
  for (const auto& [what, doc] : corpus) {
    Write(doc);
    const bool report = ReportAccepts();
    ASSERT_EQ(report, CheckAccepts()) << what;
    ++(report ? accepted : refused);
    if (!report) continue;
    const std::vector<RankReport> ranks = LoadRunView(dir_.string()).ranks;
    try {
      const RunView view = RunViewOf("corpus", ranks);
      const ReportText text = BuildReportText(view);
      EXPECT_FALSE(FormatReportMarkdown(text).empty());
      EXPECT_FALSE(FormatReportHtml(view, text).empty());
      EXPECT_FALSE(ChromeTraceJson(view).dump().empty());
      EXPECT_FALSE(FormatSummaryTable(ranks).empty());
    } catch (const std::exception& e) {
      ADD_FAILURE() << what
                    << " passed the reader but broke a renderer: " << e.what();
    }
  }
  EXPECT_GT(refused, 0u);
  EXPECT_GT(accepted, 0u) << "a string where a string is: still accepted";
}

// The disagreement the one reader ended, end to end: a negative byte count
// was rendered by `memprof report` and refused by `memprof check`.
TEST_F(Corpus, BothCommandsRefuseANegativeByteCount) {
  Write(OneRankReport());
  const std::string baseline = (dir_ / "baseline.json").string();
  ASSERT_EQ(RunMemprof("baseline --run " + dir_.string() + " --out " + baseline)
                .exit_code,
            0);
  Json doc = OneRankReport();
  doc["categories"]["weights"]["measured_bytes"] = -1;
  Write(doc);
  for (const std::string command :
       {"report --run " + dir_.string(),
        "check --baseline " + baseline + " --run " + dir_.string()}) {
    const CommandResult r = RunMemprof(command);
    EXPECT_EQ(r.exit_code, kExitBadInput) << command << "\n" << r.output;
    EXPECT_NE(r.output.find("categories.weights.measured_bytes: expected an "
                            "integer in [0, "),
              std::string::npos)
        << command << "\n"
        << r.output;
  }
}

// `doc` with the string "DEEP" written as an array nested `depth` deep.
std::string WithDeepArray(const Json& doc, int depth) {
  std::string text = doc.dump();
  const size_t at = text.find("\"DEEP\"");
  return text.replace(at, 6, std::string(depth, '[') + std::string(depth, ']'));
}

// A 100,000-deep array in a known field crashed `report`, `check` and
// `baseline` (the stack ran out); the file is generated here, not kept.
TEST_F(Corpus, ADeeplyNestedFileIsRefusedByEveryReader) {
  Write(OneRankReport());
  const std::string baseline = (dir_ / "baseline.json").string();
  ASSERT_EQ(RunMemprof("baseline --run " + dir_.string() + " --out " + baseline)
                .exit_code,
            0);
  const std::string good_baseline = ReadFile(baseline);
  Json doc = OneRankReport();
  doc["context"]["config"]["train"] = "DEEP";
  WriteFile(dir_ / "rank-0.json", WithDeepArray(doc, 100000));
  ExpectEveryReaderRefuses(
      baseline, (dir_ / "rank-0.json").string() +
                    ": arrays and objects nested deeper than 32 levels; "
                    "memprof's files nest a few");
  Write(OneRankReport());
  Json deep_baseline = Json::parse(good_baseline);
  deep_baseline["context"]["config"]["train"] = "DEEP";
  WriteFile(baseline, WithDeepArray(deep_baseline, 100000));
  const CommandResult r =
      RunMemprof("check --baseline " + baseline + " --run " + dir_.string());
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.output;
  EXPECT_NE(r.output.find(baseline + ": arrays and objects nested deeper"),
            std::string::npos)
      << r.output;
  // As deep as the cap, it is an ordinary malformed value.
  doc["context"]["config"]["train"] = "DEEP";
  WriteFile(dir_ / "rank-0.json", WithDeepArray(doc, 28));
  EXPECT_EQ(RunMemprof("report --run " + dir_.string()).output.find("deeper"),
            std::string::npos);
}

// Binary data and a number of 100,000 digits: "not valid JSON", said in a
// line of its own size, whatever the text.
TEST_F(Corpus, BinaryDataAndHugeTokensAreNamedBriefly) {
  const std::string baseline = (dir_ / "baseline.json").string();
  Write(OneRankReport());
  for (const auto& [text, expected] :
       std::vector<std::pair<std::string, std::string>>{
           {std::string("{[[[") + std::string(8, '\0') + "]]]}",
            "not valid JSON: a NUL byte at byte 4 (binary data"},
           {"{\"schema\": " + std::string(100000, '9') + "}",
            "not valid JSON: number overflow parsing"}}) {
    WriteFile(baseline, text);
    const CommandResult r =
        RunMemprof("check --baseline " + baseline + " --run " + dir_.string());
    EXPECT_EQ(r.exit_code, kExitBadInput) << r.output;
    EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
    EXPECT_LT(r.output.size(), 1000u) << r.output;
  }
}

// Note [JSON members]: a member named twice is refused by its path, in a
// rank report by every reader and in a baseline by check.
TEST_F(Corpus, AMemberNamedTwiceIsRefusedByEveryReader) {
  Write(OneRankReport());
  const std::string baseline = (dir_ / "baseline.json").string();
  ASSERT_EQ(RunMemprof("baseline --run " + dir_.string() + " --out " + baseline)
                .exit_code,
            0);
  std::string text = OneRankReport().dump();
  const std::string categories = "\"categories\":{";
  ASSERT_NE(text.find(categories), std::string::npos);
  text.insert(text.find(categories) + categories.size(), "\"weights\":{},");
  WriteFile(dir_ / "rank-0.json", text);
  ExpectEveryReaderRefuses(baseline,
                           (dir_ / "rank-0.json").string() +
                               ": categories.weights: a member named twice");
  Write(OneRankReport());
  std::string twice = ReadFile(baseline);
  twice.insert(twice.find('{') + 1, "\"schema\": \"memprof.baseline/1\",");
  WriteFile(baseline, twice);
  const CommandResult r =
      RunMemprof("check --baseline " + baseline + " --run " + dir_.string());
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.output;
  EXPECT_NE(r.output.find(baseline + ": schema: a member named twice"),
            std::string::npos)
      << r.output;
}

// memprof's own allocation failing used to abort (exit 134, "terminate
// called after throwing an instance of 'std::bad_alloc'"): under a 100 MB
// address-space limit, 8 MiB of empty objects (about 200 MiB parsed) must
// end in exit 3 with a sentence.
TEST_F(Corpus, RunningOutOfMemoryItselfIsARunFailureThatSaysSo) {
  std::string text = OneRankReport().dump();
  text.pop_back();
  text += ",\"x\":[{}";
  for (int i = 0; i < (8 << 20) / 3; ++i) text += ",{}";
  WriteFile(dir_ / "rank-0.json", text + "]}");
  const CommandResult r =
      RunCommand("ulimit -v 100000; " + std::string(MEMPROF_BINARY) +
                 " report --run " + dir_.string());
  EXPECT_EQ(r.exit_code, kExitRunFailed) << r.output;
  EXPECT_NE(r.output.find("memprof: run failed: memprof itself ran out of "
                          "memory"),
            std::string::npos)
      << r.output;
}

// The cap leaves room: rank reports nest 4 levels, baselines 5.
TEST(RankReportReader, OwnFilesNestWellWithinTheDepthCap) {
  int deepest = 0;
  std::function<void(const Json&, int)> walk = [&](const Json& node,
                                                   int depth) {
    if (!node.is_structured()) return;
    deepest = std::max(deepest, depth + 1);
    for (const Json& child : node) walk(child, depth + 1);
  };
  walk(Json::parse(ReadFile(kFixture / "rank-0.json")), 0);
  EXPECT_EQ(deepest, 4);
  deepest = 0;
  walk(Json::parse(
           ReadFile(MEMPROF_SOURCE_DIR "/reports/baselines/mlp-tiny-ws2.json")),
       0);
  EXPECT_EQ(deepest, 5);
  EXPECT_LE(deepest, kMaxJsonDepth / 4);
}

}  // namespace
}  // namespace memprof
