// The models and their size tables: the table's parameter and buffer rows
// are the built module's, name by name and shape by shape; and a profiled
// run (one rank, in this process) meets its prediction at micro-batches 1,
// 2 and 5.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/llama.h"
#include "models/model.h"
#include "models/size_table.h"
#include "profiler/cli/config_cli.h"
#include "profiler/predict/scope_prediction.h"
#include "tests/predict/prediction_checks.h"
#include "tests/preset_config.h"
#include "tests/train/solo_run.h"

namespace memprof {
namespace {

void ExpectRowsAre(
    const SizeTable& table, RowKind kind,
    const torch::OrderedDict<std::string, torch::Tensor>& named) {
  std::vector<const SizeRow*> rows;
  for (const SizeRow& row : table.rows) {
    if (row.kind == kind) rows.push_back(&row);
  }
  ASSERT_EQ(rows.size(), named.size());
  int64_t elements = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const torch::Tensor& t = named[i].value();
    EXPECT_EQ(rows[i]->name, named[i].key());
    EXPECT_EQ(rows[i]->shape, t.sizes().vec()) << named[i].key();
    EXPECT_EQ(rows[i]->Bytes(),
              t.numel() * static_cast<int64_t>(t.element_size()))
        << named[i].key();
    elements += t.numel();
  }
  EXPECT_EQ(table.Elements(kind), elements);
}

struct ModelCase {
  std::string preset;
  std::vector<std::string> extra;
};

void PrintTo(const ModelCase& c, std::ostream* os) {
  *os << c.preset;
  for (const std::string& word : c.extra) *os << " " << word;
}

class TableMatchesModule : public ::testing::TestWithParam<ModelCase> {};

TEST_P(TableMatchesModule, NamesShapesAndCounts) {
  const RunConfig config = PresetConfig(GetParam().preset, GetParam().extra);
  const std::unique_ptr<TrainableModel> model = BuildModel(config);
  const SizeTable table = BuildSizeTable(config, /*micro_batch=*/1);
  ExpectRowsAre(table, RowKind::kParameter, model->module().named_parameters());
  ExpectRowsAre(table, RowKind::kBuffer, model->module().named_buffers());
}

INSTANTIATE_TEST_SUITE_P(
    Models, TableMatchesModule,
    ::testing::Values(
        ModelCase{"mlp-tiny", {}},
        ModelCase{"mlp-tiny", {"--mlp.depth", "1", "--mlp.input", "7"}},
        ModelCase{"gpt-tiny", {}},
        ModelCase{"gpt-tiny",
                  {"--gpt.layers", "3", "--gpt.d_model", "48", "--gpt.heads",
                   "6", "--gpt.seq_len", "17", "--gpt.vocab", "101"}},
        // A position table longer than the sequences it trains on.
        ModelCase{"gpt-tiny", {"--gpt.positions", "40"}},
        ModelCase{"llama-tiny", {}}, ModelCase{"llama-odd", {}},
        ModelCase{"llama-odd",
                  {"--llama.attention_bias", "true", "--llama.mlp_bias", "true",
                   "--llama.tie_word_embeddings", "true"}},
        ModelCase{"resnet-tiny", {}},
        ModelCase{"resnet-tiny", {"--resnet.depth", "34"}},
        ModelCase{"resnet-tiny", {"--resnet.depth", "50"}},
        ModelCase{"resnet-tiny",
                  {"--resnet.depth", "101", "--resnet.width", "4",
                   "--resnet.classes", "3"}}));

TEST(Models, GptOutputProjectionIsTheTokenEmbedding) {
  const RunConfig config = PresetConfig("gpt-tiny", {});
  const std::unique_ptr<TrainableModel> model = BuildModel(config);
  const Batch batch = model->MakeBatch(2);
  model->Loss(batch).backward();
  // One parameter, two uses: its gradient holds both contributions and no
  // separate lm_head weight exists.
  const auto named = model->module().named_parameters();
  EXPECT_EQ(named.find("lm_head.weight"), nullptr);
  EXPECT_TRUE(named["wte.weight"].grad().defined());
}

// The Llama forward, written out from the published formulas in double
// precision with the module's own parameters: RMSNorm, rotary
// (rotate_half), grouped-query attention with each key/value head serving
// consecutive query heads (repeat_kv), an explicit causal softmax, SwiGLU,
// q/k/v biases and the untied head; and the loss is cross-entropy of
// position t's logits against label t + 1, the last position ignored.
TEST(Models, LlamaComputesThePublishedFormulas) {
  const RunConfig config = PresetConfig("llama-odd", {});
  const LlamaConfig& c = config.llama;
  torch::manual_seed(5);
  const std::unique_ptr<TrainableModel> model = BuildModel(config);
  auto& llama = dynamic_cast<LlamaImpl&>(model->module());
  const Batch batch = model->MakeBatch(2);
  const auto p = model->module().named_parameters();
  auto w = [&p](const std::string& name) {
    return p[name].detach().to(torch::kFloat64);
  };
  const int64_t b = 2, t = c.seq_len, h = c.num_attention_heads,
                k = KeyValueHeads(c), hd = HeadDim(c);
  auto rms = [&](const torch::Tensor& x, const std::string& name) {
    return x / torch::sqrt(x.pow(2).mean(-1, true) + c.rms_norm_eps) *
           w(name + ".weight");
  };
  auto linear = [&](const torch::Tensor& x, const std::string& name,
                    bool bias) {
    torch::Tensor y = torch::matmul(x, w(name + ".weight").t());
    return bias ? y + w(name + ".bias") : y;
  };
  const torch::Tensor pos = torch::arange(t, torch::kFloat64);
  const torch::Tensor inv =
      1.0 /
      torch::pow(c.rope_theta, torch::arange(0, hd, 2, torch::kFloat64) / hd);
  torch::Tensor angles = torch::outer(pos, inv);
  angles = torch::cat({angles, angles}, -1);   // [T, D]
  auto rotary = [&](const torch::Tensor& x) {  // [B, heads, T, D]
    const torch::Tensor x1 = x.slice(-1, 0, hd / 2), x2 = x.slice(-1, hd / 2);
    return x * angles.cos() + torch::cat({-x2, x1}, -1) * angles.sin();
  };
  const torch::Tensor causal =
      torch::ones({t, t}, torch::kBool).triu(/*diagonal=*/1);
  torch::Tensor x = w("model.embed_tokens.weight").index({batch.input});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string n = "model.layers." + std::to_string(i) + ".";
    const torch::Tensor a = rms(x, n + "input_layernorm");
    auto heads = [&](const torch::Tensor& y) {
      return y.view({b, t, -1, hd}).transpose(1, 2);
    };
    const torch::Tensor q =
        rotary(heads(linear(a, n + "self_attn.q_proj", true)));
    const torch::Tensor kk =
        rotary(heads(linear(a, n + "self_attn.k_proj", true)))
            .repeat_interleave(h / k, 1);
    const torch::Tensor v = heads(linear(a, n + "self_attn.v_proj", true))
                                .repeat_interleave(h / k, 1);
    torch::Tensor s = torch::matmul(q, kk.transpose(-2, -1)) / std::sqrt(hd);
    s = torch::softmax(s.masked_fill(causal, -INFINITY), -1);
    const torch::Tensor o =
        torch::matmul(s, v).transpose(1, 2).reshape({b, t, -1});
    x = x + linear(o, n + "self_attn.o_proj", false);
    const torch::Tensor m = rms(x, n + "post_attention_layernorm");
    x = x + linear(torch::silu(linear(m, n + "mlp.gate_proj", false)) *
                       linear(m, n + "mlp.up_proj", false),
                   n + "mlp.down_proj", false);
  }
  const torch::Tensor logits =
      linear(rms(x, "model.norm"), "lm_head", false);  // [B, T, V]
  EXPECT_TRUE(torch::allclose(llama.forward(batch.input).to(torch::kFloat64),
                              logits, /*rtol=*/1e-4, /*atol=*/1e-5));
  const torch::Tensor expected = torch::nn::functional::cross_entropy(
      logits.slice(1, 0, t - 1).reshape({-1, c.vocab_size}),
      batch.target.slice(1, 1).reshape({-1}));
  EXPECT_NEAR(model->Loss(batch).item<double>(), expected.item<double>(), 1e-5);
}

TEST(Models, ResnetBatchNormStatisticsAreBuffersThatTrainingUpdates) {
  const RunConfig config = PresetConfig("resnet-tiny", {});
  const std::unique_ptr<TrainableModel> model = BuildModel(config);
  const torch::Tensor before =
      model->module().named_buffers()["bn1.running_mean"].clone();
  model->Loss(model->MakeBatch(2));
  EXPECT_FALSE(torch::equal(
      before, model->module().named_buffers()["bn1.running_mean"]));
  EXPECT_EQ(model->module()
                .named_buffers()["bn1.num_batches_tracked"]
                .item<int64_t>(),
            1);
}

// One rank, in this process: what ExpectPredictionHolds requires.
struct RunCase {
  std::string preset;
  int64_t micro_batch;
  std::vector<std::string> extra = {};
};

std::string Label(const RunCase& c) {
  std::string label =
      c.preset + " at micro-batch " + std::to_string(c.micro_batch);
  for (const std::string& word : c.extra) label += " " + word;
  return label;
}

void PrintTo(const RunCase& c, std::ostream* os) { *os << Label(c); }

// gpt_tiny_b2, gpt_tiny_b2_checkpointed, gpt_tiny_b2_checkpointed_dropout,
// mlp_tiny_b2_sgd_momentum, mlp_tiny_b1_lora.
std::string CaseName(const ::testing::TestParamInfo<RunCase>& info) {
  std::string name =
      info.param.preset + "_b" + std::to_string(info.param.micro_batch);
  const auto has = [&info](const char* word) {
    const auto& extra = info.param.extra;
    return std::find(extra.begin(), extra.end(), word) != extra.end();
  };
  if (has("blocks")) name += "_checkpointed";
  if (has("--gpt.dropout")) name += "_dropout";
  if (has("--train.momentum")) name += "_sgd_momentum";
  if (has("--lora-rank")) name += "_lora";
  for (char& ch : name) {
    if (ch == '-') ch = '_';
  }
  return name;
}

class PredictionMatchesMeasurement : public ::testing::TestWithParam<RunCase> {
};

TEST_P(PredictionMatchesMeasurement, OneRank) {
  const RunCase& c = GetParam();
  std::vector<std::string> args = {
      "--micro-batch", std::to_string(c.micro_batch), "--steps", "3"};
  args.insert(args.end(), c.extra.begin(), c.extra.end());
  const RankRun report = RunSolo(PresetConfig(c.preset, args));
  ExpectPredictionHolds(ReportOf(report), Label(c));
}

// Where the step peaks away from early backward, the prediction names the
// moment and its breakdown to the byte, in every category.
// - One short sequence per rank: the [V, d] gradients outweigh early
//   backward's [B*T, V] ones, at gpt-tiny's last block (the tied wte's
//   gradient waiting beside c_proj's) and at llama-odd's output projection
//   (Note [Head backward]); the same at an MLP's last Linear when its
//   output is wide and SGD's step has no moment above it. Before, these
//   were under-predicted by 2.05%, 0.49% and 26.26%.
// - A block's later stages (Note [Block stages]): the attention's backward
//   where it is wide beside d and V (8.21% under before, 27.95%
//   checkpointed); the gelu's, c_fc's and Llama's silu x up's when the
//   last block's weights are frozen (1.79% to 7.10% under before, on
//   shapes a newcomer's hunt ran).
struct PeakCase {
  std::string preset;
  std::vector<std::string> extra;
  std::string moment;
};

void PrintTo(const PeakCase& c, std::ostream* os) {
  *os << c.preset;
  for (const std::string& word : c.extra) *os << " " << word;
}

class PeakMoment : public ::testing::TestWithParam<PeakCase> {};

TEST_P(PeakMoment, TheBreakdownIsExact) {
  const PeakCase& c = GetParam();
  std::vector<std::string> args = {"--steps", "3"};
  args.insert(args.end(), c.extra.begin(), c.extra.end());
  const RankReport report = ReportOf(RunSolo(PresetConfig(c.preset, args)));
  EXPECT_EQ(report.predicted_peak.what.rfind(c.moment, 0), 0u)
      << report.predicted_peak.what;
  EXPECT_EQ(report.peak.phase, Phase::kBackward);
  for (Category k : kAllCategories) {
    EXPECT_EQ(report.peak.breakdown[Index(k)],
              report.predicted_peak.breakdown[Index(k)])
        << CategoryName(k);
  }
  EXPECT_EQ(report.peak.total_bytes, report.predicted_peak.total_bytes);
}

const std::vector<std::string> kWideAttention = {
    "--micro-batch", "2",  "--gpt.d_model", "16", "--gpt.heads", "4",
    "--gpt.seq_len", "64", "--gpt.vocab",   "64"};

std::vector<std::string> Plus(std::vector<std::string> words,
                              const std::vector<std::string>& more) {
  words.insert(words.end(), more.begin(), more.end());
  return words;
}

INSTANTIATE_TEST_SUITE_P(
    Moments, PeakMoment,
    ::testing::Values(
        PeakCase{"gpt-tiny",
                 {"--micro-batch", "1"},
                 "backward of block 1, at its MLP's c_proj"},
        PeakCase{"llama-odd",
                 {"--micro-batch", "1"},
                 "output projection's backward"},
        PeakCase{"mlp-tiny",
                 {"--micro-batch", "1", "--mlp.output", "1000",
                  "--train.optimizer", "sgd"},
                 "output projection's backward"},
        PeakCase{"gpt-tiny", kWideAttention,
                 "backward of block 1, in its attention's backward"},
        PeakCase{"gpt-tiny",
                 Plus(kWideAttention,
                      {"--train.activation_checkpointing", "blocks"}),
                 "backward of checkpointed block 1, in its attention's "
                 "backward"},
        PeakCase{"gpt-tiny",
                 {"--micro-batch", "1", "--train.freeze", "h.1"},
                 "backward of block 1, at its MLP's gelu"},
        PeakCase{"gpt-tiny",
                 {"--micro-batch", "1", "--train.freeze", "h.1.mlp.c_proj"},
                 "backward of block 1, at its MLP's c_fc"},
        PeakCase{"llama-tiny",
                 {"--micro-batch", "1", "--train.freeze", "model.layers.1"},
                 "backward of block 1, at its MLP's silu x up"}),
    [](const ::testing::TestParamInfo<PeakCase>& info) {
      std::string name = info.param.preset;
      std::replace(name.begin(), name.end(), '-', '_');
      return std::to_string(info.index) + "_" + name;
    });

// A Llama layer's attention backward (Note [Llama attention backward]),
// where the attention is wide beside the MLP and the vocabulary: predicted
// to the byte in every category but the temporaries, where each working
// thread's row sums [Q] float32 are predicted live together, and a thread
// that finishes before another starts has freed its own (at most N - 1 of
// them, N = the rank's threads). Before, 12.70% under (the first shape),
// and 20.32% (the grouped-query one).
struct AttentionCase {
  std::string name;
  std::vector<std::string> extra;
  std::string moment;
  int64_t query_block;  // Q
};

void PrintTo(const AttentionCase& c, std::ostream* os) { *os << c.name; }

class LlamaAttentionPeak : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(LlamaAttentionPeak, IsPredictedToTheThreadsRowSums) {
  const AttentionCase& c = GetParam();
  std::vector<std::string> args = {"--steps",
                                   "3",
                                   "--llama.intermediate_size",
                                   "33",
                                   "--llama.vocab_size",
                                   "50",
                                   "--llama.tie_word_embeddings",
                                   "false"};
  args.insert(args.end(), c.extra.begin(), c.extra.end());
  const RankReport report = ReportOf(RunSolo(PresetConfig("llama-tiny", args)));
  EXPECT_EQ(report.predicted_peak.what.rfind(c.moment, 0), 0u)
      << report.predicted_peak.what;
  EXPECT_EQ(report.peak.phase, Phase::kBackward);
  for (Category k : kAllCategories) {
    if (k == Category::kTemporaries) continue;
    EXPECT_EQ(report.peak.breakdown[Index(k)],
              report.predicted_peak.breakdown[Index(k)])
        << CategoryName(k);
  }
  ASSERT_GT(report.context.cpu_threads, 0);
  const int64_t slack = (report.context.cpu_threads - 1) * c.query_block * 4;
  const int64_t measured = report.peak.total_bytes,
                predicted = report.predicted_peak.total_bytes;
  EXPECT_LE(measured, predicted);
  EXPECT_GE(measured, predicted - slack);
}

INSTANTIATE_TEST_SUITE_P(
    Moments, LlamaAttentionPeak,
    ::testing::Values(
        AttentionCase{"wide",
                      {"--micro-batch", "2", "--llama.num_attention_heads", "2",
                       "--llama.num_key_value_heads", "2", "--llama.head_dim",
                       "128", "--llama.seq_len", "512"},
                      "backward of block 1, in its attention's backward",
                      64},
        AttentionCase{"wide_checkpointed",
                      {"--micro-batch", "2", "--llama.num_attention_heads", "2",
                       "--llama.num_key_value_heads", "2", "--llama.head_dim",
                       "128", "--llama.seq_len", "512",
                       "--train.activation_checkpointing", "blocks"},
                      "backward of checkpointed block 1, in its attention's "
                      "backward",
                      64},
        AttentionCase{"grouped_query_long",
                      {"--micro-batch", "1", "--llama.num_attention_heads", "4",
                       "--llama.num_key_value_heads", "1", "--llama.head_dim",
                       "64", "--llama.seq_len", "800"},
                      "backward of block 1, in its attention's backward",
                      256}),
    [](const ::testing::TestParamInfo<AttentionCase>& info) {
      return info.param.name;
    });

// A checkpointed block's graph node drops the block once it has rerun it:
// Llama's rotary cos and sin, which its forward holds, were otherwise
// kept until the graph was freed, through the optimizer's step (4,356 B
// of activations there, against the loss's 4 predicted).
TEST(CheckpointedLlama, HoldsNoActivationsButTheLossThroughTheStep) {
  const RankReport report = ReportOf(
      RunSolo(PresetConfig("llama-tiny", {"--steps",
                                          "3",
                                          "--micro-batch",
                                          "1",
                                          "--llama.num_hidden_layers",
                                          "3",
                                          "--llama.hidden_size",
                                          "96",
                                          "--llama.num_attention_heads",
                                          "2",
                                          "--llama.num_key_value_heads",
                                          "1",
                                          "--llama.head_dim",
                                          "32",
                                          "--llama.intermediate_size",
                                          "33",
                                          "--llama.vocab_size",
                                          "256",
                                          "--llama.seq_len",
                                          "17",
                                          "--llama.tie_word_embeddings",
                                          "false",
                                          "--train.activation_checkpointing",
                                          "blocks"})));
  ASSERT_EQ(report.peak.phase, Phase::kOptimizer);
  const int activations = Index(Category::kActivations);
  EXPECT_EQ(report.predicted_peak.breakdown[activations], 4);
  EXPECT_EQ(report.peak.breakdown[activations],
            report.predicted_peak.breakdown[activations]);
}

// Checkpointed blocks: the activations held from forward into backward
// (the blocks' inputs) and their peak with one block rerun, both to the
// table's prediction.
const std::vector<std::string> kMomentumSgd = {"--train.optimizer", "sgd",
                                               "--train.momentum", "0.9"};
const std::vector<std::string> kCheckpointed = {
    "--train.activation_checkpointing", "blocks"};

class CheckpointedActivations : public ::testing::TestWithParam<RunCase> {};

TEST_P(CheckpointedActivations, HeldFromForwardIntoBackwardAsPredicted) {
  const RunCase& c = GetParam();
  std::vector<std::string> args = {
      "--micro-batch", std::to_string(c.micro_batch), "--steps", "3"};
  args.insert(args.end(), c.extra.begin(), c.extra.end());
  const RankReport report = ReportOf(RunSolo(PresetConfig(c.preset, args)));
  ASSERT_TRUE(report.checkpointing.has_value());
  const int64_t held = report.checkpointing->held_bytes;
  const int64_t predicted = report.checkpointing->predicted_held_bytes;
  EXPECT_LE(std::llabs(held - predicted), predicted * 3 / 100)
      << "held " << held << ", predicted " << predicted;
  // The rerun adds one block's saved tensors on top of what is held.
  EXPECT_GT(report.Of(Category::kActivations).peak_bytes, held);
  // Plain, the same model holds more from forward into backward.
  const RankReport plain = ReportOf(RunSolo(PresetConfig(
      c.preset,
      {"--micro-batch", std::to_string(c.micro_batch), "--steps", "3"})));
  EXPECT_FALSE(plain.checkpointing.has_value());
  EXPECT_LT(held, plain.Of(Category::kActivations).peak_bytes);
}

INSTANTIATE_TEST_SUITE_P(
    TinyConfigs, PredictionMatchesMeasurement,
    ::testing::Values(
        RunCase{"mlp-tiny", 1}, RunCase{"mlp-tiny", 2}, RunCase{"mlp-tiny", 5},
        RunCase{"gpt-tiny", 1}, RunCase{"gpt-tiny", 2}, RunCase{"gpt-tiny", 5},
        RunCase{"resnet-tiny", 1}, RunCase{"resnet-tiny", 2},
        RunCase{"resnet-tiny", 5}, RunCase{"gpt-tiny", 1, kCheckpointed},
        RunCase{"gpt-tiny", 2, kCheckpointed},
        RunCase{"gpt-tiny", 5, kCheckpointed},
        RunCase{"gpt-tiny",
                2,
                {"--train.activation_checkpointing", "blocks", "--gpt.dropout",
                 "0.1"}},
        RunCase{"resnet-tiny", 1, kCheckpointed},
        RunCase{"resnet-tiny", 2, kCheckpointed},
        RunCase{"resnet-tiny", 5, kCheckpointed},
        // SGD's peak is in backward, at a hidden layer's.
        RunCase{"mlp-tiny", 1, kMomentumSgd},
        RunCase{"mlp-tiny", 2, kMomentumSgd},
        RunCase{"mlp-tiny", 5, kMomentumSgd},
        // LoRA on every Linear of a wide MLP under SGD: the
        // first layer's adapter gradients decide the peak,
        // which measured 1.26% over before the table had
        // them.
        RunCase{"mlp-tiny",
                1,
                {"--mlp.input", "784", "--mlp.hidden", "256",
                 "--train.optimizer", "sgd", "--lora-rank", "8",
                 "--lora-targets", "layers.0,layers.2,layers.4,layers.6"}}),
    CaseName);

INSTANTIATE_TEST_SUITE_P(
    TinyConfigs, CheckpointedActivations,
    ::testing::Values(RunCase{"gpt-tiny", 1, kCheckpointed},
                      RunCase{"gpt-tiny", 5, kCheckpointed},
                      RunCase{"resnet-tiny", 1, kCheckpointed},
                      RunCase{"resnet-tiny", 5, kCheckpointed}),
    CaseName);

// Named scopes: each block runs in a scope named as its parameters are, and
// the activations allocated in it are its size table's saved rows, to the
// byte (float32, one rank; the block's input is the block before's).
class ScopeActivations : public ::testing::TestWithParam<RunCase> {};

TEST_P(ScopeActivations, EachBlockHoldsItsPredictedRowsToTheByte) {
  const RunCase& c = GetParam();
  const RunConfig config = PresetConfig(
      c.preset,
      {"--micro-batch", std::to_string(c.micro_batch), "--steps", "3"});
  const RankReport report = ReportOf(RunSolo(config));
  const SizeTable table = BuildSizeTable(config, c.micro_batch);
  const std::vector<ScopePrediction> predicted = PredictScopes(table);
  ASSERT_GE(predicted.size(), 2u);
  ASSERT_EQ(report.scopes.size(), predicted.size());
  for (size_t i = 0; i < predicted.size(); ++i) {
    const ScopeReport& scope = report.scopes[i];
    SCOPED_TRACE(scope.name);
    EXPECT_EQ(scope.name, predicted[i].name);
    const bool names_parameters = std::any_of(
        table.rows.begin(), table.rows.end(), [&](const SizeRow& r) {
          return r.kind == RowKind::kParameter &&
                 r.name.rfind(scope.name + ".", 0) == 0;
        });
    EXPECT_TRUE(names_parameters)
        << "no parameter is named " << scope.name << ".*";
    ASSERT_TRUE(scope.predicted_activations_bytes.has_value());
    EXPECT_EQ(*scope.predicted_activations_bytes,
              predicted[i].activations_bytes);
    EXPECT_GT(scope.activations_bytes, 0);
    EXPECT_EQ(scope.activations_bytes, predicted[i].activations_bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(TinyConfigs, ScopeActivations,
                         ::testing::Values(RunCase{"mlp-tiny", 2},
                                           RunCase{"gpt-tiny", 2},
                                           RunCase{"resnet-tiny", 2},
                                           RunCase{"llama-tiny", 2}),
                         CaseName);

// Llama, at one rank in this process: both CI configs (llama-tiny: tied,
// grouped-query; llama-odd: untied, q/k/v biases, head_dim * heads !=
// hidden_size) at micro-batches 1, 2 and 5, in float32, bf16-autocast and
// bfloat16, checkpointed and not: model state and the weights' bfloat16
// copies to the byte, activations within 1%, the peak within 3% (in
// bfloat16, at least 97% of the prediction: oneDNN's scratchpads).
struct LlamaCase {
  std::string preset;
  int64_t micro_batch;
  std::string dtype;
  bool checkpointed;
};

void PrintTo(const LlamaCase& c, std::ostream* os) {
  *os << c.preset << " at micro-batch " << c.micro_batch << " in " << c.dtype
      << (c.checkpointed ? ", checkpointed" : "");
}

class LlamaPrediction : public ::testing::TestWithParam<LlamaCase> {};

TEST_P(LlamaPrediction, MatchesMeasurement) {
  const LlamaCase& c = GetParam();
  std::vector<std::string> args = {
      "--micro-batch", std::to_string(c.micro_batch),
      "--steps",       "3",
      "--train.dtype", c.dtype};
  if (c.checkpointed) {
    args.insert(args.end(), kCheckpointed.begin(), kCheckpointed.end());
  }
  const RankReport report = ReportOf(RunSolo(PresetConfig(c.preset, args)));
  std::ostringstream label;
  PrintTo(c, &label);
  // In bfloat16, oneDNN's matmul scratchpads (prediction_checks.h) reach
  // the peak: it is checked from below.
  ExpectPredictionHolds(report, label.str(),
                        /*scratch_unpredicted=*/c.dtype != "float32",
                        Band{/*activations_percent=*/1, /*peak_percent=*/3});
}

std::vector<LlamaCase> LlamaCases() {
  std::vector<LlamaCase> cases;
  for (const char* preset : {"llama-tiny", "llama-odd"}) {
    for (int64_t micro_batch : {1, 2, 5}) {
      for (const char* dtype : {"float32", "bf16-autocast", "bfloat16"}) {
        for (bool checkpointed : {false, true}) {
          cases.push_back({preset, micro_batch, dtype, checkpointed});
        }
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(TinyConfigs, LlamaPrediction,
                         ::testing::ValuesIn(LlamaCases()),
                         [](const ::testing::TestParamInfo<LlamaCase>& info) {
                           // llama_odd_b5_bf16_autocast_checkpointed
                           std::string name =
                               info.param.preset + "_b" +
                               std::to_string(info.param.micro_batch) + "_" +
                               info.param.dtype +
                               (info.param.checkpointed ? "_checkpointed" : "");
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch)))
                               ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace memprof
