// [lora] in arithmetic (no tensors): its targets, its validation, the
// adapters' rows in the size tables and what the prediction counts for
// them (Note [LoRA adapters]).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "models/lora_rows.h"
#include "profiler/base/errors.h"
#include "profiler/cli/predict_command.h"
#include "profiler/predict/prediction.h"
#include "tests/input_error_of.h"
#include "tests/preset_config.h"

namespace memprof {
namespace {

std::string PresetError(const std::string& name,
                        std::vector<std::string> extra) {
  return InputErrorOf([&] { PredictPreset(name, std::move(extra)); });
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

int64_t Bytes(const Prediction& p, Category c) { return p.bytes[Index(c)]; }

TEST(LoraTargets, MatchedByNameSuffixAsPeftMatches) {
  EXPECT_EQ(LoraTargets("q_proj, v_proj"),
            (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_TRUE(TargetMatches("c_proj", "h.0.attn.c_proj"));
  EXPECT_TRUE(TargetMatches("c_proj", "h.0.mlp.c_proj"));
  EXPECT_TRUE(TargetMatches("attn.c_proj", "h.0.attn.c_proj"));
  EXPECT_FALSE(TargetMatches("attn.c_proj", "h.0.mlp.c_proj"));
  EXPECT_FALSE(TargetMatches("proj", "h.0.mlp.c_proj"));
  EXPECT_TRUE(TargetMatches("layers.2", "layers.2"));
  // Both GPT-2 c_proj with "c_proj"; the attention's alone with
  // "attn.c_proj".
  const RunConfig both = PredictPreset(
      "gpt-tiny", {"--lora-rank", "4", "--lora-targets", "c_proj"});
  EXPECT_EQ(AdaptedModules(both),
            (std::vector<std::string>{"h.0.attn.c_proj", "h.0.mlp.c_proj",
                                      "h.1.attn.c_proj", "h.1.mlp.c_proj"}));
  const RunConfig attention = PredictPreset(
      "gpt-tiny", {"--lora-rank", "4", "--lora-targets", "attn.c_proj"});
  EXPECT_EQ(AdaptedModules(attention),
            (std::vector<std::string>{"h.0.attn.c_proj", "h.1.attn.c_proj"}));
}

// Rank 4 on two targets: r (in + out) per target, every base parameter
// frozen.
struct AdapterCase {
  const char* preset;
  const char* targets;
  int64_t adapters;
};

constexpr AdapterCase kAdapterCases[] = {
    // Two layers of q_proj (64 -> 64) and v_proj (64 -> 32): 4 (64 + 64) +
    // 4 (64 + 32).
    {"llama-tiny", "q_proj,v_proj", 2 * (4 * (64 + 64) + 4 * (64 + 32))},
    // Two blocks of c_attn (64 -> 192) and attn.c_proj (64 -> 64).
    {"gpt-tiny", "c_attn,attn.c_proj", 2 * (4 * (64 + 192) + 4 * (64 + 64))},
    // mlp-tiny's layers.0 (32 -> 64) and layers.6, the output (64 -> 10).
    {"mlp-tiny", "layers.0,layers.6", 4 * (32 + 64) + 4 * (64 + 10)},
};

TEST(LoraTable, AdapterParametersAreRankTimesInPlusOutPerTarget) {
  for (const AdapterCase& c : kAdapterCases) {
    SCOPED_TRACE(c.preset);
    const RunConfig plain = PredictPreset(c.preset);
    const RunConfig config = PredictPreset(
        c.preset, {"--lora-rank", "4", "--lora-targets", c.targets});
    const Prediction base = Predict(plain);
    const Prediction p = Predict(config);
    EXPECT_EQ(p.trained_parameters, c.adapters);
    EXPECT_EQ(p.parameters, base.parameters + c.adapters);
    int64_t adapter_elements = 0;
    for (const SizeRow& row : p.table.rows) {
      if (row.kind != RowKind::kParameter) continue;
      EXPECT_EQ(row.adapter, !row.frozen) << row.name;
      const bool named =
          Has(row.name, ".lora_A.weight") || Has(row.name, ".lora_B.weight");
      EXPECT_EQ(named, row.adapter) << row.name;
      if (row.adapter) adapter_elements += row.Elements();
    }
    EXPECT_EQ(adapter_elements, c.adapters);
    // Gradients, Adam's moments and buckets: the adapters' alone (float32).
    EXPECT_EQ(Bytes(p, Category::kGradients), 4 * c.adapters);
    EXPECT_EQ(Bytes(p, Category::kOptimizerState), 8 * c.adapters);
    EXPECT_EQ(Bytes(p, Category::kDdpBuckets), 4 * c.adapters);
    EXPECT_EQ(Bytes(p, Category::kWeights),
              Bytes(base, Category::kWeights) + 4 * c.adapters);
    // The frozen base keeps less than the adapters' A outputs add in the
    // transformers (the layers before the first adapter, the tied head's
    // input); the MLP keeps every ReLU output still.
    if (std::string(c.preset) != "mlp-tiny") {
      EXPECT_LT(Bytes(p, Category::kActivations),
                Bytes(base, Category::kActivations));
    }
  }
}

TEST(LoraTable, PredictTableMarksTheAdapterRows) {
  const RunConfig config = PredictPreset(
      "llama-tiny", {"--lora-rank", "4", "--lora-targets", "q_proj,v_proj"});
  const std::string table = FormatSizeTable(Predict(config).table);
  EXPECT_TRUE(Has(table, "model.layers.0.self_attn.q_proj.lora_A.weight"))
      << table;
  EXPECT_TRUE(Has(table, "parameter, adapter")) << table;
  EXPECT_TRUE(Has(table, "[r, d]")) << table;
  EXPECT_TRUE(Has(table, "q_proj lora_A output (lora_B input)")) << table;
  const std::string sentence =
      TrainedFrozenSentence(108864 + 1792, 1792, config, /*buckets=*/true);
  EXPECT_EQ(sentence,
            "base 108,864 parameters frozen (4 bytes each: the weight "
            "alone); adapters 1,792 parameters trained (20 bytes each: "
            "weights 4 + gradients 4 + optimizer 8 + DDP buckets 4)");
}

// Each error names where the value came from, the key and the remedy.
// The row of `table` named `name`; fails the test when there is none.
const SizeRow* RowNamed(const SizeTable& table, const std::string& name) {
  for (const SizeRow& row : table.rows) {
    if (row.name == name) return &row;
  }
  ADD_FAILURE() << "no row " << name;
  return nullptr;
}

// Note [LoRA under autocast]: with the recipe's bfloat16 residual stream,
// GPT's layer norms keep bfloat16 input, mean and rstd on the CPU (CPU
// autocast runs layer_norm in its input's dtype) and float32 on a GPU
// (CUDA autocast runs it in float32): 16.5 KiB a norm on gpt-tiny.
TEST(LoraTable, TheRecipesGptLayerNormsKeepBfloat16OnTheCpuOnly) {
  const std::vector<std::string> recipe = {
      "--lora-rank",    "4",
      "--lora-targets", "c_attn,attn.c_proj",
      "--train.dtype",  "bf16-autocast"};
  std::vector<std::string> on_gpu = recipe;
  on_gpu.insert(on_gpu.end(), {"--train.device", "cuda"});
  const Prediction cpu = Predict(PredictPreset("gpt-tiny", recipe));
  const Prediction gpu = Predict(PredictPreset("gpt-tiny", on_gpu));
  // What the norms keep: the input, mean and rstd of h.0.ln_2, h.1.ln_1,
  // h.1.ln_2 and ln_f (h.0.ln_1's input needs no gradient).
  const auto norm_rows = [](const SizeTable& table) {
    std::vector<const SizeRow*> rows;
    for (const SizeRow& row : table.rows) {
      if (row.kind == RowKind::kSaved &&
          row.name.find("ln_") != std::string::npos &&
          (Has(row.name, " input (residual)") || Has(row.name, " mean") ||
           Has(row.name, " rstd")))
        rows.push_back(&row);
    }
    return rows;
  };
  const std::vector<const SizeRow*> on_cpu = norm_rows(cpu.table);
  const std::vector<const SizeRow*> on_cuda = norm_rows(gpu.table);
  ASSERT_EQ(on_cpu.size(), 12u);
  ASSERT_EQ(on_cuda.size(), 12u);
  for (size_t i = 0; i < on_cpu.size(); ++i) {
    SCOPED_TRACE(on_cpu[i]->name);
    EXPECT_EQ(on_cpu[i]->name, on_cuda[i]->name);
    EXPECT_EQ(on_cpu[i]->dtype, Dtype::kBFloat16);
    EXPECT_EQ(on_cuda[i]->dtype, Dtype::kFloat32);
  }
  // Without the recipe (float32 adapters on a float32 base) the residual
  // stream is float32 on either device.
  const Prediction plain =
      Predict(PredictPreset("gpt-tiny", {"--lora-rank", "4", "--lora-targets",
                                         "c_attn,attn.c_proj"}));
  for (const SizeRow* row : norm_rows(plain.table)) {
    EXPECT_EQ(row->dtype, Dtype::kFloat32) << row->name;
  }
}

// Note [LoRA dropout]: each adapter keeps the dropout's output (A's input)
// instead of the Linear's input, and the dropout's float32 noise where its
// input requires grad: not for layer 0's q_proj (the frozen embedding feeds
// it), for layer 1's.
TEST(LoraTable, DropoutKeepsItsOutputAndNoiseNotTheInput) {
  const Prediction p =
      Predict(PredictPreset("llama-tiny", {"--lora-rank", "4", "--lora-targets",
                                           "q_proj", "--lora-dropout", "0.1"}));
  const std::string l0 = "model.layers.0.self_attn.q_proj",
                    l1 = "model.layers.1.self_attn.q_proj";
  for (const std::string& module : {l0, l1}) {
    const SizeRow* dropped =
        RowNamed(p.table, module + " lora dropout output (lora_A input)");
    if (dropped == nullptr) continue;
    EXPECT_EQ(dropped->shape, (std::vector<int64_t>{4, 32, 64})) << module;
    const SizeRow* a_output =
        RowNamed(p.table, module + " lora_A output (lora_B input)");
    if (a_output == nullptr) continue;
    EXPECT_EQ(a_output->shape, (std::vector<int64_t>{4, 32, 4})) << module;
  }
  int noise = 0;
  for (const SizeRow& row : p.table.rows) {
    if (row.name == l1 + " lora dropout noise") ++noise;
    EXPECT_NE(row.name, l0 + " lora dropout noise");
    // The input layer norm's output: kept for nothing now (q_proj's base
    // weight is frozen, A takes the dropout's output).
    EXPECT_EQ(row.name.find("input_layernorm output"), std::string::npos)
        << row.name;
  }
  EXPECT_EQ(noise, 1);
}

TEST(LoraValidation, EachKeyIsRefusedWithTheKeyAndTheRemedy) {
  const std::string rank = PresetError(
      "llama-tiny", {"--lora-rank", "0", "--lora-targets", "q_proj"});
  EXPECT_TRUE(Has(rank,
                  "--lora-targets: lora.targets is set, but lora.rank is 0 "
                  "(no adapters)"))
      << rank;
  const std::string alone = PresetError("llama-tiny", {"--lora-alpha", "16"});
  EXPECT_TRUE(Has(alone, "--lora-alpha: lora.alpha is set, but lora.rank is 0"))
      << alone;
  const std::string checkpointed =
      PresetError("llama-tiny", {"--lora-rank", "4", "--lora-targets", "q_proj",
                                 "--train.activation_checkpointing", "blocks"});
  EXPECT_TRUE(Has(checkpointed,
                  "--train.activation_checkpointing: "
                  "train.activation_checkpointing blocks with LoRA adapters "
                  "(lora.rank 4) is not predicted yet"))
      << checkpointed;
  const std::string negative = PresetError(
      "llama-tiny", {"--lora.rank", "-2", "--lora-targets", "q_proj"});
  EXPECT_TRUE(Has(negative, "--lora.rank: lora.rank -2")) << negative;
  const std::string alpha = PresetError(
      "llama-tiny",
      {"--lora-rank", "4", "--lora-targets", "q_proj", "--lora-alpha", "0"});
  EXPECT_TRUE(Has(alpha,
                  "--lora-alpha: lora.alpha 0: the scaling alpha / "
                  "rank needs alpha > 0"))
      << alpha;
  for (const char* bad : {"1", "-0.1"}) {
    const std::string dropout =
        PresetError("gpt-tiny", {"--lora-rank", "4", "--lora-targets", "c_attn",
                                 "--lora-dropout", bad});
    EXPECT_TRUE(Has(dropout, "--lora-dropout: lora.dropout")) << dropout;
    EXPECT_TRUE(Has(dropout, "a dropout probability in [0, 1)")) << dropout;
  }
  const std::string empty = PresetError("llama-tiny", {"--lora-rank", "4"});
  EXPECT_TRUE(Has(empty,
                  "--lora-rank: lora.rank 4 adds adapters, but lora.targets "
                  "is empty"))
      << empty;
  EXPECT_TRUE(Has(empty,
                  "this llama has self_attn.q_proj, self_attn.k_proj, "
                  "self_attn.v_proj, self_attn.o_proj, mlp.gate_proj, "
                  "mlp.up_proj, mlp.down_proj"))
      << empty;
  const std::string nothing = PresetError(
      "gpt-tiny", {"--lora-rank", "4", "--lora-targets", "c_attn,q_proj"});
  EXPECT_TRUE(Has(nothing,
                  "--lora-targets: lora.targets: 'q_proj' matches "
                  "no Linear module of this gpt"))
      << nothing;
  EXPECT_TRUE(Has(nothing,
                  "it has attn.c_attn, attn.c_proj, mlp.c_fc, "
                  "mlp.c_proj"))
      << nothing;
  const std::string mlp = PresetError(
      "mlp-tiny", {"--lora-rank", "4", "--lora-targets", "layers.1"});
  EXPECT_TRUE(Has(mlp, "it has layers.0, layers.2, layers.4, layers.6")) << mlp;
  const std::string item = PresetError(
      "gpt-tiny", {"--lora-rank", "4", "--lora-targets", "c_attn,,c_fc"});
  EXPECT_TRUE(Has(item, "lora.targets 'c_attn,,c_fc' has an empty item"))
      << item;
  const std::string resnet =
      PresetError("resnet-tiny", {"--lora-rank", "4", "--lora-targets", "fc"});
  EXPECT_TRUE(Has(resnet,
                  "[lora] is for mlp, gpt and llama; resnet has no "
                  "adapters: remove [lora]"))
      << resnet;
}

TEST(LoraValidation, FreezeBesideLoraIsAllOrNothing) {
  // "all" says what [lora] does.
  const RunConfig all = PredictPreset(
      "gpt-tiny",
      {"--lora-rank", "4", "--lora-targets", "c_attn", "--freeze", "all"});
  EXPECT_EQ(Predict(all).trained_parameters, 2 * 4 * (64 + 192));
  const std::string prefix = PresetError(
      "gpt-tiny",
      {"--lora-rank", "4", "--lora-targets", "c_attn", "--freeze", "h.0"});
  EXPECT_TRUE(Has(prefix, "--freeze: train.freeze 'h.0' beside [lora]"))
      << prefix;
  EXPECT_TRUE(Has(prefix, "remove train.freeze or write all")) << prefix;
  const std::string alone = PresetError("gpt-tiny", {"--freeze", "all"});
  EXPECT_TRUE(Has(alone,
                  "--freeze: train.freeze 'all' freezes every base "
                  "weight, which is for adapters: add a [lora] "
                  "section"))
      << alone;
}

}  // namespace
}  // namespace memprof
