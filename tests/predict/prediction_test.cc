// The size tables and the prediction: pure arithmetic, no tensors. Published
// parameter counts, the closed-form activation formulas of
// docs/prediction.md, and the model-state statement of `memprof predict`.
#include "profiler/predict/prediction.h"

#include <algorithm>
#include <sstream>

#include <gtest/gtest.h>

#include "profiler/base/human_bytes.h"
#include "profiler/cli/config_cli.h"
#include "profiler/cli/predict_command.h"
#include "tests/preset_config.h"

namespace memprof {
namespace {

int64_t Bytes(const Prediction& p, Category c) { return p.bytes[Index(c)]; }

TEST(SizeTable, PresetsHaveThePublishedParameterCounts) {
  // GPT-2 (Radford et al. 2019, as counted with the tied output projection)
  // and torchvision's ResNets.
  EXPECT_EQ(Predict(PredictPreset("gpt2-small")).parameters, 124439808);
  EXPECT_EQ(Predict(PredictPreset("gpt2-medium")).parameters, 354823168);
  EXPECT_EQ(Predict(PredictPreset("gpt2-large")).parameters, 774030080);
  EXPECT_EQ(Predict(PredictPreset("gpt2-xl")).parameters, 1557611200);
  EXPECT_EQ(Predict(PredictPreset("resnet50")).parameters, 25557032);
  EXPECT_EQ(Predict(PredictPreset("resnet18")).parameters, 11689512);
  EXPECT_EQ(Predict(PredictPreset("mlp-tiny")).parameters, 11082);
}

TEST(SizeTable, GptParametersFollowTheClosedForm) {
  // P = V d + N d + L (12 d^2 + 13 d) + 2 d, N = gpt.positions (seq_len
  // when 0): the sequence length itself leaves P as it is.
  for (const auto& [layers, d, heads, t, v, n] :
       std::vector<std::array<int64_t, 6>>{{2, 64, 4, 32, 256, 0},
                                           {3, 48, 6, 17, 101, 0},
                                           {3, 48, 6, 17, 101, 40},
                                           {12, 768, 12, 256, 50257, 1024},
                                           {24, 2048, 16, 2048, 50257, 0}}) {
    GptConfig c{layers, d, heads, t, v, 0, n};
    EXPECT_EQ(
        GptSizeTable(c, 1).Elements(RowKind::kParameter),
        v * d + (n > 0 ? n : t) * d + layers * (12 * d * d + 13 * d) + 2 * d);
  }
  // GPT-2 small trained on 256 tokens is still GPT-2 small.
  EXPECT_EQ(GptSizeTable(GptConfig{12, 768, 12, 256, 50257, 0, 1024}, 1)
                .Elements(RowKind::kParameter),
            124439808);
}

// docs/prediction.md's formula for GPT activations, fp32, no dropout: per
// layer 64 BTd + 4 B h T^2 + 16 BT; outside the layers
// 8 BTd + 8 BT + 4 BTV + T^2 + 8 T + 8.
int64_t GptActivationFormula(const GptConfig& c, int64_t b) {
  const int64_t t = c.seq_len, d = c.d_model, h = c.heads, v = c.vocab;
  return c.layers * (64 * b * t * d + 4 * b * h * t * t + 16 * b * t) +
         8 * b * t * d + 8 * b * t + 4 * b * t * v + t * t + 8 * t + 8;
}

TEST(SizeTable, GptActivationsAreTheReadmeFormula) {
  for (int64_t b : {1, 2, 5}) {
    for (const GptConfig& c :
         {GptConfig{2, 64, 4, 32, 256, 0}, GptConfig{5, 96, 3, 40, 77, 0},
          GptConfig{12, 768, 12, 1024, 50257, 0}}) {
      EXPECT_EQ(GptSizeTable(c, b).Bytes(RowKind::kSaved),
                GptActivationFormula(c, b))
          << "B=" << b << " d=" << c.d_model;
    }
  }
}

// Note [Checkpointed activations]: forward keeps one [B, T, d] input per
// block besides the rows outside the blocks; each rerun saves what a plain
// block saves (its input is the kept one, its output is new).
TEST(SizeTable, CheckpointedGptKeepsOneInputPerBlock) {
  for (int64_t b : {1, 2, 5}) {
    for (const GptConfig& c :
         {GptConfig{2, 64, 4, 32, 256, 0}, GptConfig{5, 96, 3, 40, 77, 0.1},
          GptConfig{12, 768, 12, 1024, 50257, 0}}) {
      const int64_t T = c.seq_len, d = c.d_model, V = c.vocab;
      const SizeTable plain = GptSizeTable(c, b);
      const SizeTable checkpointed = GptSizeTable(c, b, true);
      const int64_t inputs = c.layers * 4 * b * T * d;
      const int64_t embedding_noise = c.dropout > 0 ? 4 * b * T * d : 0;
      // positions, mask, (noise), the inputs, ln_f's four, log_softmax,
      // total_weight and the loss.
      EXPECT_EQ(checkpointed.Bytes(RowKind::kSaved),
                8 * T + T * T + embedding_noise + inputs +
                    (8 * b * T * d + 8 * b * T) + 4 * b * T * V + 8)
          << "B=" << b << " d=" << d;
      EXPECT_EQ(checkpointed.Bytes(RowKind::kRecomputed),
                plain.Bytes(RowKind::kSaved) -
                    checkpointed.Bytes(RowKind::kSaved) + inputs)
          << "B=" << b << " d=" << d;
      EXPECT_EQ(checkpointed.blocks, c.layers);
      EXPECT_EQ(plain.blocks, c.layers);  // a moment, checkpointed or not
    }
  }
}

// docs/mixed-precision-and-checkpointing.md's formulas for a checkpointed
// GPT (fp32, no dropout): held = L 4BTd + 8BTd + 8BT + 4BTV + T^2 + 8T + 8;
// at most = max(held, L 4BTd + (64BTd + 4BhT^2 + 16BT) + T^2 + 8T + 4).
TEST(Prediction, CheckpointedGptActivationsAreTheDocFormula) {
  for (const std::vector<std::string>& extra :
       std::vector<std::vector<std::string>>{
           {"--micro-batch", "1"},
           {"--micro-batch", "4"},
           {"--micro-batch", "3", "--gpt.layers", "5", "--gpt.d_model", "96",
            "--gpt.heads", "3", "--gpt.seq_len", "40", "--gpt.vocab", "77"},
           {"--micro-batch", "2", "--gpt.vocab", "50257"}}) {
    std::vector<std::string> words = extra;
    words.insert(words.end(), {"--train.activation_checkpointing", "blocks"});
    const RunConfig config = PresetConfig("gpt-tiny", words);
    const GptConfig& c = config.gpt;
    const int64_t B = MicroBatch(config), T = c.seq_len, d = c.d_model,
                  h = c.heads, L = c.layers, V = c.vocab;
    const int64_t held = L * 4 * B * T * d + 8 * B * T * d + 8 * B * T +
                         4 * B * T * V + T * T + 8 * T + 8;
    const int64_t at_most =
        std::max(held, L * 4 * B * T * d +
                           (64 * B * T * d + 4 * B * h * T * T + 16 * B * T) +
                           T * T + 8 * T + 4);
    const Prediction p = Predict(config);
    // Early backward: what forward left for it.
    EXPECT_EQ(p.early_backward.bytes[Index(Category::kActivations)], held)
        << extra[1];
    EXPECT_EQ(p.bytes[Index(Category::kActivations)], at_most) << extra[1];
  }
}

TEST(SizeTable, GptDropoutAddsItsNoiseAndTheAttentionDropoutOutput) {
  GptConfig c{3, 64, 4, 32, 256, 0};
  const int64_t b = 2, t = c.seq_len, d = c.d_model, h = c.heads;
  const int64_t without = GptSizeTable(c, b).Bytes(RowKind::kSaved);
  c.dropout = 0.1;
  // Per layer: two residual noises 8 BTd, attention noise and output
  // 8 B h T^2; once: the embedding noise 4 BTd.
  EXPECT_EQ(GptSizeTable(c, b).Bytes(RowKind::kSaved) - without,
            c.layers * (8 * b * t * d + 8 * b * h * t * t) + 4 * b * t * d);
}

TEST(SizeTable, GptPerLayerActivationsAgainstKorthikanti) {
  // Korthikanti et al. 2022: s b h (34 + 5 a s / h) bytes per layer in 16-bit
  // with dropout. Without the two residual dropout masks (2 sbh) and the
  // attention dropout (3 a s^2 b), and at 4 bytes per element instead of 2,
  // that is 64 sbh + 4 a s^2 b; memprof also counts LayerNorm's statistics.
  const GptConfig c{1, 256, 8, 128, 64, 0};
  const int64_t b = 3, s = c.seq_len, h = c.d_model, a = c.heads;
  const GptConfig none{0, 256, 8, 128, 64, 0};
  const int64_t per_layer = GptSizeTable(c, b).Bytes(RowKind::kSaved) -
                            GptSizeTable(none, b).Bytes(RowKind::kSaved);
  const int64_t korthikanti_16bit = s * b * h * 34 + 5 * a * s * s * b;
  // Their 1-byte masks: s b h per residual dropout, a s^2 b for the
  // attention's; the attention dropout's 2-byte output 2 a s^2 b.
  const int64_t adapted =
      2 * (korthikanti_16bit - 2 * s * b * h - 3 * a * s * s * b);
  EXPECT_EQ(per_layer, 64 * s * b * h + 4 * a * s * s * b + 16 * s * b);
  EXPECT_EQ(per_layer - 16 * s * b, adapted);
}

TEST(SizeTable, MlpActivationsAreTheReadmeFormula) {
  for (int64_t b : {1, 2, 5, 8}) {
    const MlpConfig c{32, 64, 3, 10};
    EXPECT_EQ(MlpSizeTable(c, b).Bytes(RowKind::kSaved),
              4 * b * (c.depth * c.hidden + c.output) + 8);
  }
}

TEST(SizeTable, ResnetBuffersAreTwoFloatsPerChannelAndACounterPerBatchNorm) {
  const ResnetConfig c{50, 64, 224, 1000};
  const SizeTable t = ResnetSizeTable(c, 1);
  int64_t batch_norms = 0, channels = 0;
  for (const SizeRow& row : t.rows) {
    if (row.kind == RowKind::kBuffer &&
        row.name.find("running_mean") != std::string::npos) {
      ++batch_norms;
      channels += row.Elements();
    }
  }
  EXPECT_EQ(batch_norms, 53);  // 1 + 3 per block x 16 + 4 downsamples
  EXPECT_EQ(t.Bytes(RowKind::kBuffer), 8 * channels + 8 * batch_norms);
}

TEST(SizeTable, ResnetActivationsScaleWithTheBatchExceptPerChannelStatistics) {
  const ResnetConfig c{18, 8, 128, 10};
  const SizeTable one = ResnetSizeTable(c, 1), five = ResnetSizeTable(c, 5);
  int64_t stats = 0;
  for (const SizeRow& row : one.rows) {
    if (row.kind == RowKind::kSaved && row.shape.size() == 1) {
      stats += row.Bytes();  // save_mean, save_invstd [C]
    }
  }
  // Everything else is per sample, except total_weight and the loss.
  EXPECT_EQ(five.Bytes(RowKind::kSaved) - stats - 8,
            5 * (one.Bytes(RowKind::kSaved) - stats - 8));
}

// The bytes-per-parameter statement follows the dtype and the optimizer,
// and is the prediction's own figure: gpt-tiny has no buffers, so its
// model state per parameter is exactly the statement's sum.
TEST(Prediction, BytesPerParameterFollowTheDtypeAndTheOptimizer) {
  struct Case {
    std::vector<std::string> flags;
    int64_t state;  // weights + gradients + optimizer + buckets
    std::string note;
  };
  for (const Case& c : std::vector<Case>{
           {{},
            20,
            "fp32 + Adam: 4 each for weights and gradients, 8 for "
            "the moments, 4 for DDP buckets"},
           {{"--train.dtype", "bfloat16"},
            10,
            "bf16 + Adam: 2 each for weights and gradients, 4 for the "
            "moments, 2 for DDP buckets"},
           {{"--train.dtype", "bf16-autocast"},
            20,
            "and up to 2 more, outside model state, for the weights' "
            "bfloat16 copies"},
           {{"--train.optimizer", "sgd", "--train.momentum", "0.9",
             "--train.dtype", "bfloat16"},
            8,
            "bf16 + momentum SGD: 2 each for weights and gradients, 2 for "
            "the momentum buffer"},
           {{"--train.optimizer", "sgd", "--ddp.gradient_as_bucket_view",
             "true"},
            8,
            "fp32 + SGD: 4 each for weights and gradients, 0 for the "
            "optimizer (no state)"}}) {
    const RunConfig config = PredictPreset("gpt-tiny", c.flags);
    SCOPED_TRACE(config.train.dtype + " " + config.train.optimizer);
    EXPECT_EQ(BytesPerParameterOf(config).State(), c.state);
    EXPECT_EQ(Predict(config).model_state_bytes_per_parameter, c.state);
    EXPECT_NE(BytesPerParameterNote(config).find(c.note), std::string::npos)
        << BytesPerParameterNote(config);
  }
}

TEST(Prediction, ModelStateIsSixteenBytesPerParameterPlusBuckets) {
  const Prediction p = Predict(PredictPreset("gpt2-small"));
  const int64_t n = p.parameters;
  EXPECT_EQ(Bytes(p, Category::kWeights), 4 * n);
  EXPECT_EQ(Bytes(p, Category::kGradients), 4 * n);
  EXPECT_EQ(Bytes(p, Category::kOptimizerState), 8 * n);
  EXPECT_EQ(Bytes(p, Category::kDdpBuckets), 4 * n);
  EXPECT_DOUBLE_EQ(p.model_state_bytes_per_parameter, 20.0);

  const Prediction view = Predict(
      PredictPreset("gpt2-small", {"--ddp.gradient_as_bucket_view", "true"}));
  EXPECT_EQ(Bytes(view, Category::kDdpBuckets), 0);
  EXPECT_EQ(Bytes(view, Category::kGradients), 4 * n);

  const Prediction sgd =
      Predict(PredictPreset("gpt2-small", {"--train.optimizer", "sgd"}));
  EXPECT_EQ(Bytes(sgd, Category::kOptimizerState), 0);

  const Prediction momentum = Predict(PredictPreset(
      "gpt2-small", {"--train.optimizer", "sgd", "--train.momentum", "0.9"}));
  EXPECT_EQ(Bytes(momentum, Category::kOptimizerState), 4 * n);
  EXPECT_DOUBLE_EQ(momentum.model_state_bytes_per_parameter, 16.0);
}

// Note [Predicted on a GPU]: each tensor at its request rounded to 512 B.
TEST(Prediction, OnAGpuEachTensorIsRoundedTo512Bytes) {
  const Prediction cpu = Predict(PredictPreset("gpt2-small"));
  const Prediction gpu =
      Predict(PredictPreset("gpt2-small", {"--train.device", "cuda"}));
  int64_t weights = 0, largest = 0;
  for (const SizeRow& row : gpu.table.rows) {
    if (row.kind == RowKind::kParameter || row.kind == RowKind::kBuffer) {
      weights += (row.Bytes() + 511) / 512 * 512;
    }
    if (row.kind == RowKind::kParameter)
      largest = std::max(largest, row.Bytes());
  }
  EXPECT_EQ(Bytes(gpu, Category::kWeights), weights);
  // gpt2-small's tensors are whole multiples of 512 B; gpt-tiny's 64-float
  // biases and LayerNorm vectors (256 B) are not.
  EXPECT_EQ(Bytes(gpu, Category::kWeights), Bytes(cpu, Category::kWeights));
  const Prediction tiny_cpu = Predict(PredictPreset("gpt-tiny"));
  const Prediction tiny_gpu =
      Predict(PredictPreset("gpt-tiny", {"--train.device", "cuda"}));
  EXPECT_GT(Bytes(tiny_gpu, Category::kWeights),
            Bytes(tiny_cpu, Category::kWeights));
  // Gradients and the two Adam moments: one tensor per parameter each.
  EXPECT_EQ(Bytes(gpu, Category::kGradients), weights);
  EXPECT_EQ(Bytes(gpu, Category::kOptimizerState), 2 * weights);
  int64_t buckets = 0;
  for (int64_t bucket : RebuiltBuckets(gpu.table, PredictPreset("gpt2-small")))
    buckets += (bucket + 511) / 512 * 512;
  EXPECT_EQ(Bytes(gpu, Category::kDdpBuckets), buckets);
  EXPECT_EQ(gpu.optimizer_step.bytes[Index(Category::kTemporaries)],
            2 * ((largest + 511) / 512 * 512));
  EXPECT_EQ(gpu.optimizer_step.bytes[Index(Category::kActivations)], 512);
  EXPECT_EQ(Bytes(gpu, Category::kInputs), 2 * 1024 * 8);  // [1, 1024] int64
}

TEST(Prediction, ModelStateDoesNotShrinkWithTheWorldSizeButActivationsDo) {
  const Prediction one =
      Predict(PredictPreset("gpt-1.3b", {"--global-batch", "8"}));
  const Prediction eight = Predict(
      PredictPreset("gpt-1.3b", {"--global-batch", "8", "--world-size", "8"}));
  EXPECT_EQ(ModelStateBytes(one.bytes), ModelStateBytes(eight.bytes));
  EXPECT_EQ(one.micro_batch, 8);
  EXPECT_EQ(eight.micro_batch, 1);
  EXPECT_GT(Bytes(one, Category::kActivations),
            7 * Bytes(eight, Category::kActivations));
}

TEST(Prediction, PredictStatesTwentyOneGigabytesForTheOnePointThreeBillionGpt) {
  const RunConfig config = PredictPreset("gpt-1.3b", {"--world-size", "8"});
  const Prediction p = Predict(config);
  EXPECT_EQ(p.parameters, 1315723264);
  const std::string text = FormatPrediction(p, config);
  EXPECT_NE(text.find("weights 4 + gradients 4 + optimizer 8 = " +
                      HumanBytes(16 * p.parameters)),
            std::string::npos)
      << text;
  EXPECT_EQ(HumanBytes(16 * p.parameters), "19.6 GiB");
  EXPECT_NE(text.find("data parallelism does not shrink it"),
            std::string::npos);
  EXPECT_NE(text.find("the 8 ranks hold 8 copies"), std::string::npos);
  const auto json = ToJson(p, config);
  EXPECT_EQ(json["schema"], "memprof.prediction/1.4");
  EXPECT_EQ(json["cuda"]["requested_bytes"].get<int64_t>(), p.Peak().Total());
  EXPECT_GE(json["cuda"]["reserved_bytes"].get<int64_t>(),
            json["cuda"]["allocated_bytes"].get<int64_t>());
  EXPECT_EQ(json["model_state"]["bytes_per_rank"].get<int64_t>(),
            20 * p.parameters);
  EXPECT_EQ(json["model_state"]["group_bytes"].get<int64_t>(),
            8 * 20 * p.parameters);
}

TEST(Prediction, ZeroStagesPartitionOptimizerStateThenGradientsThenWeights) {
  for (int64_t n : {1, 8}) {
    const Prediction p =
        Predict(PredictPreset("gpt-1.3b", {"--world-size", std::to_string(n)}));
    const int64_t params = p.parameters;
    EXPECT_EQ(p.zero.plain_bytes, 16 * params);
    EXPECT_EQ(p.zero.stage1_bytes, 8 * params + 8 * params / n);
    EXPECT_EQ(p.zero.stage2_bytes, 4 * params + 12 * params / n);
    EXPECT_EQ(p.zero.stage3_bytes, 16 * params / n);
    EXPECT_EQ(p.zero.duplicated_bytes, (n - 1) * 16 * params);
  }
  // Shards round up: mlp-tiny's 44,328 + 44,328 + 88,656 bytes over 5 ranks
  // are 8,866 + 8,866 + 17,732 per rank.
  const Prediction odd =
      Predict(PredictPreset("mlp-tiny", {"--world-size", "5"}));
  EXPECT_EQ(odd.zero.stage3_bytes, 8866 + 8866 + 17732);
}

TEST(Prediction, ThePeakIsTheLargerOfEarlyBackwardAndTheOptimizerStep) {
  // mlp-tiny: tiny activations, the optimizer step's two temporaries of the
  // 64x64 weight decide. gpt2-small: activations decide.
  const Prediction mlp = Predict(PredictPreset("mlp-tiny"));
  EXPECT_EQ(mlp.Peak().phase, Phase::kOptimizer);
  EXPECT_EQ(mlp.bytes[Index(Category::kTemporaries)], 2 * 64 * 64 * 4);
  const Prediction gpt = Predict(PredictPreset("gpt2-small"));
  EXPECT_EQ(gpt.Peak().phase, Phase::kBackward);
  EXPECT_EQ(gpt.Peak().Total(), ModelStateBytes(gpt.bytes) +
                                    Sum(gpt.early_backward.bytes) -
                                    ModelStateBytes(gpt.early_backward.bytes));
}

// Note [Head backward]: where d outweighs B*T the output projection's
// weight gradient [V, d] beats early backward's two [B*T, V]. llama-odd
// (untied, d = 48, T = 17, V = 101) at micro-batch 1 measured this moment
// to the byte (model_test.cc); at micro-batch 5 early backward is larger.
TEST(Prediction, TheOutputProjectionsBackwardIsThePeakWhereDOutweighsBT) {
  const int64_t T = 17, d = 48, V = 101;
  const auto at = [](int64_t b, const char* dtype,
                     std::vector<std::string> more = {}) {
    std::vector<std::string> words = {"--micro-batch", std::to_string(b),
                                      "--train.dtype", dtype};
    words.insert(words.end(), more.begin(), more.end());
    return Predict(PresetConfig("llama-odd", words));
  };
  const int act = Index(Category::kActivations),
            tmp = Index(Category::kTemporaries),
            casts = Index(Category::kWeightCasts);
  const Prediction one = at(1, "float32");
  EXPECT_EQ(&one.Peak(), &one.head_backward);
  EXPECT_EQ(one.head_backward.phase, Phase::kBackward);
  // The loss's gradient, log_softmax's, the weight's and the input's.
  EXPECT_EQ(one.head_backward.bytes[tmp],
            4 + 4 * T * V + 4 * V * d + 4 * T * d);
  // log_softmax's output, nll_loss's padded target and total_weight gone.
  EXPECT_EQ(one.head_backward.bytes[act],
            one.early_backward.bytes[act] - 4 * T * V - 8 * (T + 1) - 4);
  EXPECT_EQ(one.head_backward.Total(), 1809988);  // measured, to the byte

  const Prediction five = at(5, "float32");
  EXPECT_LT(five.head_backward.Total(), five.early_backward.Total());
  EXPECT_NE(&five.Peak(), &five.head_backward);

  // bf16-autocast: the later moment, the bfloat16 input and weight copies
  // freed, the input's and weight's float32 gradients beside the weight's
  // bfloat16 one.
  const Prediction autocast = at(1, "bf16-autocast");
  EXPECT_EQ(autocast.head_backward.bytes[tmp],
            4 + 4 * T * d + 2 * V * d + 4 * V * d);
  EXPECT_EQ(autocast.head_backward.bytes[casts],
            autocast.early_backward.bytes[casts] - 2 * V * d);
  // bfloat16: the logits' bfloat16 gradient and the mm's bfloat16 ones.
  EXPECT_EQ(at(1, "bfloat16").head_backward.bytes[tmp],
            4 + 2 * T * V + 2 * V * d + 2 * T * d);

  // A frozen head makes no weight gradient; a frozen model below it no
  // input gradient.
  EXPECT_EQ(
      at(1, "float32", {"--train.freeze", "lm_head"}).head_backward.bytes[tmp],
      4 + 4 * T * V + 4 * T * d);
  EXPECT_EQ(
      at(1, "float32", {"--train.freeze", "model"}).head_backward.bytes[tmp],
      4 + 4 * T * V + 4 * V * d);
}

// The category rows of a prediction's text: the first word of each line
// between the header and the steady-state peak.
std::vector<std::string> CategoryRows(const std::string& text) {
  std::vector<std::string> rows;
  std::istringstream in(text);
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("category ", 0) == 0) {
      in_table = true;
    } else if (line.rfind("steady-state peak", 0) == 0) {
      break;
    } else if (in_table) {
      rows.push_back(line.substr(0, line.find(' ')));
    }
  }
  return rows;
}

bool HasRow(const std::vector<std::string>& rows, const std::string& name) {
  return std::find(rows.begin(), rows.end(), name) != rows.end();
}

TEST(PredictText, OneUnitFamilyNoNotesAndNoZeroLinesAtOneRank) {
  for (const char* preset : {"mlp-tiny", "gpt-1.3b"}) {
    for (const char* ranks : {"1", "8"}) {
      const RunConfig config = PredictPreset(preset, {"--world-size", ranks});
      const std::string text = FormatPrediction(Predict(config), config);
      for (const char* word : {" GB", " MB", " KB", "README", "Note [", ".h",
                               ".cc", "profiler/"}) {
        EXPECT_EQ(text.find(word), std::string::npos)
            << preset << " at " << ranks << " ranks: '" << word << "' in\n"
            << text;
      }
      EXPECT_EQ(text.find("ZeRO") == std::string::npos,
                std::string(ranks) == "1")
          << text;
    }
  }
}

TEST(PredictText, NoRowForACategoryTheConfigCannotFill) {
  const RunConfig plain = PredictPreset("mlp-tiny");
  const std::vector<std::string> rows =
      CategoryRows(FormatPrediction(Predict(plain), plain));
  EXPECT_FALSE(HasRow(rows, "weight_casts"));
  EXPECT_TRUE(HasRow(rows, "ddp_buckets"));  // the Reducer's, at one rank too
  EXPECT_TRUE(HasRow(rows, "optimizer_state"));
  EXPECT_TRUE(HasRow(rows, "unattributed"));

  const RunConfig lean = PredictPreset(
      "mlp-tiny", {"--ddp.gradient_as_bucket_view", "true", "--train.optimizer",
                   "sgd", "--train.dtype", "bf16-autocast"});
  const std::vector<std::string> lean_rows =
      CategoryRows(FormatPrediction(Predict(lean), lean));
  EXPECT_TRUE(HasRow(lean_rows, "weight_casts"));
  EXPECT_FALSE(HasRow(lean_rows, "ddp_buckets"));
  EXPECT_FALSE(HasRow(lean_rows, "optimizer_state"));
}

TEST(PredictText, GpuFiguresOnlyForACudaConfig) {
  const RunConfig cpu = PredictPreset("mlp-tiny");
  const std::string on_cpu = FormatPrediction(Predict(cpu), cpu);
  EXPECT_EQ(on_cpu.find("reserved ("), std::string::npos) << on_cpu;
  EXPECT_NE(on_cpu.find("add --train.device cuda"), std::string::npos);
  const RunConfig cuda = PredictPreset("mlp-tiny", {"--train.device", "cuda"});
  const std::string on_gpu = FormatPrediction(Predict(cuda), cuda);
  EXPECT_NE(on_gpu.find("reserved ("), std::string::npos) << on_gpu;
}

TEST(PredictText, SizeTableColumnsHoldAnyName) {
  SizeTable table;
  table.symbols = "d = 4";
  const std::string long_name =
      "model.layers.31.self_attn.rotary_emb.inv_freq_with_a_long_suffix";
  table.Add(long_name, RowKind::kBuffer, {4}, "[d/2]");
  table.Add("w", RowKind::kParameter, {4, 4}, "[d, d]");
  const std::string text = FormatSizeTable(table);
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);  // "size table (...)"
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u) << text;
  // Every column starts where its header does.
  const size_t kind = lines[0].find("kind");
  const size_t shape = lines[0].find("shape");
  ASSERT_GT(kind, long_name.size()) << text;
  EXPECT_EQ(lines[1].find("buffer"), kind) << text;
  EXPECT_EQ(lines[2].find("parameter"), kind) << text;
  EXPECT_EQ(lines[1].find("[d/2]"), shape) << text;
  EXPECT_EQ(lines[2].find("[d, d]"), shape) << text;
  EXPECT_EQ(lines[1].size(), lines[2].size()) << text;  // bytes right-aligned
}

}  // namespace
}  // namespace memprof
