// The baseline and rank-report parsers: round trips, and every malformed,
// truncated or wrong-schema input an InputError naming the file and the
// reason, never a crash or a pass.
#include "profiler/gate/baseline.h"

#include <fstream>
#include <functional>
#include <sstream>

#include <gtest/gtest.h>

#include "profiler/base/errors.h"
#include "tests/gate/synthetic_run.h"
#include "tests/input_error_of.h"
#include "tests/text_file.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kSeedReport =
    MEMPROF_SOURCE_DIR "/fuzz/seeds/rank-0.json";

std::string BaselineError(const Json& doc) {
  return InputErrorOf([&] { ParseBaseline(doc.dump(), "b.json"); });
}

// A rank report's figures as the gate reads them: the one reader, then the
// figures the gate compares.
RankReportFigures ReadFigures(const std::string& text,
                              const std::string& origin) {
  return FiguresOf(ParseRankReport(text, origin), origin);
}

Json ValidBaseline() { return BaselineToJson(SyntheticBaseline(2, 11082)); }

TEST(Baseline, RoundTripsEveryFigureAndTolerance) {
  Baseline baseline = SyntheticBaseline(2, 11082);
  baseline.run.ranks[1].peak_bytes[Index(Category::kActivations)] += 7;
  baseline.tolerances["activations"] = ParseTolerance("2%");
  baseline.tolerances["temporaries"] = ParseTolerance("4096");
  baseline.tolerances["peak"] = Tolerance{0.5, 100};
  const Baseline again =
      ParseBaseline(BaselineToJson(baseline).dump(2), "b.json");
  EXPECT_TRUE(SameFigures(baseline.run, again.run));
  EXPECT_EQ(again.run.context.config, baseline.run.context.config);
  EXPECT_EQ(again.run.context.world_size, 2);
  EXPECT_EQ(again.run.context.parameters, 11082);
  ASSERT_EQ(again.tolerances.size(), 3u);
  EXPECT_EQ(again.tolerances.at("activations").percent, 2.0);
  EXPECT_EQ(again.tolerances.at("temporaries").bytes, 4096);
  EXPECT_EQ(again.tolerances.at("peak").percent, 0.5);
  EXPECT_EQ(again.tolerances.at("peak").bytes, 100);
  const Json written = BaselineToJson(baseline);
  EXPECT_EQ(written["schema"], "memprof.baseline/1");
  EXPECT_EQ(written["tolerances"]["activations"], "2%");
  EXPECT_EQ(written["tolerances"]["temporaries"], 4096);
}

TEST(Baseline, ReadsTheFiguresOfARealRankReport) {
  const std::string text = ReadFile(kSeedReport);
  ASSERT_FALSE(text.empty()) << kSeedReport;
  const Json raw = Json::parse(text);
  const RankReportFigures read = ReadFigures(text, kSeedReport);
  EXPECT_EQ(read.figures.rank, raw["context"]["rank"].get<int>());
  EXPECT_EQ(read.context.world_size, raw["context"]["world_size"].get<int>());
  EXPECT_EQ(read.context.parameters, raw["parameters"].get<int64_t>());
  EXPECT_EQ(read.context.dtype, raw["context"]["config"]["train"]["dtype"]);
  for (Category c : kAllCategories) {
    const std::string name(CategoryName(c));
    if (!raw["categories"].contains(name)) {
      // A category added after the file was written reads as 0.
      EXPECT_TRUE(IsLaterCategory(c)) << name;
      EXPECT_EQ(read.figures.measured_bytes[Index(c)], 0) << name;
      EXPECT_EQ(read.figures.peak_bytes[Index(c)], 0) << name;
      continue;
    }
    const Json& entry = raw["categories"][name];
    EXPECT_EQ(read.figures.measured_bytes[Index(c)],
              entry["measured_bytes"].get<int64_t>());
    EXPECT_EQ(read.figures.peak_bytes[Index(c)],
              entry["peak_bytes"].get<int64_t>());
  }
  EXPECT_EQ(read.figures.peak_total_bytes,
            raw["peak"]["total_bytes"].get<int64_t>());
}

TEST(Baseline, EveryTruncationIsRefusedAsTruncated) {
  const std::string text = ValidBaseline().dump(2);
  for (size_t n = 0; n < text.size(); ++n) {
    const std::string message =
        InputErrorOf([&] { ParseBaseline(text.substr(0, n), "cut.json"); });
    ASSERT_EQ(message.rfind("cut.json: ", 0), 0u) << n << ": " << message;
    ASSERT_NE(message.find("truncated"), std::string::npos)
        << n << ": " << message;
  }
}

TEST(Baseline, EveryTruncatedRankReportIsRefused) {
  const std::string text = Json::parse(ReadFile(kSeedReport)).dump();
  ASSERT_GT(text.size(), 100u);
  // Every prefix would take a while on 24 KiB; every 7th byte and the tail.
  for (size_t n = 0; n < text.size(); n += (n + 64 > text.size() ? 1 : 7)) {
    const std::string message =
        InputErrorOf([&] { ReadFigures(text.substr(0, n), "rank-0.json"); });
    ASSERT_EQ(message.rfind("rank-0.json: ", 0), 0u) << n << ": " << message;
  }
}

TEST(Baseline, NotJsonOrNotAnObjectIsNamed) {
  EXPECT_NE(InputErrorOf([] {
              ParseBaseline("hello", "b.json");
            }).find("b.json: not valid JSON"),
            std::string::npos);
  EXPECT_NE(InputErrorOf([] { ParseBaseline("", "b.json"); }).find("truncated"),
            std::string::npos);
  EXPECT_NE(InputErrorOf([] {
              ParseBaseline("[1, 2]", "b.json");
            }).find("expected a JSON object, got an array"),
            std::string::npos);
  EXPECT_NE(InputErrorOf([] {
              ParseBaseline("{} trailing", "b.json");
            }).find("not valid JSON"),
            std::string::npos);
  // Found by the fuzzer (fuzz/reports_fuzzer.cc): nlohmann reports this as
  // out_of_range.
  EXPECT_NE(InputErrorOf([] {
              ParseBaseline("111844e67431", "b.json");
            }).find("b.json: not valid JSON: number overflow"),
            std::string::npos);
  EXPECT_NE(InputErrorOf([] {
              ReadFigures(R"({"schema": 1e400})", "r.json");
            }).find("r.json: not valid JSON: number overflow"),
            std::string::npos);
}

TEST(Baseline, WrongSchemasAreNamedWithTheRemedy) {
  Json doc = ValidBaseline();
  doc.erase("schema");
  EXPECT_NE(BaselineError(doc).find("b.json: missing 'schema'"),
            std::string::npos);
  doc["schema"] = "memprof.rank/1";
  std::string message = BaselineError(doc);
  EXPECT_NE(message.find("this is a rank report"), std::string::npos)
      << message;
  EXPECT_NE(message.find("memprof baseline --run DIR --out BASELINE.json"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("--out b.json"), std::string::npos)
      << "advises overwriting the file it read: " << message;
  doc["schema"] = "memprof.baseline/2";
  EXPECT_NE(BaselineError(doc).find("major version 2 of memprof.baseline"),
            std::string::npos);
  doc["schema"] = 1;
  EXPECT_NE(BaselineError(doc).find("schema: expected a string"),
            std::string::npos);
  const std::string baseline_text = ValidBaseline().dump();
  message = InputErrorOf([&] { ReadFigures(baseline_text, "rank-0.json"); });
  EXPECT_NE(message.find("this is a baseline"), std::string::npos) << message;
}

TEST(Baseline, BadFiguresAreNamedByTheirPath) {
  const std::string where = "ranks[1].categories.weights.measured_bytes";
  const std::pair<Json, std::string> cases[] = {
      {-1, "expected an integer in [0, 9223372036854775807], got -1"},
      {1.5, "got the fraction 1.5"},
      {"44328", "got '44328'"},
      {nullptr, "got null"},
      {Json::array(), "got an array"},
      {18446744073709551615ull, "got 18446744073709551615"},
  };
  for (const auto& [value, reason] : cases) {
    Json doc = ValidBaseline();
    doc["ranks"][1]["categories"]["weights"]["measured_bytes"] = value;
    const std::string message = BaselineError(doc);
    EXPECT_EQ(message.rfind("b.json: " + where + ": expected an integer", 0),
              0u)
        << message;
    EXPECT_NE(message.find(reason), std::string::npos) << message;
  }
  Json doc = ValidBaseline();
  doc["ranks"][0]["categories"].erase("ddp_buckets");
  EXPECT_NE(
      BaselineError(doc).find("ranks[0].categories: missing 'ddp_buckets'"),
      std::string::npos);
  doc = ValidBaseline();
  doc["ranks"][0]["peak"].erase("total_bytes");
  EXPECT_NE(BaselineError(doc).find("ranks[0].peak: missing 'total_bytes'"),
            std::string::npos);
}

TEST(Baseline, RanksMustMatchTheWorldSizeInOrder) {
  Json doc = ValidBaseline();
  doc["ranks"].erase(1);
  EXPECT_NE(
      BaselineError(doc).find("ranks: 1 entries for context.world_size 2"),
      std::string::npos);
  doc = ValidBaseline();
  std::swap(doc["ranks"][0], doc["ranks"][1]);
  EXPECT_NE(BaselineError(doc).find("ranks[0].rank: is 1, expected 0"),
            std::string::npos);
  doc = ValidBaseline();
  doc["context"]["world_size"] = 0;
  const std::string message = BaselineError(doc);
  EXPECT_NE(message.find("context.world_size: expected an integer in [1, "),
            std::string::npos)
      << message;
}

TEST(Baseline, TolerancesAreCheckedByKeyAndValue) {
  Json doc = ValidBaseline();
  doc["tolerances"] = {{"activation", "2%"}};
  std::string message = BaselineError(doc);
  EXPECT_NE(message.find("tolerances.activation: unknown tolerance key"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("activations"), std::string::npos) << message;
  for (const Json& bad : {Json("2 %"), Json("-1"), Json(-5), Json(true),
                          Json{{"percent", -1}}, Json{{"bytes", 1.5}}}) {
    doc["tolerances"] = {{"activations", bad}};
    message = BaselineError(doc);
    EXPECT_NE(message.find("b.json: tolerances.activations"), std::string::npos)
        << bad.dump() << ": " << message;
  }
  doc.erase("tolerances");  // optional
  EXPECT_TRUE(ParseBaseline(doc.dump(), "b.json").tolerances.empty());
}

TEST(Baseline, ConfigDeeperThanSectionKeyIsRefused) {
  Json doc = ValidBaseline();
  doc["context"]["config"]["mlp"]["hidden"] = {{"deeper", 1}};
  EXPECT_NE(BaselineError(doc).find("context.config.mlp.hidden: expected a "
                                    "value, got an object"),
            std::string::npos);
  doc = ValidBaseline();
  doc["context"]["config"]["layers"] = Json::array({1, 2});
  EXPECT_NE(BaselineError(doc).find("context.config.layers"),
            std::string::npos);
}

TEST(Baseline, DeepNestingIsAnErrorNotAStackOverflow) {
  const std::string deep =
      "{\"schema\": \"memprof.baseline/1\", \"context\": " +
      std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_NE(InputErrorOf([&] { ParseBaseline(deep, "deep.json"); })
                .find("deep.json: arrays and objects nested deeper than 32 "
                      "levels"),
            std::string::npos);
}

TEST(Baseline, RankReportRanksMustLieInTheWorld) {
  Json doc = Json::parse(ReadFile(kSeedReport));
  doc["context"]["world_size"] = 0;
  EXPECT_NE(InputErrorOf([&] {
              ReadFigures(doc.dump(), "r.json");
            }).find("r.json: context.world_size: expected an integer in [1, "),
            std::string::npos);
  doc["context"]["world_size"] = 2;
  doc["context"]["rank"] = 2;
  EXPECT_NE(InputErrorOf([&] { ReadFigures(doc.dump(), "r.json"); })
                .find("r.json: context.rank: expected an integer in [0, 1], "
                      "got 2"),
            std::string::npos);
}

TEST(Baseline, RankReportOfANoHookRunIsRefused) {
  Json doc = Json::parse(ReadFile(kSeedReport));
  doc["hook"]["installed"] = false;
  EXPECT_NE(InputErrorOf([&] {
              ReadFigures(doc.dump(), "r.json");
            }).find("r.json: hook.installed: false: a --no-hook run"),
            std::string::npos);
  doc.erase("hook");
  EXPECT_NE(InputErrorOf([&] {
              ReadFigures(doc.dump(), "r.json");
            }).find("r.json: missing 'hook'"),
            std::string::npos);
}

RankReportFigures Report(int rank, int world_size) {
  RankReportFigures report;
  report.context = SyntheticRun(world_size, 100).context;
  report.figures = SyntheticRun(world_size, 100).ranks[rank];
  return report;
}

TEST(Baseline, CombineNeedsEveryRankOnceFromOneRun) {
  const RunFigures run =
      CombineRankReports({Report(1, 2), Report(0, 2)}, {"r1", "r0"});
  ASSERT_EQ(run.ranks.size(), 2u);
  EXPECT_EQ(run.ranks[0].rank, 0);
  EXPECT_EQ(run.ranks[1].rank, 1);
  EXPECT_NE(InputErrorOf([] {
              CombineRankReports({Report(0, 2)}, {"r0"});
            }).find("no report for rank 1 of 2"),
            std::string::npos);
  EXPECT_NE(InputErrorOf([] {
              CombineRankReports({Report(0, 2), Report(0, 2)}, {"a", "b"});
            }).find("b: rank 0 also in a"),
            std::string::npos);
  EXPECT_NE(InputErrorOf([] {
              CombineRankReports({Report(0, 2), Report(1, 3)}, {"a", "b"});
            }).find("b: world_size 3 differs from 2"),
            std::string::npos);
  RankReportFigures other = Report(1, 2);
  other.context.config["mlp"]["hidden"] = 65;
  EXPECT_NE(InputErrorOf([&] {
              CombineRankReports({Report(0, 2), other}, {"a", "b"});
            }).find("the directory mixes runs"),
            std::string::npos);
}

}  // namespace
}  // namespace memprof
