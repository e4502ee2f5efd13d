// The check's arithmetic and policy on synthetic figures: tolerances and
// their precedence, verdicts at the boundaries, context mismatches, and the
// table, Markdown and JSON it writes.
#include "profiler/gate/regression_check.h"

#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include <gtest/gtest.h>

#include "profiler/base/errors.h"
#include "profiler/gate/baseline_search.h"
#include "tests/gate/synthetic_run.h"
#include "tests/input_error_of.h"
#include "tests/temp_dir.h"

namespace memprof {
namespace {

constexpr int64_t kP = 11082;

const FigureCheck& Find(const CheckReport& report, const std::string& key,
                        const std::string& figure, int rank) {
  for (const FigureCheck& f : report.figures) {
    if (f.key == key && f.figure == figure && f.rank == rank) return f;
  }
  ADD_FAILURE() << "no row " << key << " " << figure << " " << rank;
  static const FigureCheck none;
  return none;
}

CheckReport Compare(const Baseline& baseline, const RunFigures& now,
                    const ToleranceSettings& settings = {},
                    bool allow_config_change = false) {
  return CompareWithBaseline(baseline, "base.json", now, "out/run", settings,
                             allow_config_change);
}

TEST(Tolerance, ParsesPercentagesAndBytes) {
  EXPECT_EQ(ParseTolerance("2%").percent, 2.0);
  EXPECT_EQ(ParseTolerance("0.5%").percent, 0.5);
  EXPECT_EQ(ParseTolerance("4096").bytes, 4096);
  EXPECT_EQ(ParseTolerance("4096").percent, 0);
  for (const char* bad : {"", "%", "2 %", "-1", "-1%", "1e3%", "abc", "0x10",
                          "4KiB", "99999999999999999999", "inf%", "nan%"}) {
    EXPECT_THROW(ParseTolerance(bad), InputError) << bad;
  }
  for (const char* text : {"2%", "0.5%", "1.1%", "4096", "0"}) {
    EXPECT_EQ(FormatTolerance(ParseTolerance(text)), text);
  }
  for (const char* negative : {"-1", "-1%"}) {
    try {
      ParseTolerance(negative);
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(
                    "is negative: a tolerance is the growth allowed"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Tolerance, AllowedBytesIsTheLargerPartAndSaturates) {
  EXPECT_EQ(AllowedBytes(Tolerance{1, 0}, 255512), 2555);
  EXPECT_EQ(AllowedBytes(Tolerance{1, 4096}, 255512), 4096);
  EXPECT_EQ(AllowedBytes(Tolerance{0, 0}, 255512), 0);
  EXPECT_EQ(AllowedBytes(Tolerance{1e300, 0}, 1000),
            std::numeric_limits<int64_t>::max());
}

TEST(Tolerance, DefaultsAreExactForModelStateAndOnePercentElsewhere) {
  for (const char* exact : {"weights", "gradients", "optimizer_state",
                            "ddp_buckets", "inputs", "unattributed"}) {
    EXPECT_EQ(DefaultTolerance(exact).percent, 0) << exact;
    EXPECT_EQ(DefaultTolerance(exact).bytes, 0) << exact;
  }
  for (const char* relative : {"activations", "temporaries", "peak"}) {
    EXPECT_EQ(DefaultTolerance(relative).percent, 1.0) << relative;
  }
  EXPECT_EQ(ToleranceKeys().size(), static_cast<size_t>(kNumCategories) + 1);
}

TEST(Tolerance, PrecedenceIsKeyFlagThenBaselineThenBareFlagThenDefault) {
  ToleranceSettings cli;
  cli.percent = 3;
  cli.bytes = 100;
  std::map<std::string, Tolerance> file = {{"temporaries", {5, 0}},
                                           {"activations", {7, 0}}};
  cli.per_key["activations"] = Tolerance{0, 64};
  const auto resolved = ResolveTolerances(cli, file);
  EXPECT_EQ(resolved.at("activations").bytes, 64);  // key flag
  EXPECT_EQ(resolved.at("activations").percent, 0);
  EXPECT_EQ(resolved.at("temporaries").percent, 5);  // baseline
  EXPECT_EQ(resolved.at("peak").percent, 3);         // bare flag
  EXPECT_EQ(resolved.at("peak").bytes, 100);
  EXPECT_EQ(resolved.at("weights").percent, 0);  // never loosened by a bare
  EXPECT_EQ(resolved.at("weights").bytes, 0);
  EXPECT_EQ(resolved.size(), ToleranceKeys().size());
}

TEST(RegressionCheck, TheSameFiguresPass) {
  const Baseline baseline = SyntheticBaseline(2, kP);
  const CheckReport report = Compare(baseline, baseline.run);
  EXPECT_EQ(report.regressed, 0);
  EXPECT_EQ(report.improved, 0);
  // The categories a float32 run can hold (all but weight_casts) x 2
  // figures + the total, per rank.
  EXPECT_EQ(report.figures.size(), 2u * (2 * (kNumCategories - 1) + 1));
  EXPECT_EQ(CheckExitCode(report, /*strict=*/true), 0);
}

TEST(RegressionCheck, OneByteOfModelStateFailsAndOneByteLessImproves) {
  const Baseline baseline = SyntheticBaseline(2, kP);
  RunFigures now = baseline.run;
  now.ranks[1].measured_bytes[Index(Category::kOptimizerState)] += 1;
  now.ranks[0].peak_bytes[Index(Category::kWeights)] -= 1;
  const CheckReport report = Compare(baseline, now);
  const FigureCheck& grew =
      Find(report, "optimizer_state", "measured_bytes", 1);
  EXPECT_EQ(grew.verdict, Verdict::kRegressed);
  EXPECT_EQ(grew.delta_bytes, 1);
  EXPECT_EQ(grew.baseline_bytes, 8 * kP);
  const FigureCheck& shrank = Find(report, "weights", "peak_bytes", 0);
  EXPECT_EQ(shrank.verdict, Verdict::kImproved);
  EXPECT_EQ(shrank.delta_bytes, -1);
  EXPECT_EQ(report.regressed, 1);
  EXPECT_EQ(report.improved, 1);
  EXPECT_EQ(CheckExitCode(report, false), kExitCheckFailed);

  RunFigures better = baseline.run;
  better.ranks[0].peak_bytes[Index(Category::kWeights)] -= 1;
  const CheckReport improved = Compare(baseline, better);
  EXPECT_EQ(CheckExitCode(improved, /*strict=*/false), kExitOk);
  EXPECT_EQ(CheckExitCode(improved, /*strict=*/true), kExitCheckFailed);
}

TEST(RegressionCheck, OnePercentIsTheBoundaryForActivationsAndPeak) {
  const Baseline baseline = SyntheticBaseline(1, kP);
  const int a = Index(Category::kActivations);
  const int64_t base = baseline.run.ranks[0].peak_bytes[a];
  const int64_t allowed = base / 100;
  RunFigures now = baseline.run;
  now.ranks[0].peak_bytes[a] = base + allowed;
  now.ranks[0].peak_total_bytes += baseline.run.ranks[0].peak_total_bytes / 100;
  CheckReport report = Compare(baseline, now);
  EXPECT_EQ(Find(report, "activations", "peak_bytes", 0).verdict, Verdict::kOk);
  EXPECT_EQ(Find(report, "activations", "peak_bytes", 0).allowed_bytes,
            allowed);
  EXPECT_EQ(Find(report, "peak", "total_bytes", 0).verdict, Verdict::kOk);
  now.ranks[0].peak_bytes[a] += 1;
  now.ranks[0].peak_total_bytes += 1;
  report = Compare(baseline, now);
  EXPECT_EQ(Find(report, "activations", "peak_bytes", 0).verdict,
            Verdict::kRegressed);
  EXPECT_EQ(Find(report, "peak", "total_bytes", 0).verdict,
            Verdict::kRegressed);
}

TEST(RegressionCheck, UnattributedGrowthFails) {
  const Baseline baseline = SyntheticBaseline(1, kP);
  RunFigures now = baseline.run;
  now.ranks[0].peak_bytes[Index(Category::kUnattributed)] = 57;
  const CheckReport report = Compare(baseline, now);
  EXPECT_EQ(Find(report, "unattributed", "peak_bytes", 0).verdict,
            Verdict::kRegressed);
  EXPECT_EQ(CheckExitCode(report, false), kExitCheckFailed);
}

TEST(RegressionCheck, KeyedToleranceMovesTheBoundaryToTheByte) {
  const Baseline baseline = SyntheticBaseline(1, kP);
  RunFigures now = baseline.run;
  now.ranks[0].measured_bytes[Index(Category::kWeights)] += 1212;
  ToleranceSettings cli;
  cli.per_key["weights"] = ParseTolerance("1212");
  EXPECT_EQ(
      Find(Compare(baseline, now, cli), "weights", "measured_bytes", 0).verdict,
      Verdict::kOk);
  cli.per_key["weights"] = ParseTolerance("1211");
  EXPECT_EQ(
      Find(Compare(baseline, now, cli), "weights", "measured_bytes", 0).verdict,
      Verdict::kRegressed);
  Baseline lenient = baseline;
  lenient.tolerances["weights"] = ParseTolerance("1212");
  EXPECT_EQ(CheckExitCode(Compare(lenient, now), false), kExitOk);
}

TEST(RegressionCheck, HardContextDifferencesAreErrorsEvenWhenAllowed) {
  const Baseline baseline = SyntheticBaseline(2, kP);
  const std::pair<std::function<void(RunContext&)>, std::string> cases[] = {
      {[](RunContext& c) { c.world_size = 1; },
       "world_size: baseline 2, run 1"},
      {[](RunContext& c) { c.device = "cuda"; },
       "device: baseline \"cpu\", run \"cuda\""},
      {[](RunContext& c) { c.dtype = "bfloat16"; }, "dtype: baseline"},
      {[](RunContext& c) { c.libtorch_version = "2.1.0"; },
       "libtorch_version: baseline \"1.13.0\", run \"2.1.0\""},
  };
  for (const auto& [change, expected] : cases) {
    RunFigures now = baseline.run;
    change(now.context);
    if (now.context.world_size == 1) now.ranks.resize(1);
    const std::string message =
        InputErrorOf([&] { Compare(baseline, now, {}, /*allow=*/true); });
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_NE(message.find("base.json"), std::string::npos) << message;
    EXPECT_NE(message.find("memprof baseline --run out/run"), std::string::npos)
        << message;
  }
}

TEST(RegressionCheck, ConfigChangeIsAnErrorUnlessAllowedAndSourceIsIgnored) {
  const Baseline baseline = SyntheticBaseline(2, kP);
  RunFigures now = baseline.run;
  now.context.config["source"] = "/elsewhere/mlp-tiny.ini";
  now.context.git_sha = "fedcba987654";
  now.context.config["ddp"]["bucket_cap_mb"] = 25;  // 25.0 in the baseline
  EXPECT_EQ(Compare(baseline, now).config_changes.size(), 0u);

  now.context.config["mlp"]["hidden"] = 65;
  now.context.config["train"]["new_key"] = true;
  const std::string message = InputErrorOf([&] { Compare(baseline, now); });
  EXPECT_NE(message.find("config.mlp.hidden: baseline 64, run 65"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("config.train.new_key: baseline (absent), run true"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("--allow-config-change"), std::string::npos)
      << message;
  EXPECT_EQ(message.find("source"), std::string::npos) << message;

  const CheckReport allowed = Compare(baseline, now, {}, /*allow=*/true);
  ASSERT_EQ(allowed.config_changes.size(), 2u);
  EXPECT_EQ(allowed.config_changes[0].key, "config.mlp.hidden");
  EXPECT_EQ(allowed.regressed, 0);
}

// A gpt baseline written before gpt.positions (memprof.rank/1.13) had a
// position table of seq_len rows: absent, positions reads as seq_len.
TEST(RegressionCheck, AbsentGptPositionsIsTheBaselinesSeqLen) {
  Baseline baseline = SyntheticBaseline(2, kP);
  baseline.run.context.config["gpt"] = {{"seq_len", 32}};
  RunFigures now = baseline.run;
  now.context.config["gpt"]["positions"] = 32;
  EXPECT_EQ(Compare(baseline, now).config_changes.size(), 0u);
  now.context.config["gpt"]["positions"] = 1024;
  EXPECT_NE(InputErrorOf([&] {
              Compare(baseline, now);
            }).find("config.gpt.positions: baseline 32, run 1024"),
            std::string::npos);
}

TEST(RegressionCheck, TableMarkdownAndJsonCarryEveryRow) {
  const Baseline baseline = SyntheticBaseline(2, kP);
  RunFigures now = baseline.run;
  now.context.parameters = kP + 303;
  now.context.config["mlp"]["hidden"] = 65;
  for (RankFigures& rank : now.ranks) {
    rank.measured_bytes[Index(Category::kWeights)] += 4 * 303;
  }
  const CheckReport report = Compare(baseline, now, {}, /*allow=*/true);
  const std::string table = FormatCheckTable(report, /*only_changed=*/false);
  EXPECT_NE(table.find("memprof check: out/run against base.json"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("config.mlp.hidden 64 -> 65"), std::string::npos);
  EXPECT_NE(table.find("11082 parameters in the baseline, 11385 now"),
            std::string::npos)
      << table;
  // Sizes in IEC units; the delta that fails by the byte, exact too.
  EXPECT_NE(table.find("43.3 KiB  44.5 KiB  +1.18 KiB (+1,212 B)"),
            std::string::npos)
      << table;
  EXPECT_EQ(table.find("44328"), std::string::npos) << table;
  EXPECT_NE(table.find("result: 2 regressed, 0 improved, 32 within tolerance"),
            std::string::npos)
      << table;

  const std::string markdown =
      FormatCheckMarkdown(report, /*only_changed=*/false);
  EXPECT_EQ(markdown.rfind("### memprof memory check: regressed", 0), 0u);
  EXPECT_NE(markdown.find("| weights | at peak | 1 | 43.3 KiB | 44.5 KiB | "
                          "+1.18 KiB (+1,212 B) | +2.73% | 0 B | "
                          "**regressed** |"),
            std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("| gradients | at peak | 0 |"), std::string::npos);

  const nlohmann::ordered_json json = CheckReportToJson(report);
  EXPECT_EQ(json["schema"], "memprof.check/1");
  EXPECT_EQ(json["result"], "regressed");
  EXPECT_EQ(json["figures"].size(), report.figures.size());
  EXPECT_EQ(json["figures"][0]["key"], "weights");
  EXPECT_EQ(json["figures"][0]["delta_bytes"], 1212);
  EXPECT_EQ(json["config_changes"][0]["key"], "config.mlp.hidden");
}

// The verdicts of the table's rows, top to bottom.
std::vector<std::string> Verdicts(const std::string& table) {
  std::vector<std::string> verdicts;
  std::istringstream in(table);
  std::string line;
  bool rows = false;
  while (std::getline(in, line)) {
    if (line.rfind("category ", 0) == 0) {
      rows = true;
    } else if (line.empty()) {
      rows = false;
    } else if (rows) {
      verdicts.push_back(line.substr(line.rfind(' ') + 1));
    }
  }
  return verdicts;
}

// Rank 1's activations regress and rank 0's temporaries improve, both by far
// more than their 1%.
CheckReport OneRegressedOneImproved() {
  const Baseline baseline = SyntheticBaseline(2, kP);
  RunFigures now = baseline.run;
  now.ranks[1].peak_bytes[Index(Category::kActivations)] *= 2;
  now.ranks[0].measured_bytes[Index(Category::kTemporaries)] /= 2;
  return Compare(baseline, now);
}

TEST(RegressionCheck, TheTableListsRegressedThenImprovedThenOk) {
  const CheckReport report = OneRegressedOneImproved();
  ASSERT_EQ(report.regressed, 1);
  ASSERT_EQ(report.improved, 1);
  const std::string table = FormatCheckTable(report, /*only_changed=*/false);
  const std::vector<std::string> verdicts = Verdicts(table);
  ASSERT_EQ(verdicts.size(), report.figures.size()) << table;
  EXPECT_EQ(verdicts[0], "regressed") << table;
  EXPECT_EQ(verdicts[1], "improved") << table;
  for (size_t i = 2; i < verdicts.size(); ++i) {
    EXPECT_EQ(verdicts[i], "ok") << table;
  }
  EXPECT_NE(table.find("activations      own peak     1"), std::string::npos)
      << table;
  // The JSON keeps the report's order, every row.
  EXPECT_EQ(CheckReportToJson(report)["figures"][0]["key"], "weights");
  // Failing, it does not suggest a baseline of this run, which would keep
  // the regression.
  EXPECT_EQ(table.find("memprof baseline --run"), std::string::npos) << table;
  EXPECT_NE(table.find("1 figure(s) improved beyond tolerance: refresh the "
                       "baseline once the regressions are fixed"),
            std::string::npos)
      << table;
}

TEST(RegressionCheck, OnlyChangedListsTheChangedRowsAndCountsTheRest) {
  const CheckReport report = OneRegressedOneImproved();
  const std::string table = FormatCheckTable(report, /*only_changed=*/true);
  EXPECT_EQ(Verdicts(table),
            (std::vector<std::string>{"regressed", "improved"}))
      << table;
  EXPECT_NE(table.find("\n32 rows within tolerance not shown (--only-changed)"
                       "\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("result: 1 regressed, 1 improved, 32 within tolerance"),
            std::string::npos)
      << table;
  const std::string markdown = FormatCheckMarkdown(report, true);
  EXPECT_EQ(markdown.find("| ok |"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("**improved**"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("32 rows within tolerance not shown"),
            std::string::npos)
      << markdown;

  // Nothing changed: no table at all, one line.
  const Baseline baseline = SyntheticBaseline(2, kP);
  const std::string quiet =
      FormatCheckTable(Compare(baseline, baseline.run), true);
  EXPECT_TRUE(Verdicts(quiet).empty()) << quiet;
  EXPECT_NE(quiet.find("34 rows within tolerance not shown"), std::string::npos)
      << quiet;
}

class RegressionCheckRemedy : public TempDirTest {
 protected:
  void Write(const std::string& name, const RunFigures& run) {
    Baseline baseline;
    baseline.run = run;
    std::ofstream(dir_ / name) << BaselineToJson(baseline).dump(2);
  }
  std::string Refusal(const RunFigures& now) {
    const Baseline baseline = SyntheticBaseline(1, kP);
    return InputErrorOf([&] {
      CompareWithBaseline(baseline, (dir_ / "mlp-tiny-ws1.json").string(), now,
                          "out/run", {}, /*allow_config_change=*/false);
    });
  }
};

TEST_F(RegressionCheckRemedy, AnotherModelIsNeverOfferedThisBaselinesName) {
  Write("mlp-tiny-ws1.json", SyntheticRun(1, kP));
  RunFigures gpt = SyntheticRun(1, kP);
  gpt.context.config["model"] = "gpt";
  gpt.context.config["source"] = "configs/gpt-tiny.ini";
  const std::string message = Refusal(gpt);
  EXPECT_NE(message.find("config.model: baseline \"mlp\", run \"gpt\""),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("the configs differ (1 key above)"), std::string::npos)
      << message;
  const std::string mlp = (dir_ / "mlp-tiny-ws1.json").string();
  EXPECT_EQ(message.find("--out " + mlp), std::string::npos) << message;
  EXPECT_NE(message.find("memprof baseline --run out/run --out " +
                         (dir_ / "gpt-tiny-ws1.json").string()),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("--allow-config-change"), std::string::npos)
      << message;
}

TEST_F(RegressionCheckRemedy, TheBaselineOfTheSameConfigIsNamedWhenThereIsOne) {
  RunFigures gpt = SyntheticRun(1, kP);
  gpt.context.config["model"] = "gpt";
  Write("mlp-tiny-ws1.json", SyntheticRun(1, kP));
  Write("gpt-tiny-ws1.json", gpt);
  Write("notes.json", SyntheticRun(2, kP));  // another context
  std::ofstream(dir_ / "broken.json") << "{";
  const std::string message = Refusal(gpt);
  EXPECT_NE(message.find("Compare with the baseline of the same config: " +
                         (dir_ / "gpt-tiny-ws1.json").string()),
            std::string::npos)
      << message;
}

TEST_F(RegressionCheckRemedy, AChangedKeyOfTheSameModelMayRewriteTheBaseline) {
  RunFigures wider = SyntheticRun(1, kP);
  wider.context.config["mlp"]["hidden"] = 65;
  const std::string message = Refusal(wider);
  const std::string mlp = (dir_ / "mlp-tiny-ws1.json").string();
  EXPECT_NE(message.find("No baseline in " + dir_.string() +
                         " holds this run's config"),
            std::string::npos)
      << message;
  // The derived name is the baseline's own: a new one is offered instead.
  EXPECT_NE(message.find("--out " + (dir_ / "mlp-tiny-ws1-new.json").string()),
            std::string::npos)
      << message;
  // No run is written yet (profile --check refuses before training): the
  // remedy makes it first.
  EXPECT_NE(message.find("create one under a new name: profile it without "
                         "--check, then memprof baseline --run out/run"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("gate what it costs with --allow-config-change, then "
                         "rewrite it: memprof baseline --run out/run --out " +
                         mlp),
            std::string::npos)
      << message;
}

TEST(BaselineSearch, NamesFollowTheCommittedBaselines) {
  RunFigures run = SyntheticRun(2, kP);
  EXPECT_EQ(BaselineFileName(run.context), "mlp-tiny-ws2.json");
  run.context.config["ddp"]["zero_stage"] = 1;
  EXPECT_EQ(BaselineFileName(run.context), "mlp-tiny-ws2-zero1.json");
  RunFigures gpt = SyntheticRun(1, kP);
  gpt.context.config["source"] = "configs/gpt-tiny.ini";
  gpt.context.config["train"]["activation_checkpointing"] = "blocks";
  EXPECT_EQ(BaselineFileName(gpt.context), "gpt-tiny-ws1-checkpointed.json");
  gpt.context.config.erase("source");
  gpt.context.dtype = "bf16-autocast";
  EXPECT_EQ(BaselineFileName(gpt.context),
            "mlp-ws1-bf16-autocast-checkpointed.json");
  // A program's source is a description, not a file: its name, made safe.
  RunFigures program = SyntheticRun(1, kP);
  program.context.config["model"] = "program";
  program.context.config["source"] =
      "the program's own loop (memprof::Session)";
  program.context.config["program"]["name"] = "my net (v2)/small";
  EXPECT_EQ(BaselineFileName(program.context), "my-net-v2-small-ws1.json");
}

}  // namespace
}  // namespace memprof
