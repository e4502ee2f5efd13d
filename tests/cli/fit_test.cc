// memprof fit: verdicts from the prediction, ZeRO pricing, and --measure
// against real one-rank runs under --memory-limit (the memprof binary).
#include "profiler/predict/fit.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "models/config_validation.h"
#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"
#include "profiler/cli/config_cli.h"
#include "profiler/cli/predict_command.h"
#include "profiler/report/rank_report.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

namespace memprof {
namespace {

namespace fs = std::filesystem;

const std::string kTiny = MEMPROF_SOURCE_DIR "/configs/mlp-tiny.ini";
const std::string kGpt13 = MEMPROF_SOURCE_DIR "/configs/gpt-1.3b.ini";
const std::string kGpt2 = MEMPROF_SOURCE_DIR "/configs/gpt2-small.ini";

// mlp-tiny: model state with DDP buckets is 20P = 221,640 B (measured to
// the byte); the peak grows by the batch's 136 B a sample, to 255,512 B at
// micro-batch 8.
constexpr int64_t kTinyModelState = 20 * 11082;

FitAnswer FitOf(const std::string& config, int64_t budget,
                std::vector<std::string> extra = {}) {
  std::vector<std::string> words = {"--config", config, "--budget", "1"};
  words.insert(words.end(), extra.begin(), extra.end());
  return Fit(ParseFitArgs(words).config, budget);
}

TEST(Fit, VerdictFollowsTheBudget) {
  const FitAnswer roomy = FitOf(kTiny, 1 << 20);
  EXPECT_EQ(roomy.verdict, FitVerdict::kFits);
  EXPECT_EQ(roomy.model_state_bytes, kTinyModelState);
  EXPECT_GE(roomy.largest_micro_batch, 8);
  EXPECT_LE(roomy.largest_peak_bytes, 1 << 20);

  const FitAnswer tight = FitOf(kTiny, roomy.peak_bytes - 1);
  EXPECT_EQ(tight.verdict, FitVerdict::kActivationOverflow);
  EXPECT_GE(tight.largest_micro_batch, 1);
  EXPECT_LT(tight.largest_micro_batch, 8);
  EXPECT_LE(tight.largest_peak_bytes, tight.budget_bytes);
  const RunConfig tiny =
      ParseFitArgs({"--config", kTiny, "--budget", "1"}).config;
  EXPECT_GT(PredictedPeakAt(tiny, tight.largest_micro_batch + 1),
            tight.budget_bytes)
      << "the largest: one more sample does not fit";

  const FitAnswer small = FitOf(kTiny, kTinyModelState - 1);
  EXPECT_EQ(small.verdict, FitVerdict::kModelStateOverflow);
  EXPECT_EQ(small.largest_micro_batch, 0);
  EXPECT_NE(FitVerdictSentence(small).find("alone over the budget"),
            std::string::npos)
      << FitVerdictSentence(small);
}

// llama-tiny at micro-batch 1 (T = 32) over a budget just under its peak:
// the longest llama.seq_len that fits is a lever, the longest that does.
TEST(Fit, ShortensALlamaSequence) {
  const std::string llama = MEMPROF_SOURCE_DIR "/configs/llama-tiny.ini";
  const std::vector<std::string> one = {"--micro-batch", "1"};
  const RunConfig config =
      ParseFitArgs({"--config", llama, "--budget", "1", "--micro-batch", "1"})
          .config;
  const int64_t budget = PredictedPeakAt(config, 1) - 1;
  const FitAnswer a = FitOf(llama, budget, one);
  ASSERT_NE(a.verdict, FitVerdict::kFits);
  const FitLever* shorter = nullptr;
  for (const FitLever& lever : a.levers) {
    if (lever.flags.rfind("--llama.seq_len ", 0) == 0) shorter = &lever;
  }
  ASSERT_NE(shorter, nullptr) << FormatFit(a, config);
  const int64_t t = std::stoll(shorter->flags.substr(16));
  EXPECT_LT(t, 32);
  EXPECT_LE(shorter->peak_bytes, budget);
  RunConfig longer = config;
  longer.llama.seq_len = t + 1;
  EXPECT_GT(PredictedPeakAt(longer, 1), budget) << "the longest: " << t;
}

// A shorter sequence trains the same model: for a config whose position
// table follows seq_len (gpt-tiny), the lever's flags pin the table, so
// running them gives the lever's figure.
TEST(Fit, ShorterSequenceLeverKeepsThePositionTable) {
  const std::string tiny = MEMPROF_SOURCE_DIR "/configs/gpt-tiny.ini";
  const RunConfig config =
      ParseFitArgs({"--config", tiny, "--budget", "1"}).config;
  ASSERT_EQ(config.gpt.positions, 0);
  const int64_t budget = PredictedPeakAt(config, MicroBatch(config)) - 1;
  const FitAnswer a = FitOf(tiny, budget);
  const FitLever* shorter = nullptr;
  for (const FitLever& lever : a.levers) {
    if (lever.flags.find("--gpt.seq_len ") != std::string::npos) {
      shorter = &lever;
    }
  }
  ASSERT_NE(shorter, nullptr) << FormatFit(a, config);
  const std::string pin =
      "--gpt.positions " + std::to_string(config.gpt.seq_len) + " ";
  ASSERT_EQ(shorter->flags.rfind(pin, 0), 0u) << shorter->flags;
  std::vector<std::string> words = {"--config", tiny, "--budget", "1"};
  std::istringstream flags(shorter->flags);
  for (std::string word; flags >> word;) words.push_back(word);
  const RunConfig lever = ParseFitArgs(words).config;
  EXPECT_LT(lever.gpt.seq_len, config.gpt.seq_len);
  EXPECT_EQ(PredictedPeakAt(lever, MicroBatch(lever)), shorter->peak_bytes);
  EXPECT_LE(shorter->peak_bytes, budget);
}

// Note [Fit levers]: gpt2-small at micro-batch 1 (T = 1024) does not fit
// 3 GiB, though its model state (2.32 GiB) does: checkpointing and a
// shorter sequence would, each the longest that does; ZeRO needs ranks.
TEST(Fit, NamesTheLeversThatFitInOrder) {
  const std::string gpt2 = MEMPROF_SOURCE_DIR "/configs/gpt2-small.ini";
  const int64_t budget = int64_t{3} << 30;
  const FitAnswer a = FitOf(gpt2, budget);
  ASSERT_NE(a.verdict, FitVerdict::kFits);
  EXPECT_FALSE(a.model_state_alone_overflows);
  ASSERT_EQ(a.levers.size(), 2u) << FormatFit(a, RunConfig{});
  EXPECT_EQ(a.levers[0].flags, "--train.activation_checkpointing blocks");
  EXPECT_LE(a.levers[0].peak_bytes, budget);
  const RunConfig checkpointed =
      ParseFitArgs({"--config", gpt2, "--budget", "1",
                    "--train.activation_checkpointing", "blocks"})
          .config;
  EXPECT_EQ(a.levers[0].peak_bytes, PredictedPeakAt(checkpointed, 1));
  ASSERT_EQ(a.levers[1].flags.rfind("--gpt.seq_len ", 0), 0u);
  const std::string t = a.levers[1].flags.substr(14);
  EXPECT_LE(a.levers[1].peak_bytes, budget);
  const RunConfig longer =
      ParseFitArgs({"--config", gpt2, "--budget", "1", "--gpt.seq_len",
                    std::to_string(std::stoll(t) + 1)})
          .config;
  EXPECT_GT(PredictedPeakAt(longer, 1), budget) << "the longest: " << t;
  const RunConfig at_t =
      ParseFitArgs({"--config", gpt2, "--budget", "1", "--gpt.seq_len", t})
          .config;
  EXPECT_EQ(at_t.gpt.positions, 1024) << "the table keeps GPT-2's rows";
  EXPECT_EQ(PredictedPeakAt(at_t, 1), a.levers[1].peak_bytes);
  EXPECT_NE(FormatFit(a, checkpointed).find("levers that fit, in order"),
            std::string::npos);

  // At two ranks ZeRO joins them, last; the model state's own overflow
  // leaves only it.
  const FitAnswer two = FitOf(gpt2, budget, {"--world-size", "2"});
  ASSERT_EQ(two.levers.size(), 3u);
  // ZeRO-1 does not fit there; ZeRO-2 does, at the requested micro-batch.
  EXPECT_NE(two.levers[2].what.find("ZeRO-2 at 2 ranks"), std::string::npos)
      << two.levers[2].what;
  EXPECT_EQ(two.levers[2].peak_bytes,
            two.zero_peak_bytes[2] - two.peak1_bytes + two.peak_bytes);
  const FitAnswer tiny_budget =
      FitOf(gpt2, int64_t{2} << 30, {"--world-size", "8"});
  EXPECT_TRUE(tiny_budget.model_state_alone_overflows);
  // Sharding, then LoRA last (it trains adapters instead of the model).
  ASSERT_GE(tiny_budget.levers.size(), 2u);
  for (size_t i = 0; i + 1 < tiny_budget.levers.size(); ++i) {
    EXPECT_NE(tiny_budget.levers[i].what.find("ZeRO-"), std::string::npos)
        << tiny_budget.levers[i].what;
  }
  EXPECT_EQ(tiny_budget.levers.back().what.rfind("LoRA adapters, rank 8", 0),
            0u)
      << tiny_budget.levers.back().what;

  // On one rank under 2 GiB gpt2-small's model state (2.32 GiB) overflows
  // and LoRA alone cures it: rank 8 on c_attn (768 -> 2304) and
  // attn.c_proj (768 -> 768) in 12 layers.
  const FitAnswer one = FitOf(gpt2, int64_t{2} << 30);
  EXPECT_EQ(one.verdict, FitVerdict::kModelStateOverflow);
  ASSERT_EQ(one.levers.size(), 1u);
  const int64_t adapters = 12 * (8 * (768 + 2304) + 8 * (768 + 768));
  EXPECT_NE(one.levers[0].what.find(
                "(" + GroupedInteger(adapters) +
                " of 124,882,176 parameters trained; model state 483 MiB "
                "instead of 2.32 GiB)"),
            std::string::npos)
      << one.levers[0].what;
  EXPECT_EQ(one.levers[0].flags,
            "--lora-rank 8 --lora-targets c_attn,attn.c_proj");
  EXPECT_LE(one.levers[0].peak_bytes, int64_t{2} << 30);
  EXPECT_TRUE(one.levers[0].one_rank && one.levers[0].adapters);

  // mlp-tiny, activations over: a smaller micro-batch first, with the ranks
  // for the same global batch (Note [Keeping the global batch]): one byte
  // under micro-batch 8's peak the largest that fits is 7, which does not
  // divide 8 samples; 4 on 2 ranks does (7 on 2 ranks would be 14).
  const FitAnswer roomy = FitOf(kTiny, 1 << 20);
  EXPECT_TRUE(roomy.levers.empty());
  const FitAnswer tight = FitOf(kTiny, roomy.peak_bytes - 1);
  ASSERT_EQ(tight.largest_micro_batch, 7);
  ASSERT_FALSE(tight.levers.empty());
  EXPECT_EQ(tight.levers[0].flags, "--micro-batch 4 --world-size 2");
  EXPECT_EQ(tight.levers[0].peak_bytes,
            PredictedPeakAt(
                ParseFitArgs({"--config", kTiny, "--budget", "1"}).config, 4));
  EXPECT_NE(FitVerdictSentence(tight).find(
                "the largest micro-batch per rank that fits is 7 (" +
                HumanBytes(tight.largest_peak_bytes) +
                "): data parallelism keeps the global batch at micro-batch "
                "4 on 2 ranks (8 samples a micro-batch, as now)"),
            std::string::npos)
      << FitVerdictSentence(tight);
}

// Note [Keeping the global batch]: B' divides B N, the largest such B' at
// most the largest that fits; B' = 1 always does.
TEST(Fit, KeepGlobalBatchNamesOnlyWorldsOfTheSameGlobalBatch) {
  EXPECT_EQ(KeepGlobalBatch(8, 1, 7, kMaxDdpWorldSize).micro_batch, 4);
  EXPECT_EQ(KeepGlobalBatch(8, 1, 7, kMaxDdpWorldSize).ranks, 2);
  EXPECT_EQ(KeepGlobalBatch(8, 2, 3, kMaxDdpWorldSize).micro_batch, 2);
  EXPECT_EQ(KeepGlobalBatch(8, 2, 3, kMaxDdpWorldSize).ranks, 8);
  EXPECT_EQ(KeepGlobalBatch(6, 2, 4, kMaxDdpWorldSize).micro_batch, 4);
  EXPECT_EQ(KeepGlobalBatch(6, 2, 4, kMaxDdpWorldSize).ranks, 3);
  EXPECT_EQ(KeepGlobalBatch(7, 1, 5, kMaxDdpWorldSize).micro_batch, 1);
  EXPECT_EQ(KeepGlobalBatch(7, 1, 5, kMaxDdpWorldSize).ranks, 7);
  EXPECT_EQ(KeepGlobalBatch(8, 1, 0, kMaxDdpWorldSize).micro_batch, 0);
  // Never more ranks than ddp.world_size takes: 7 samples on 7 ranks is
  // not offered where 4 is the most.
  EXPECT_EQ(KeepGlobalBatch(7, 1, 5, 4).micro_batch, 0);
  EXPECT_EQ(KeepGlobalBatch(8, 1, 3, 4).ranks, 4);
  for (int64_t b = 1; b <= 12; ++b) {
    for (int64_t n = 1; n <= 4; ++n) {
      for (int64_t largest = 1; largest < b; ++largest) {
        const GlobalBatchSplit split =
            KeepGlobalBatch(b, n, largest, kMaxDdpWorldSize);
        EXPECT_EQ(split.micro_batch * split.ranks, b * n);
        EXPECT_LE(split.micro_batch, largest);
        EXPECT_GE(split.micro_batch, 1);
      }
    }
  }
}

// A micro-batch whose global batch no world of ranks can keep names no
// world size it would refuse; a search that ends at its cap says so.
TEST(Fit, NoLeverPastTheLargestWorldAndTheSearchCapIsNamed) {
  const FitAnswer a =
      FitOf(kTiny, int64_t{1} << 30, {"--micro-batch", "2147483647"});
  EXPECT_EQ(a.split.micro_batch, 0);
  for (const FitLever& lever : a.levers) {
    EXPECT_EQ(lever.flags.find("--world-size"), std::string::npos)
        << lever.flags;
  }
  EXPECT_NE(FitVerdictSentence(a).find(
                "keeping the global batch would take more than 16777216 ranks"),
            std::string::npos)
      << FitVerdictSentence(a);
  const FitAnswer roomy = FitOf(kTiny, int64_t{100} << 40);
  EXPECT_EQ(roomy.largest_micro_batch, int64_t{1} << 30);
  EXPECT_NE(FitVerdictSentence(roomy).find(
                "1073741824 (1.38 TiB) or more: fit searches no further"),
            std::string::npos)
      << FitVerdictSentence(roomy);
}

// Note [Accumulation lever]: an activation overflow that a smaller
// micro-batch cures names that micro-batch with the accumulation that keeps
// the samples per optimizer step on the same ranks (8 per rank at
// micro-batch 8; 16 with train.grad_accum 2 already), and its peak.
TEST(Fit, AccumulationKeepsTheGlobalBatchOnTheSameRanks) {
  const FitAnswer roomy = FitOf(kTiny, 1 << 20);
  for (const int64_t k : {1, 2}) {
    SCOPED_TRACE("grad_accum " + std::to_string(k));
    const FitAnswer tight =
        FitOf(kTiny, roomy.peak_bytes - 1, {"--grad-accum", std::to_string(k)});
    ASSERT_EQ(tight.verdict, FitVerdict::kActivationOverflow);
    const FitLever* accumulation = nullptr;
    for (const FitLever& lever : tight.levers) {
      if (lever.flags.find("--grad-accum") != std::string::npos) {
        accumulation = &lever;
      }
    }
    ASSERT_NE(accumulation, nullptr) << FormatFit(tight, RunConfig{});
    int64_t b = 0, accum = 0;
    ASSERT_EQ(std::sscanf(accumulation->flags.c_str(),
                          "--micro-batch %ld --grad-accum %ld", &b, &accum),
              2)
        << accumulation->flags;
    EXPECT_LE(b, tight.largest_micro_batch);
    EXPECT_EQ(b * accum, 8 * k) << "the samples per optimizer step";
    EXPECT_NE(
        accumulation->what.find(
            "micro-batch " + std::to_string(b) + ", " + std::to_string(accum) +
            " micro-batches per optimizer step keep the global batch "
            "on 1 rank"),
        std::string::npos)
        << accumulation->what;
    EXPECT_LE(accumulation->peak_bytes, tight.budget_bytes);
    const RunConfig tiny =
        ParseFitArgs({"--config", kTiny, "--budget", "1"}).config;
    EXPECT_EQ(accumulation->peak_bytes, PredictedPeakAt(tiny, b));
    EXPECT_NE(FormatFit(tight, tiny).find(accumulation->flags),
              std::string::npos);
  }
}

// The prediction under accumulation is the micro-batch's: gpt-tiny with 4
// micro-batches of 2 per optimizer step on 2 ranks predicts every category
// as micro-batch 2 without accumulation does (model state unchanged, the
// buckets once), and predict says so.
TEST(FitAndPredict, AccumulationPredictsTheMicroBatch) {
  const std::string gpt = MEMPROF_SOURCE_DIR "/configs/gpt-tiny.ini";
  const RunConfig accumulated =
      ParsePredictArgs({"--config", gpt, "--world-size", "2", "--global-batch",
                        "16", "--micro-batch", "2"})
          .config;
  const RunConfig plain = ParsePredictArgs({"--config", gpt, "--world-size",
                                            "2", "--micro-batch", "2"})
                              .config;
  ASSERT_EQ(accumulated.train.grad_accum, 4);
  const Prediction a = Predict(accumulated);
  const Prediction b = Predict(plain);
  EXPECT_EQ(a.micro_batch, 2);
  for (Category c : kAllCategories) {
    EXPECT_EQ(a.bytes[Index(c)], b.bytes[Index(c)]) << CategoryName(c);
  }
  EXPECT_EQ(a.Peak().Total(), b.Peak().Total());
  EXPECT_NE(FormatPrediction(a, accumulated)
                .find("4 micro-batches accumulated per optimizer step (global "
                      "batch 16)"),
            std::string::npos);
}

// bf16 autocast halves most activations and adds the weights' bfloat16
// copies: gpt2-small at T = 1024 fits 3.8 GiB with it (3.73 GiB), after
// checkpointing and a shorter sequence; a bfloat16 or autocast run is not
// offered it again.
TEST(Fit, NamesBf16AutocastAfterTheShapeLevers) {
  const std::string gpt2 = MEMPROF_SOURCE_DIR "/configs/gpt2-small.ini";
  const int64_t budget = (int64_t{38} << 30) / 10;
  const FitAnswer a = FitOf(gpt2, budget);
  ASSERT_EQ(a.levers.size(), 3u) << FormatFit(a, RunConfig{});
  EXPECT_EQ(a.levers[2].flags, "--train.dtype bf16-autocast");
  EXPECT_TRUE(a.levers[2].one_rank);
  const RunConfig autocast = ParseFitArgs({"--config", gpt2, "--budget", "1",
                                           "--train.dtype", "bf16-autocast"})
                                 .config;
  EXPECT_EQ(a.levers[2].peak_bytes, PredictedPeakAt(autocast, 1));
  EXPECT_LE(a.levers[2].peak_bytes, budget);
  for (const char* dtype : {"bf16-autocast", "bfloat16"}) {
    for (const FitLever& lever :
         FitOf(gpt2, int64_t{1} << 30, {"--train.dtype", dtype}).levers) {
      EXPECT_EQ(lever.flags.find("--train.dtype"), std::string::npos) << dtype;
    }
  }
}

TEST(Fit, ModelStateVerdictDoesNotDependOnTheNumberOfRanks) {
  const int64_t budget = int64_t{80} << 30;
  const FitAnswer one = FitOf(kGpt13, budget, {"--world-size", "1"});
  const FitAnswer eight = FitOf(kGpt13, budget, {"--world-size", "8"});
  EXPECT_EQ(one.model_state_bytes, eight.model_state_bytes);
  EXPECT_EQ(one.peak1_bytes, eight.peak1_bytes);
  EXPECT_EQ(one.largest_micro_batch, eight.largest_micro_batch);
  EXPECT_EQ(one.verdict == FitVerdict::kModelStateOverflow,
            eight.verdict == FitVerdict::kModelStateOverflow);
  EXPECT_EQ(one.zero.plain_bytes, eight.zero.plain_bytes);
  EXPECT_EQ(eight.zero.stage3_bytes * 8, eight.zero.plain_bytes)
      << "ZeRO-3 at 8 ranks holds one eighth of the plain model state";
  EXPECT_EQ(eight.zero.duplicated_bytes, 7 * eight.zero.plain_bytes);
  // 16 bytes per parameter for fp32 Adam: 4 + 4 + 8.
  EXPECT_EQ(one.zero.plain_bytes, 16 * int64_t{1315723264});

  // A budget below the model state: no number of data-parallel ranks helps,
  // ZeRO does.
  const int64_t small = int64_t{16} << 30;
  const FitAnswer over1 = FitOf(kGpt13, small, {"--world-size", "1"});
  const FitAnswer over8 = FitOf(kGpt13, small, {"--world-size", "8"});
  EXPECT_EQ(over1.verdict, FitVerdict::kModelStateOverflow);
  EXPECT_EQ(over8.verdict, FitVerdict::kModelStateOverflow);
  EXPECT_EQ(over1.zero_stage, 0);
  EXPECT_GT(over8.zero_stage, 0);
  EXPECT_LE(over8.zero_peak_bytes[over8.zero_stage], small);
  EXPECT_GT(over1.zero3_ranks, 1);
  EXPECT_NE(FitVerdictSentence(over8).find("ZeRO-"), std::string::npos);
}

// Note [ZeRO-1 as run]: the verdict offers ZeRO-1 on the figure memprof's
// ZeRO-1 run is predicted at (its partition, the DDP buckets kept), not on
// the ideal price without the buckets; and no stage at one rank.
TEST(Fit, ZeroOneIsOfferedOnlyWhereItsRunFits) {
  // mlp-tiny on 2 ranks under 200,000 B: the ideal ZeRO-1 price (162 KiB)
  // fits, memprof's ZeRO-1 run does not; ZeRO-2 (priced) does.
  const FitAnswer two = FitOf(kTiny, 200000, {"--world-size", "2"});
  ASSERT_EQ(two.verdict, FitVerdict::kModelStateOverflow);
  RunConfig zero1 = ParseFitArgs({"--config", kTiny, "--budget", "1",
                                  "--world-size", "2", "--ddp.zero_stage", "1"})
                        .config;
  EXPECT_EQ(two.zero_peak_bytes[1], PredictedPeakAt(zero1, 1));
  EXPECT_GT(two.zero_peak_bytes[1], 200000);
  EXPECT_EQ(two.zero_stage, 2);
  const std::string sentence = FitVerdictSentence(two);
  EXPECT_EQ(sentence.find("ZeRO-1"), std::string::npos) << sentence;
  EXPECT_NE(sentence.find("ZeRO-2 at 2 ranks would fit micro-batch 1 ("),
            std::string::npos)
      << sentence;
  // mlp-tiny's micro-batch 8 under ZeRO-2: its model state, the
  // activations of 8 samples.
  EXPECT_GT(two.zero_requested_bytes, two.zero_peak_bytes[2]);
  EXPECT_NE(sentence.find("), and micro-batch 8 (" +
                          HumanBytes(two.zero_requested_bytes) + ")"),
            std::string::npos)
      << sentence;
  // One rank: ZeRO shards nothing, and is not offered as a stage.
  const FitAnswer one = FitOf(kTiny, 250000, {"--world-size", "1"});
  ASSERT_EQ(one.verdict, FitVerdict::kModelStateOverflow);
  EXPECT_EQ(one.zero_stage, 0);
  EXPECT_EQ(FitVerdictSentence(one).find("at 1 rank would fit"),
            std::string::npos)
      << FitVerdictSentence(one);
}

// Note [Fit levers]: a shorter sequence changes what is trained on, so it
// does not stand in for the combinations of the levers that keep the
// samples: Mistral-7B at T = 4096 in bfloat16 on 8 ranks under 80 GiB was
// offered only --llama.seq_len 246, where ZeRO-1 with checkpointing fits.
TEST(Fit, AShorterSequenceDoesNotStandInForCombinations) {
  const FitAnswer a =
      FitOf(MEMPROF_SOURCE_DIR "/configs/mistral-7b.ini", int64_t{80} << 30,
            {"--llama.seq_len", "4096", "--micro-batch", "8", "--train.dtype",
             "bfloat16", "--world-size", "8"});
  ASSERT_EQ(a.levers.size(), 2u) << FormatFit(a, RunConfig{});
  EXPECT_TRUE(a.levers[0].changes_samples);
  EXPECT_EQ(a.levers[0].flags, "--llama.seq_len 246");
  EXPECT_FALSE(a.levers[1].changes_samples);
  EXPECT_EQ(a.levers[1].flags,
            "--train.activation_checkpointing blocks --ddp.zero_stage 1");
  EXPECT_LE(a.levers[1].peak_bytes, int64_t{80} << 30);
}

// Note [Fit verdicts]: llama-tiny's micro-batch 1 peaks in backward, but
// its optimizer step (no activation live) is over 2.12 MiB too: shrinking
// the activations would not cure it, so it is the model state's overflow.
// And no ZeRO stage is offered at one rank, which shards nothing.
TEST(Fit, AnOptimizerStepOverTheBudgetIsTheModelStatesOverflow) {
  const int64_t budget = 2222981;  // 2.12 MiB
  const FitAnswer a = FitOf(MEMPROF_SOURCE_DIR "/configs/llama-tiny.ini",
                            budget, {"--micro-batch", "1"});
  EXPECT_GT(a.peak1_bytes, a.optimizer1_bytes);  // the peak is backward
  EXPECT_GT(a.optimizer1_bytes, budget);
  EXPECT_LT(a.model_state_bytes, budget);
  EXPECT_EQ(a.verdict, FitVerdict::kModelStateOverflow);
  const std::string sentence = FitVerdictSentence(a);
  EXPECT_NE(sentence.find("even micro-batch 1's optimizer step, with no "
                          "activation live, peaks at " +
                          HumanBytes(a.optimizer1_bytes) + " per rank, over "),
            std::string::npos)
      << sentence;
  EXPECT_GE(a.zero3_ranks, 2);
  EXPECT_GE(FitOf(kTiny, 215000).zero3_ranks, 2);
}

// LoRA is offered beyond a model-state overflow when no lever that keeps
// the samples fits: llama-tiny's micro-batch 1 (2.53 MiB) over 2.25 MiB,
// its model state (2.08 MiB) within it, and nothing else fits.
TEST(Fit, LoraIsOfferedWhenNothingElseFits) {
  const FitAnswer a = FitOf(MEMPROF_SOURCE_DIR "/configs/llama-tiny.ini",
                            2359296, {"--micro-batch", "1"});
  ASSERT_EQ(a.verdict, FitVerdict::kActivationOverflow);
  ASSERT_EQ(a.levers.size(), 1u);
  EXPECT_TRUE(a.levers[0].adapters);
  EXPECT_LE(a.levers[0].peak_bytes, 2359296);
  // With a lever that keeps the samples, LoRA is not offered for an
  // activation overflow.
  const FitAnswer roomier = FitOf(MEMPROF_SOURCE_DIR "/configs/llama-tiny.ini",
                                  2569011, {"--micro-batch", "1"});
  ASSERT_EQ(roomier.verdict, FitVerdict::kActivationOverflow);
  ASSERT_FALSE(roomier.levers.empty());
  for (const FitLever& lever : roomier.levers) EXPECT_FALSE(lever.adapters);
}

// The ZeRO stage the verdict names is priced at micro-batch 1; at the
// requested micro-batch it may not fit, and the verdict says so.
TEST(Fit, TheZeroStageNamedIsPricedAtTheRequestedMicroBatchToo) {
  const FitAnswer a =
      FitOf(kTiny, 200000, {"--world-size", "2", "--micro-batch", "4096"});
  ASSERT_EQ(a.verdict, FitVerdict::kModelStateOverflow);
  ASSERT_EQ(a.zero_stage, 2);
  EXPECT_GT(a.zero_requested_bytes, 200000);
  const std::string sentence = FitVerdictSentence(a);
  EXPECT_NE(sentence.find("ZeRO-2 at 2 ranks would fit micro-batch 1 (" +
                          HumanBytes(a.zero_peak_bytes[2]) +
                          " per rank), not micro-batch 4096 (" +
                          HumanBytes(a.zero_requested_bytes) + ")"),
            std::string::npos)
      << sentence;
}

// Every byte figure `text` prints ("16.7 GiB", "21.1 GB", "512 B"), in order.
std::vector<std::string> ByteFigures(const std::string& text) {
  static const std::regex kFigure(R"(\b\d+(\.\d+)? (B|KiB|MiB|GiB|TiB|GB)\b)");
  std::vector<std::string> figures;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kFigure);
       it != std::sregex_iterator(); ++it) {
    figures.push_back(it->str());
  }
  return figures;
}

// `bytes` as the text may print it: HumanBytes or whole (a figure in GB
// is never one: one unit family).
void AddFigure(int64_t bytes, std::set<std::string>& out) {
  out.insert(HumanBytes(bytes));
  out.insert(std::to_string(bytes) + " B");
}

// Every integer in `json`, as the text may print it.
void JsonFigures(const nlohmann::ordered_json& json,
                 std::set<std::string>& out) {
  if (json.is_number_integer()) {
    AddFigure(json.get<int64_t>(), out);
  } else if (json.is_structured()) {
    for (const auto& item : json) JsonFigures(item, out);
  }
}

RunConfig ConfigOf(const std::string& config, std::vector<std::string> extra) {
  std::vector<std::string> words = {"--config", config, "--budget", "1"};
  words.insert(words.end(), extra.begin(), extra.end());
  return ParseFitArgs(words).config;
}

// The line of `text` that starts with `prefix`.
std::string LineOf(const std::string& text, const std::string& prefix) {
  const size_t at = text.find("\n" + prefix);
  if (at == std::string::npos) return "";
  return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

// Note [Fit on a GPU]: the verdict on a GPU budget is predict's most
// reserved plus the outside allowance, that figure is the one the verdict
// prints, and the issue's case (gpt2-small at micro-batch 8 on 2 ranks,
// 16 GiB: 33 MB to spare on requested bytes) does not fit.
TEST(FitOnAGpu, DecidesOnPredictsReservedPlusTheOutsideAllowance) {
  struct Case {
    std::string config;
    std::vector<std::string> flags;
    int64_t budget;
  };
  const Case cases[] = {
      {kGpt2, {"--world-size", "2", "--micro-batch", "8"}, int64_t{16} << 30},
      {kGpt2, {"--world-size", "2", "--micro-batch", "2"}, int64_t{16} << 30},
      {kGpt13, {"--world-size", "8"}, int64_t{40} * 1000 * 1000 * 1000},
      {kGpt13, {"--world-size", "8"}, int64_t{80} << 30},
      {kGpt13,
       {"--world-size", "8", "--ddp.zero_stage", "1"},
       int64_t{80} << 30},
  };
  for (const Case& c : cases) {
    std::vector<std::string> flags = c.flags;
    flags.insert(flags.end(), {"--train.device", "cuda"});
    const RunConfig config = ConfigOf(c.config, flags);
    const auto json = ToJson(PredictBusiestRank(config), config);
    const int64_t device = json["cuda"]["device_bytes"].get<int64_t>();
    EXPECT_EQ(device, json["cuda"]["peak_reserved_bytes"].get<int64_t>() +
                          kDefaultOutsideAllocatorBytes);
    EXPECT_EQ(json["cuda"]["outside_allocator_bytes"].get<int64_t>(),
              kDefaultOutsideAllocatorBytes);
    const FitAnswer a = Fit(config, c.budget,
                            FitDeviceOf(config, kDefaultOutsideAllocatorBytes));
    EXPECT_EQ(a.peak_bytes, device) << c.config;
    EXPECT_EQ(a.verdict == FitVerdict::kFits, device <= c.budget) << c.config;
    const std::string verdict = LineOf(FormatFit(a, config), "verdict: ");
    EXPECT_NE(
        verdict.find("micro-batch " + std::to_string(a.micro_batch) +
                     " needs " + HumanBytes(device) + " per rank on the GPU"),
        std::string::npos)
        << verdict;
  }
  // The issue's case, fits on requested bytes alone.
  const RunConfig cpu =
      ConfigOf(kGpt2, {"--world-size", "2", "--micro-batch", "8"});
  const int64_t budget = int64_t{16} << 30;
  ASSERT_LE(PredictedPeakAt(cpu, 8), budget);
  RunConfig cuda = cpu;
  cuda.train.device = "cuda";
  EXPECT_NE(Fit(cuda, budget, FitDeviceOf(cuda, kDefaultOutsideAllocatorBytes))
                .verdict,
            FitVerdict::kFits);
  // The allowance is the user's to set: what decides moves with it.
  const int64_t reserved =
      ToJson(PredictBusiestRank(cuda), cuda)["cuda"]["peak_reserved_bytes"]
          .get<int64_t>();
  const int64_t between = reserved + kDefaultOutsideAllocatorBytes / 2;
  EXPECT_NE(Fit(cuda, between, FitDeviceOf(cuda, kDefaultOutsideAllocatorBytes))
                .verdict,
            FitVerdict::kFits);
  EXPECT_EQ(Fit(cuda, between, FitDeviceOf(cuda, 0)).verdict,
            FitVerdict::kFits);
}

// A CPU run is decided on its requested bytes, and says what the same run
// needs on a GPU when that is over the budget; on a GPU the verdict is the
// device's (memprof fit, end to end).
TEST(FitOnAGpu, TheCommandSaysWhichFigureDecided) {
  const std::string run = "fit --config " + kGpt2 +
                          " --budget 16GiB --world-size 2 --micro-batch 8";
  RunConfig cuda = ConfigOf(kGpt2, {"--world-size", "2", "--micro-batch", "8",
                                    "--train.device", "cuda"});
  const int64_t device =
      ToJson(PredictBusiestRank(cuda), cuda)["cuda"]["device_bytes"]
          .get<int64_t>();
  const CommandResult on_cpu = RunMemprof(run);
  EXPECT_NE(on_cpu.output.find("on a GPU the same run would need " +
                               HumanBytes(device)),
            std::string::npos)
      << on_cpu.output;
  const CommandResult on_gpu = RunMemprof(run + " --train.device cuda");
  EXPECT_EQ(on_gpu.exit_code, kExitCheckFailed) << on_gpu.output;
  EXPECT_NE(on_gpu.output.find("verdict: activation-overflow"),
            std::string::npos)
      << on_gpu.output;
  EXPECT_NE(on_gpu.output.find("micro-batch 8 needs " + HumanBytes(device) +
                               " per rank on the GPU"),
            std::string::npos)
      << on_gpu.output;
  EXPECT_NE(on_gpu.output.find("reserved by the caching allocator + 1.00 GiB "
                               "outside it"),
            std::string::npos)
      << on_gpu.output;
  const CommandResult bad = RunMemprof(run + " --gpu-outside-allocator 1XB");
  EXPECT_EQ(bad.exit_code, kExitBadInput) << bad.output;
  EXPECT_NE(bad.output.find("--gpu-outside-allocator 1XB"), std::string::npos)
      << bad.output;
  // None outside the allocator, in any unit: 0 bytes added.
  const CommandResult none =
      RunMemprof(run + " --train.device cuda --gpu-outside-allocator 0GiB");
  EXPECT_NE(none.output.find("reserved by the caching allocator + 0 B "
                             "outside it"),
            std::string::npos)
      << none.output;
}

// At one rank there is nothing to shard: no ZeRO pricing, and a verdict
// that names the ranks ZeRO-3 would need without pricing it at one.
TEST(FitText, NoZeroLinesAtOneRank) {
  const RunConfig one = ConfigOf(kTiny, {});
  const FitAnswer roomy = FitOf(kTiny, 1 << 20);
  const std::string text = FormatFit(roomy, one);
  EXPECT_EQ(text.find("ZeRO"), std::string::npos) << text;
  EXPECT_NE(text.find("budget 1.00 MiB (1,048,576 B) per rank"),
            std::string::npos)
      << text;
  const RunConfig two = ConfigOf(kTiny, {"--world-size", "2"});
  EXPECT_NE(FormatFit(Fit(two, 1 << 20), two).find("ZeRO at 2 ranks"),
            std::string::npos);

  const FitAnswer over1 =
      FitOf(kGpt13, int64_t{16} << 30, {"--world-size", "1"});
  const std::string verdict = FitVerdictSentence(over1);
  EXPECT_EQ(verdict.find("at 1 rank"), std::string::npos) << verdict;
  EXPECT_NE(
      verdict.find("ZeRO-" + std::to_string(over1.zero_stage_at_ranks) +
                   " fits at " + std::to_string(over1.zero3_ranks) + " ranks"),
      std::string::npos)
      << verdict;
}

// At one rank the verdict names the fewest ranks any stage fits at (ZeRO-3's)
// and the smallest stage that fits there: the same stage the verdict at
// those ranks names (gpt-tiny under 1,903,050 B: ZeRO-2 at 2 ranks, where
// it said ZeRO-3).
TEST(Fit, OneRankNamesTheSmallestStageAtTheFewestRanks) {
  const std::string tiny = MEMPROF_SOURCE_DIR "/configs/gpt-tiny.ini";
  const int64_t budget = 1903050;
  const FitAnswer one = FitOf(tiny, budget);
  ASSERT_EQ(one.verdict, FitVerdict::kModelStateOverflow);
  ASSERT_EQ(one.zero3_ranks, 2);
  const FitAnswer two = FitOf(tiny, budget, {"--world-size", "2"});
  EXPECT_EQ(one.zero_stage_at_ranks, two.zero_stage);
  EXPECT_EQ(one.zero_stage_at_ranks, 2);
  EXPECT_NE(FitVerdictSentence(one).find("ZeRO-2 fits at 2 ranks"),
            std::string::npos)
      << FitVerdictSentence(one);
}

// Under ZeRO-1 at more ranks than parameters, the ranks that own nothing
// are one entry of the partition line, and the JSON still lists each rank.
TEST(FitAndPredict, ZeroOnePartitionLineJoinsTheRanksThatOwnNothing) {
  const RunConfig config =
      ConfigOf(kTiny, {"--world-size", "1000", "--ddp.zero_stage", "1"});
  const Prediction p = PredictBusiestRank(config);
  const std::string text = FormatPrediction(p, config);
  EXPECT_NE(text.find("; rank 7 10 parameters, 80 B of optimizer state; "
                      "ranks 8-999 each 0 parameters, 0 B of optimizer "
                      "state; ideal P/N = 12 parameters"),
            std::string::npos)
      << text;
  const auto json = ToJson(p, config);
  EXPECT_EQ(json["zero_partition"]["parameters_by_rank"].size(), 1000u);
  EXPECT_EQ(json["zero_partition"]["optimizer_state_bytes_by_rank"][999], 0);
}

// Every byte figure predict prints under ZeRO-1 is one of its JSON's: the
// GPU line is the busiest rank's partition, not the stage-0 replay, and the
// model-state sentence does not claim replication it does not have; fit
// prints the same figures.
TEST(FitAndPredict, UnderZeroOnePrintOneSetOfFigures) {
  const RunConfig config =
      ConfigOf(kGpt13, {"--world-size", "8", "--ddp.zero_stage", "1"});
  const Prediction p = PredictBusiestRank(config);
  const auto json = ToJson(p, config);
  const std::string text = FormatPrediction(p, config);
  std::set<std::string> figures;
  JsonFigures(json, figures);
  for (const std::string& figure : ByteFigures(text)) {
    EXPECT_EQ(figures.count(figure), 1u)
        << figure << " is not a figure of the JSON:\n"
        << text;
  }
  // The GPU line, printed for a cuda config, too.
  RunConfig cuda = config;
  cuda.train.device = "cuda";
  const Prediction on_gpu = PredictBusiestRank(cuda);
  const std::string gpu_text = FormatPrediction(on_gpu, cuda);
  ASSERT_NE(gpu_text.find("on a GPU (the CUDA caching allocator"),
            std::string::npos)
      << gpu_text;
  std::set<std::string> gpu_figures;
  JsonFigures(ToJson(on_gpu, cuda), gpu_figures);
  for (const std::string& figure : ByteFigures(gpu_text)) {
    EXPECT_EQ(gpu_figures.count(figure), 1u)
        << figure << " is not a figure of the JSON:\n"
        << gpu_text;
  }
  EXPECT_EQ(json["cuda"]["requested_bytes"].get<int64_t>(),
            json["peak"]["total_bytes"].get<int64_t>())
      << "the GPU replay is of the rank predicted";
  EXPECT_EQ(json["rank"].get<int>(), p.rank);
  EXPECT_EQ(text.find("copies"), std::string::npos) << text;
  EXPECT_EQ(text.find("does not shrink"), std::string::npos) << text;
  int64_t group = 0;
  for (const auto& state :
       json["zero_partition"]["optimizer_state_bytes_by_rank"]) {
    group += state.get<int64_t>();
  }
  const auto& categories = json["categories"];
  group += 8 * (categories["weights"]["predicted_bytes"].get<int64_t>() +
                categories["gradients"]["predicted_bytes"].get<int64_t>() +
                categories["ddp_buckets"]["predicted_bytes"].get<int64_t>());
  EXPECT_EQ(json["model_state"]["group_bytes"].get<int64_t>(), group);

  // fit: its model state, its peak and its verdict's figures are predict's.
  const int64_t budget = int64_t{40} * 1000 * 1000 * 1000;
  const FitAnswer a = Fit(config, budget);
  const std::string fit = FormatFit(a, config);
  const int64_t state = json["model_state"]["bytes_per_rank"].get<int64_t>();
  const int64_t peak = json["peak"]["total_bytes"].get<int64_t>();
  EXPECT_NE(LineOf(fit, "model state per rank").find("): " + HumanBytes(state)),
            std::string::npos)
      << fit;
  EXPECT_NE(LineOf(fit, "predicted peak per rank: ")
                .find(HumanBytes(peak) + " at micro-batch 1"),
            std::string::npos)
      << fit;
  AddFigure(budget, figures);
  AddFigure(peak - state, figures);  // what micro-batch 1 adds
  for (const std::string& figure : ByteFigures(LineOf(fit, "verdict: "))) {
    EXPECT_EQ(figures.count(figure), 1u) << figure << " in\n" << fit;
  }
}

// gpt-1.3b at 8 ranks under 40 GB: the model state (24.5 GiB) fits and
// micro-batch 1's activations do not; the verdict says so once, and since
// no lever memprof runs fits alone, their combinations are priced.
TEST(Fit, ModelStateThatFitsIsNotCalledItsOverflow) {
  const RunConfig config = ConfigOf(kGpt13, {"--world-size", "8"});
  const int64_t budget = int64_t{40} * 1000 * 1000 * 1000;
  const FitAnswer a = Fit(config, budget);
  ASSERT_LE(a.model_state_bytes, budget);
  ASSERT_GT(a.peak1_bytes, budget);
  EXPECT_EQ(a.verdict, FitVerdict::kActivationOverflow);
  EXPECT_EQ(a.largest_micro_batch, 0);
  const std::string text = FormatFit(a, config);
  EXPECT_EQ(text.find("alone over"), std::string::npos) << text;
  EXPECT_NE(text.find("verdict: activation-overflow: the model state, " +
                      HumanBytes(a.model_state_bytes) + " per rank, fits"),
            std::string::npos)
      << text;
  // Below the model state no lever memprof runs fits alone: ZeRO-1 with
  // checkpointing does, predicted as the combined run.
  const FitAnswer below = Fit(config, int64_t{24} << 30);
  EXPECT_EQ(below.verdict, FitVerdict::kModelStateOverflow);
  bool combined = false;
  for (const FitLever& lever : below.levers) {
    if (lever.flags !=
        "--train.activation_checkpointing blocks --ddp.zero_stage 1") {
      continue;
    }
    combined = true;
    RunConfig both = config;
    both.train.activation_checkpointing = "blocks";
    both.ddp.zero_stage = 1;
    EXPECT_EQ(lever.peak_bytes, FitFigure(both, FitDevice{}));
    EXPECT_LE(lever.peak_bytes, below.budget_bytes);
  }
  EXPECT_TRUE(combined) << FormatFit(below, config);
  // No clause twice.
  std::set<std::string> clauses;
  std::regex split("[;:,\n]");
  for (auto it =
           std::sregex_token_iterator(text.begin(), text.end(), split, -1);
       it != std::sregex_token_iterator(); ++it) {
    const std::string clause = *it;
    if (clause.size() < 20) continue;
    EXPECT_TRUE(clauses.insert(clause).second) << clause << " twice in\n"
                                               << text;
  }
}

TEST(FitCommand, ExitCodesAndBadInput) {
  EXPECT_EQ(RunMemprof("fit --config " + kTiny + " --budget 1GiB").exit_code,
            kExitOk);
  const CommandResult over =
      RunMemprof("fit --config " + kTiny + " --budget 200000");
  EXPECT_EQ(over.exit_code, kExitCheckFailed) << over.output;
  EXPECT_NE(over.output.find("verdict: model-state-overflow"),
            std::string::npos)
      << over.output;
  for (const auto& [budget, expected] :
       {std::pair{"12XB", "--budget 12XB: expected a size"},
        std::pair{"0GiB", "--budget 0GiB: a size of 0 bytes holds nothing"},
        std::pair{"9223372036854775807",
                  "--budget 9223372036854775807: too large; memprof counts "
                  "sizes up to 9.0e18 bytes"},
        std::pair{"8388608TiB", "--budget 8388608TiB: too large"}}) {
    const CommandResult bad =
        RunMemprof("fit --config " + kTiny + " --budget " + budget);
    EXPECT_EQ(bad.exit_code, kExitBadInput);
    EXPECT_NE(bad.output.find(expected), std::string::npos) << bad.output;
  }
  EXPECT_EQ(RunMemprof("fit --config " + kTiny).exit_code, kExitBadInput);
  // Note [Countable sizes]: once "fits ... peaks at -2677055 TiB", exit 0.
  const CommandResult huge = RunMemprof(
      "fit --config " + kTiny + " --budget 80GiB --mlp.hidden 9999999999");
  EXPECT_EQ(huge.exit_code, kExitBadInput) << huge.output;
  EXPECT_NE(huge.output.find("--mlp.hidden: mlp.hidden must be at most"),
            std::string::npos)
      << huge.output;
  EXPECT_EQ(huge.output.find("-"), huge.output.find("--mlp.hidden"))
      << "no negative figure: " << huge.output;
}

class FitMeasure : public TempDirTest {};

// gpt-tiny at micro-batch 4 over a budget its checkpointed run fits:
// --measure runs the first lever that changes the run, at micro-batch 4
// under the budget, and it completes within it.
TEST_F(FitMeasure, ConfirmsTheCheckpointingLeverWithARealRun) {
  const std::string gpt = MEMPROF_SOURCE_DIR "/configs/gpt-tiny.ini";
  const RunConfig plain =
      ParseFitArgs({"--config", gpt, "--budget", "1"}).config;
  const RunConfig checkpointed =
      ParseFitArgs({"--config", gpt, "--budget", "1",
                    "--train.activation_checkpointing", "blocks"})
          .config;
  const int64_t budget =
      (PredictedPeakAt(plain, 4) + PredictedPeakAt(checkpointed, 4)) / 2;
  const CommandResult r =
      RunMemprof("fit --config " + gpt + " --budget " + std::to_string(budget) +
                 " --measure --out " + dir_.string());
  EXPECT_EQ(r.exit_code, kExitCheckFailed) << r.output;
  EXPECT_NE(r.output.find("measured lever: activation checkpointing "
                          "(--train.activation_checkpointing blocks)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("measured lever verdict: activation checkpointing "
                          "fits the budget"),
            std::string::npos)
      << r.output;
  const RankReport run =
      ReadRankReport(RankReportPath(dir_ / "lever-micro-batch-4", 0));
  EXPECT_EQ(run.context.config.train.activation_checkpointing, "blocks");
  EXPECT_LE(run.peak.total_bytes, budget);
  EXPECT_EQ(run.peak.total_bytes, PredictedPeakAt(checkpointed, 4));
}

// mlp-tiny at micro-batch 4096, whose activations dominate, one byte over
// budget: the first lever one rank can confirm is bf16 autocast, and it
// runs within the budget (with room for oneDNN's bfloat16 scratchpads,
// which its prediction leaves out: docs/mixed-precision-and-checkpointing.md).
TEST_F(FitMeasure, ConfirmsTheAutocastLeverWithARealRun) {
  const RunConfig plain =
      ParseFitArgs({"--config", kTiny, "--budget", "1"}).config;
  const int64_t budget = PredictedPeakAt(plain, 4096) - 1;
  const CommandResult r = RunMemprof(
      std::string("fit --config ") + kTiny + " --micro-batch 4096 --budget " +
      std::to_string(budget) + " --measure --out " + dir_.string());
  EXPECT_EQ(r.exit_code, kExitCheckFailed) << r.output;
  EXPECT_NE(r.output.find("measured lever: bf16 autocast"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("fits the budget"), std::string::npos) << r.output;
  const RankReport run =
      ReadRankReport(RankReportPath(dir_ / "lever-micro-batch-4096", 0));
  EXPECT_EQ(run.context.config.train.dtype, "bf16-autocast");
  EXPECT_LE(run.peak.total_bytes, budget);
  EXPECT_GT(run.Of(Category::kWeightCasts).peak_bytes, 0);
}

// gpt-tiny at micro-batch 4 under a budget its model state overflows and
// its LoRA lever (rank 8 on the attention projections) fits, at the
// lever's predicted peak (2% over it, the activations' band): --measure runs
// the LoRA lever too, and the run completes within the budget, training
// the adapters alone.
TEST_F(FitMeasure, ConfirmsTheLoraLeverWithARealRun) {
  const std::string gpt = MEMPROF_SOURCE_DIR "/configs/gpt-tiny.ini";
  const RunConfig plain =
      ParseFitArgs({"--config", gpt, "--budget", "1"}).config;
  const RunConfig adapted =
      ParseFitArgs({"--config", gpt, "--budget", "1", "--lora-rank", "8",
                    "--lora-targets", "c_attn,attn.c_proj"})
          .config;
  const int64_t budget = PredictedPeakAt(adapted, 4) * 102 / 100;
  ASSERT_LT(budget, PredictedPeakAt(plain, 1));
  const CommandResult r =
      RunMemprof("fit --config " + gpt + " --budget " + std::to_string(budget) +
                 " --measure --out " + dir_.string());
  EXPECT_EQ(r.exit_code, kExitCheckFailed) << r.output;
  EXPECT_NE(r.output.find("measured verdict: model-state-overflow"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("measured lever: LoRA adapters, rank 8 on "
                          "c_attn,attn.c_proj"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("measured lever verdict: LoRA adapters, rank 8 on "
                          "c_attn,attn.c_proj, the base frozen"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("fits the budget"), std::string::npos) << r.output;
  const RankReport run =
      ReadRankReport(RankReportPath(dir_ / "lora-micro-batch-4", 0));
  EXPECT_EQ(run.context.config.lora.rank, 8);
  EXPECT_EQ(run.trained_parameters, 2 * (8 * (64 + 192) + 8 * (64 + 64)));
  EXPECT_LE(run.peak.total_bytes, budget);
}

TEST_F(FitMeasure, BelowModelStateEvenMicroBatchOneRunsOutOfMemory) {
  const CommandResult r =
      RunMemprof("fit --config " + kTiny + " --budget 200000 --measure --out " +
                 dir_.string());
  EXPECT_EQ(r.exit_code, kExitCheckFailed) << r.output;
  EXPECT_NE(r.output.find("measured verdict: model-state-overflow"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::exists(dir_ / "micro-batch-1" / "rank-0.json"));
}

// A budget over this machine's memory cannot be measured here: refused
// before anything runs, with fit's own remedy (the measured run's refusal
// named --skip-memory-check, which fit does not take).
TEST_F(FitMeasure, ABudgetOverThisMachinesMemoryIsRefusedUpFront) {
  const CommandResult r =
      RunMemprof("fit --config " + kTiny +
                 " --budget 1000TiB --measure --out " + dir_.string());
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.output;
  EXPECT_NE(r.output.find("--measure: the measured runs train one rank on "
                          "this machine under a memory limit of the budget, "
                          "1000 TiB"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("or leave out --measure"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("skip-memory-check"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "micro-batch-1"));
}

// Note [Measured verdicts]: llama-tiny's model state (2.08 MiB) fits 2.45
// MiB and micro-batch 1 (2.53 MiB, in backward) does not: micro-batch 1
// runs out of memory in a step's forward or backward, an
// activation-overflow, as predicted.
TEST_F(FitMeasure,
       MicroBatchOneOverWithTheModelStateWithinIsAnActivationOverflow) {
  const CommandResult r = RunMemprof(
      "fit --config " MEMPROF_SOURCE_DIR
      "/configs/llama-tiny.ini --micro-batch 1 --budget 2.45MiB --measure "
      "--out " +
      dir_.string());
  EXPECT_EQ(r.exit_code, kExitCheckFailed) << r.output;
  EXPECT_NE(r.output.find("verdict: activation-overflow: the model state, "
                          "2.08 MiB per rank, fits 2.45 MiB"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex("measured verdict: activation-overflow: "
                           "micro-batch 1 ran out of memory \\(out of memory "
                           "in (forward|backward) of step [0-9]+: [^\n]*\\): "
                           "the model state, 2.08 MiB on one rank, fits, but "
                           "what micro-batch 1 adds to it")))
      << r.output;
}

// Everything but the output layer frozen: the model state (386 KiB) fits
// 450 KiB, and so does the predicted peak, but DDP's start-up broadcast of
// the weights (a flat copy of 311 KiB) does not: start-up-overflow.
TEST_F(FitMeasure, TheStartUpBroadcastOverTheBudgetIsAStartUpOverflow) {
  const CommandResult r = RunMemprof(
      "fit --config " MEMPROF_SOURCE_DIR
      "/configs/llama-odd.ini --freeze model.embed_tokens,model.layers,"
      "model.norm --budget 450KiB --measure --out " +
      dir_.string());
  EXPECT_EQ(r.exit_code, kExitCheckFailed) << r.output;
  EXPECT_NE(r.output.find("\nverdict: fits: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("measured verdict: start-up-overflow: micro-batch 1 "
                          "ran out of memory (out of memory in ddp_init: "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("the model state, 386 KiB on one rank, fits, but "
                          "DDP's start-up broadcast holds a flat copy of the "
                          "weights"),
            std::string::npos)
      << r.output;
}

// A measured run's peak is its steady state's, and its highest moment too
// when higher (DDP's start-up copy of the weights); a largest micro-batch
// other than the prediction's says so. Everything but the output layer
// frozen: the prediction leaves out a forward peak (fine-tuning.md), so it
// says 12 where 7 runs.
TEST_F(FitMeasure, TheStartUpPeakAndAMissedPredictionAreNamed) {
  const CommandResult r = RunMemprof(
      "fit --config " MEMPROF_SOURCE_DIR
      "/configs/llama-odd.ini --freeze model.embed_tokens,model.layers,"
      "model.norm --budget 690KiB --measure --out " +
      dir_.string());
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex("micro-batch 1: ran to completion, peak [0-9.]+ "
                           "KiB \\(steady state\\); [0-9.]+ KiB at its "
                           "highest, in ddp_init\n")))
      << r.output;
  EXPECT_TRUE(std::regex_search(
      r.output,
      std::regex("measured verdict: fits: the largest micro-batch per rank "
                 "that ran to completion is ([0-9]+) \\(peak [^)]*\\), where "
                 "the prediction said ([0-9]+)")))
      << r.output;
}

// Issue 35: below the weights alone, micro-batch 1 runs out of memory
// while the model is built, before step 1; fit --measure gives its measured
// verdict (it exited 3, its run's report refused) and the run its report.
TEST_F(FitMeasure, BelowTheWeightsTheRunStopsBeforeStepOneAndIsMeasured) {
  const CommandResult r =
      RunMemprof("fit --config " + kTiny + " --budget 30000 --measure --out " +
                 dir_.string());
  EXPECT_EQ(r.exit_code, kExitCheckFailed) << r.output;
  EXPECT_NE(r.output.find("micro-batch 1: out of memory in model_init"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("measured verdict: model-state-overflow"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::exists(dir_ / "micro-batch-1" / "report.md"));
}

TEST_F(FitMeasure, BetweenModelStateAndPeakNamesALargestMicroBatchThatRuns) {
  const RunConfig tiny =
      ParseFitArgs({"--config", kTiny, "--budget", "1"}).config;
  const int64_t peak8 = PredictedPeakAt(tiny, 8);
  const int64_t budget = peak8 - 600;  // a few samples' batch less
  ASSERT_GT(budget, kTinyModelState);
  const CommandResult r =
      RunMemprof("fit --config " + kTiny + " --budget " +
                 std::to_string(budget) + " --measure --out " + dir_.string());
  EXPECT_EQ(r.exit_code, kExitCheckFailed) << r.output;
  const std::string said =
      "measured verdict: activation-overflow: the "
      "largest micro-batch per rank that ran to "
      "completion is ";
  const size_t at = r.output.find(said);
  ASSERT_NE(at, std::string::npos) << r.output;
  const int largest = std::stoi(r.output.substr(at + said.size()));
  EXPECT_GE(largest, 1);
  EXPECT_LT(largest, 8);
  // It runs to completion under the limit; one more does not.
  const CommandResult runs = RunMemprof(
      "profile --config " + kTiny + " --micro-batch " +
      std::to_string(largest) + " --memory-limit " + std::to_string(budget) +
      " --out " + (dir_ / "again").string());
  EXPECT_EQ(runs.exit_code, kExitOk) << runs.output;
  const CommandResult more =
      RunMemprof("profile --config " + kTiny + " --micro-batch " +
                 std::to_string(largest + 1) + " --memory-limit " +
                 std::to_string(budget) + " --out " + (dir_ / "more").string());
  EXPECT_EQ(more.exit_code, kExitRunFailed) << more.output;
  EXPECT_NE(more.output.find("out of memory"), std::string::npos);
}

}  // namespace
}  // namespace memprof
