// train.freeze in arithmetic (no tensors): its list, its validation, the
// frozen rows of the size tables and what the prediction counts for them
// (Note [Frozen parameters], Note [Frozen activations]).
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "models/frozen_rows.h"
#include "profiler/base/errors.h"
#include "profiler/base/frozen_parameters.h"
#include "profiler/cli/config_cli.h"
#include "profiler/cli/predict_command.h"
#include "profiler/predict/fit.h"
#include "profiler/predict/prediction.h"
#include "tests/input_error_of.h"
#include "tests/preset_config.h"
#include "tests/temp_dir.h"

namespace memprof {
namespace {

std::string PresetError(const std::string& name,
                        std::vector<std::string> extra) {
  return InputErrorOf([&] { PredictPreset(name, std::move(extra)); });
}

int64_t Bytes(const Prediction& p, Category c) { return p.bytes[Index(c)]; }

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(FreezePrefixes, AListOfWholeNamePartPrefixes) {
  EXPECT_EQ(FreezePrefixes(""), std::vector<std::string>{});
  EXPECT_EQ(FreezePrefixes("h.0, h.1"),
            (std::vector<std::string>{"h.0", "h.1"}));
  EXPECT_TRUE(PrefixCovers("h.1", "h.1.ln_1.weight"));
  EXPECT_TRUE(PrefixCovers("h.1.ln_1.weight", "h.1.ln_1.weight"));
  EXPECT_FALSE(PrefixCovers("h.1", "h.10.ln_1.weight"));
  EXPECT_FALSE(PrefixCovers("h.1.ln", "h.1.ln_1.weight"));
}

TEST(FreezePrefixes, AnEmptyItemOrAllIsRefusedWithTheRemedy) {
  for (const char* bad : {"h.0,,h.1", "h.0,", ",h.0", " "}) {
    try {
      FreezePrefixes(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), "train.freeze");
      EXPECT_TRUE(Has(e.what(), "empty item")) << e.what();
      EXPECT_TRUE(Has(e.what(), "separated by single commas")) << e.what();
    }
  }
  try {
    FreezePrefixes("h.0,all");
    ADD_FAILURE() << "all accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "train.freeze");
    EXPECT_TRUE(Has(e.what(),
                    "'all' (every base weight, beside [lora]) "
                    "stands alone"))
        << e.what();
  }
}

// Each error names where the value came from (the flag, or the file and
// line), the key, and the remedy.
TEST(FreezeValidation, APrefixThatMatchesNothingNamesTheNearestNames) {
  const std::string flag = PresetError("gpt-tiny", {"--freeze", "h.9"});
  EXPECT_TRUE(Has(flag, "--freeze: train.freeze: 'h.9' names no parameter"))
      << flag;
  EXPECT_TRUE(Has(flag, "nearest: h.0, h.1")) << flag;
  EXPECT_TRUE(Has(flag, "memprof predict --table")) << flag;
  const std::string key =
      PresetError("llama-tiny", {"--train.freeze", "model.layers.0,lm_head"});
  EXPECT_TRUE(Has(key, "--train.freeze: train.freeze: 'lm_head'")) << key;

  const TempDir dir;
  const std::string path = (dir.path() / "frozen.ini").string();
  {
    std::ifstream preset(MEMPROF_SOURCE_DIR "/configs/mlp-tiny.ini");
    std::ofstream out(path);
    out << preset.rdbuf() << "freeze = layers.9\n";
  }
  const std::string file = InputErrorOf([&] {
    ParsePredictArgs({"--config", path});
  });
  EXPECT_TRUE(Has(file, path + ":15: key 'train.freeze'")) << file;
  EXPECT_TRUE(Has(file, "'layers.9' names no parameter")) << file;
  EXPECT_TRUE(Has(file, "nearest: layers.0, layers.2, layers.4")) << file;
}

TEST(FreezeValidation, FreezingEverythingOrAnEmptyItemIsRefused) {
  const std::string all = PresetError("mlp-tiny", {"--freeze", "layers"});
  EXPECT_TRUE(Has(all,
                  "--freeze: train.freeze 'layers' freezes every "
                  "parameter, leaving nothing to train"))
      << all;
  EXPECT_TRUE(Has(all, "leave at least one parameter out")) << all;
  const std::string empty =
      PresetError("mlp-tiny", {"--freeze", "layers.0,,layers.2"});
  EXPECT_TRUE(Has(empty,
                  "--freeze: train.freeze 'layers.0,,layers.2' has "
                  "an empty item"))
      << empty;
  const std::string word = PresetError("mlp-tiny", {"--freeze", "all"});
  EXPECT_TRUE(Has(word,
                  "--freeze: train.freeze 'all' freezes every base "
                  "weight, which is for adapters"))
      << word;
  EXPECT_TRUE(Has(InputErrorOf([] {
                    PredictPreset("mlp-tiny", {"--freeze", "layers.0",
                                               "--train.freeze", "layers.2"});
                  }),
                  "--freeze and --train.freeze both given"));
}

TEST(FreezeValidation, WhatIsNotPredictedYetIsRefusedWithTheRemedy) {
  const std::string resnet = PresetError("resnet-tiny", {"--freeze", "fc"});
  EXPECT_TRUE(Has(resnet, "train.freeze is for mlp, gpt and llama")) << resnet;
  const std::string autocast = PresetError(
      "gpt-tiny", {"--freeze", "h.0", "--train.dtype", "bf16-autocast"});
  EXPECT_TRUE(Has(autocast, "use float32 or bfloat16")) << autocast;
  const std::string checkpointed = PresetError(
      "gpt-tiny",
      {"--freeze", "h.0", "--train.activation_checkpointing", "blocks"});
  EXPECT_TRUE(Has(checkpointed, "set activation_checkpointing = none"))
      << checkpointed;
}

// The trained parameters of each CI-sized model with everything but its
// last block frozen.
struct LastBlockCase {
  const char* preset;
  const char* freeze;
  int64_t trained;
};

constexpr LastBlockCase kLastBlock[] = {
    // layers.4 (64 x 64 + 64) and the output layer (64 x 10 + 10).
    {"mlp-tiny", "layers.0,layers.2", 4160 + 650},
    // h.1 (12 d^2 + 13 d) and ln_f (2 d), d = 64.
    {"gpt-tiny", "wte,wpe,h.0", 12 * 64 * 64 + 13 * 64 + 2 * 64},
    // model.layers.1: q, o 64 x 64; k, v 32 x 64; gate, up, down 176 x 64;
    // two norms; and model.norm (the head is tied).
    {"llama-tiny", "model.embed_tokens,model.layers.0",
     2 * 4096 + 2 * 2048 + 3 * 11264 + 2 * 64 + 64},
};

TEST(FrozenPrediction, ModelStateCountsTheTrainedParametersOnly) {
  for (const LastBlockCase& c : kLastBlock) {
    SCOPED_TRACE(c.preset);
    const Prediction all = Predict(PredictPreset(c.preset));
    const Prediction p =
        Predict(PredictPreset(c.preset, {"--freeze", c.freeze}));
    EXPECT_EQ(p.parameters, all.parameters);
    EXPECT_EQ(all.trained_parameters, all.parameters);
    EXPECT_EQ(p.trained_parameters, c.trained);
    EXPECT_EQ(Bytes(p, Category::kWeights), Bytes(all, Category::kWeights));
    EXPECT_EQ(Bytes(p, Category::kGradients), 4 * c.trained);
    EXPECT_EQ(Bytes(p, Category::kOptimizerState), 8 * c.trained);
    EXPECT_EQ(Bytes(p, Category::kDdpBuckets), 4 * c.trained);
    EXPECT_EQ(p.zero.plain_bytes,
              Bytes(p, Category::kWeights) + 12 * c.trained);
    // ZeRO-1 partitions the trained parameters alone.
    const Prediction zero =
        Predict(PredictPreset(c.preset, {"--freeze", c.freeze, "--world-size",
                                         "2", "--ddp.zero_stage", "1"}));
    EXPECT_EQ(zero.owned_parameters[0] + zero.owned_parameters[1], c.trained);
  }
}

// Note [Frozen activations]: a frozen prefix saves nothing, the first
// trained block keeps what its own parameters' gradients need, and the
// backward of the frozen blocks (their workspace) does not run.
TEST(FrozenPrediction, AFrozenPrefixSavesNothingForBackward) {
  const auto names = [](const SizeTable& t, RowKind kind) {
    std::vector<std::string> out;
    for (const SizeRow& row : t.rows) {
      if (row.kind == kind) out.push_back(row.name);
    }
    return out;
  };
  const auto dropped = [&](const SizeTable& all, const SizeTable& frozen,
                           RowKind kind) {
    std::vector<std::string> kept = names(frozen, kind), out;
    for (const std::string& name : names(all, kind)) {
      if (std::find(kept.begin(), kept.end(), name) == kept.end())
        out.push_back(name);
    }
    return out;
  };
  // mlp-tiny: relu 0 feeds a frozen layer; relu 1 is kept by layers.4 for
  // its weight's gradient, relu 2 by its own backward.
  const SizeTable mlp_all = Predict(PredictPreset("mlp-tiny")).table;
  const SizeTable mlp =
      Predict(PredictPreset("mlp-tiny", {"--freeze", "layers.0,layers.2"}))
          .table;
  EXPECT_EQ(dropped(mlp_all, mlp, RowKind::kSaved),
            std::vector<std::string>{"relu 0 output"});
  for (const std::string& name : dropped(mlp_all, mlp, RowKind::kWorkspace)) {
    EXPECT_TRUE(name.rfind("layers.0 backward", 0) == 0 ||
                name.rfind("layers.2 backward", 0) == 0 ||
                name.rfind("relu 0 backward", 0) == 0 ||
                name.rfind("relu 1 backward", 0) == 0)
        << name;
  }
  EXPECT_EQ(dropped(mlp_all, mlp, RowKind::kWorkspace).size(), 2u * 5 + 2 * 3);

  // gpt-tiny: every row of h.0, the positions (wpe's gradient) and ln_f's
  // output (the frozen tied head's weight gradient).
  const SizeTable gpt_all = Predict(PredictPreset("gpt-tiny")).table;
  const SizeTable gpt =
      Predict(PredictPreset("gpt-tiny", {"--freeze", "wte,wpe,h.0"})).table;
  int64_t gone = 0;
  for (const std::string& name : dropped(gpt_all, gpt, RowKind::kSaved)) {
    EXPECT_TRUE(name.rfind("h.0.", 0) == 0 || name == "positions" ||
                name == "ln_f output (lm head input)")
        << name;
    ++gone;
  }
  EXPECT_EQ(gone, 15 + 2);  // h.0's 15 rows (no dropout), and the two
  for (const SizeRow& row : gpt.rows) {
    if (row.kind == RowKind::kParameter) {
      EXPECT_EQ(row.frozen, row.name.rfind("h.1.", 0) != 0 &&
                                row.name.rfind("ln_f.", 0) != 0)
          << row.name;
    }
  }
  // Nothing is left for the embeddings' backward.
  EXPECT_EQ(Predict(PredictPreset("gpt-tiny", {"--freeze", "wte,wpe,h.0"}))
                .late_backward.Total(),
            0);

  // llama-tiny: the first trained layer's input_layernorm keeps no input
  // or rstd (only its input's gradient would need them).
  const SizeTable llama =
      Predict(PredictPreset("llama-tiny",
                            {"--freeze", "model.embed_tokens,model.layers.0"}))
          .table;
  const std::vector<std::string> saved = names(llama, RowKind::kSaved);
  for (const char* name : {"model.layers.0.input_layernorm rstd",
                           "model.layers.1.input_layernorm input (residual)",
                           "model.layers.1.input_layernorm rstd"}) {
    EXPECT_EQ(std::find(saved.begin(), saved.end(), name), saved.end()) << name;
  }
  EXPECT_NE(std::find(saved.begin(), saved.end(),
                      "model.layers.1.input_layernorm normalized input"),
            saved.end());
}

// A frozen Linear inside trained layers keeps no input for its weight's
// gradient: the rows only that gradient needed go.
TEST(FrozenPrediction, AFrozenLinearInsideTrainedLayersKeepsNoInput) {
  const SizeTable all = Predict(PredictPreset("gpt-tiny")).table;
  const SizeTable t =
      Predict(PredictPreset("gpt-tiny", {"--freeze", "h.1.mlp.c_proj"})).table;
  EXPECT_EQ(all.Bytes(RowKind::kSaved) - t.Bytes(RowKind::kSaved),
            4 * 4 * 32 * 4 * 64);  // the gelu output, [B, T, 4d] at B = 4
}

// fit prices a run with freezing by its smaller model state: gpt-tiny's
// (20 bytes per parameter, 2.26 MiB) is over 2 MiB; frozen but for its
// last block it is 1.22 MiB, and micro-batch 3 fits.
TEST(FrozenPrediction, FitPricesTheSmallerModelState) {
  const int64_t budget = int64_t{2} << 20;
  const FitAnswer plain = Fit(PredictPreset("gpt-tiny"), budget, FitDevice{});
  EXPECT_EQ(plain.verdict, FitVerdict::kModelStateOverflow);
  const RunConfig config =
      PredictPreset("gpt-tiny", {"--freeze", "wte,wpe,h.0"});
  const FitAnswer frozen = Fit(config, budget, FitDevice{});
  EXPECT_EQ(frozen.model_state_bytes, 4 * 118528 + 16 * 50112);
  EXPECT_EQ(frozen.verdict, FitVerdict::kActivationOverflow);
  EXPECT_EQ(frozen.largest_micro_batch, 3);
  EXPECT_TRUE(Has(FormatFit(frozen, config),
                  "118,528 parameters: 50,112 trained (20 bytes each"));
}

TEST(FrozenPrediction, PredictStatesTheSplitAndMarksTheTable) {
  const RunConfig config =
      PredictPreset("gpt-tiny", {"--freeze", "wte,wpe,h.0"});
  const std::string text = FormatPrediction(Predict(config), config, 0);
  EXPECT_TRUE(Has(text,
                  "118,528 parameters: 50,112 trained (20 bytes each: "
                  "weights 4 + gradients 4 + optimizer 8 + DDP buckets "
                  "4), 68,416 frozen (4 bytes each: the weight alone)"))
      << text;
  EXPECT_TRUE(Has(text, "4P_t (P_t = 50,112 trained of 118,528)")) << text;
  const std::string table = FormatSizeTable(Predict(config).table);
  EXPECT_TRUE(Has(table, "wte.weight")) << table;
  size_t frozen = 0;
  for (size_t at = 0;
       (at = table.find("parameter, frozen", at)) != std::string::npos; ++at) {
    ++frozen;
  }
  EXPECT_EQ(frozen, 2u + 12);  // wte, wpe and h.0's twelve
}

}  // namespace
}  // namespace memprof
