#include "models/config_validation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "models/frozen_rows.h"
#include "models/lora_rows.h"
#include "models/resnet_table.h"
#include "models/size_table.h"
#include "profiler/base/config_keys.h"
#include "profiler/base/errors.h"
#include "profiler/base/frozen_parameters.h"

namespace memprof {
namespace {

void RequirePositive(const std::string& key, int64_t value) {
  if (value <= 0) {
    throw ConfigError(key,
                      key + " must be positive, got " + std::to_string(value));
  }
}

// Note [Countable sizes]: each size key at most 2^31 - 1, so that no entry
// of a shape (3d, 4d, B*h, B*T, a ResNet width times 32) can overflow
// before the size table checks its products; layer counts at most 10,000
// (the table has rows per layer).
constexpr int64_t kMaxDimension = (int64_t{1} << 31) - 1;
constexpr int64_t kMaxLayers = 10000;
constexpr int64_t kMaxSteps = 100000;
constexpr int64_t kFirstSteadyStep = 3;
// A DDP bucket of 1 TiB already holds any model memprof can count; the cap
// keeps bucket_cap_mb * 2^20 an exact int64.
constexpr int64_t kMaxBucketCapMb = int64_t{1} << 20;
// A collective that waits a day is hung; the bound keeps every deadline
// (now + timeout, in the clocks' nanoseconds) within int64.
constexpr int64_t kMaxTimeoutS = 24 * 60 * 60;

void RequireSize(const std::string& key, int64_t value,
                 int64_t most = kMaxDimension) {
  RequirePositive(key, value);
  if (value > most) {
    throw ConfigError(key, key + " must be at most " + std::to_string(most) +
                               ", got " + std::to_string(value));
  }
}

// "inf", "nan" or the number as written ("0.5", "-2").
std::string Describe(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// A positive real number: infinities and NaN are refused, not carried
// into training (NaN losses) or the report (JSON null).
void RequireFinitePositive(const std::string& key, double value) {
  if (!std::isfinite(value) || !(value > 0)) {
    throw ConfigError(
        key, key + " must be a finite positive number, got " + Describe(value));
  }
}

void ValidateGpt(const GptConfig& g) {
  RequireSize("gpt.layers", g.layers, kMaxLayers);
  RequireSize("gpt.d_model", g.d_model);
  RequireSize("gpt.heads", g.heads);
  RequireSize("gpt.seq_len", g.seq_len);
  RequireSize("gpt.vocab", g.vocab);
  if (g.positions != 0) RequireSize("gpt.positions", g.positions);
  if (g.positions > 0 && g.seq_len > g.positions) {
    throw ConfigError("gpt.seq_len",
                      "gpt.seq_len " + std::to_string(g.seq_len) +
                          " is longer than gpt.positions " +
                          std::to_string(g.positions) +
                          ": the position table has one row per position; "
                          "set gpt.seq_len to at most " +
                          std::to_string(g.positions));
  }
  if (g.d_model % g.heads != 0) {
    throw ConfigError("gpt.heads", "gpt.heads " + std::to_string(g.heads) +
                                       " does not divide gpt.d_model " +
                                       std::to_string(g.d_model) +
                                       "; choose heads that divide the width");
  }
  if (!(g.dropout >= 0 && g.dropout < 1)) {
    throw ConfigError("gpt.dropout", "gpt.dropout must be in [0, 1), got " +
                                         Describe(g.dropout));
  }
}

void ValidateLlama(const LlamaConfig& l) {
  RequireSize("llama.num_hidden_layers", l.num_hidden_layers, kMaxLayers);
  RequireSize("llama.hidden_size", l.hidden_size);
  RequireSize("llama.intermediate_size", l.intermediate_size);
  RequireSize("llama.num_attention_heads", l.num_attention_heads);
  RequireSize("llama.vocab_size", l.vocab_size);
  RequireSize("llama.seq_len", l.seq_len);
  // The loss predicts each next token within the sequence (the labels
  // shifted by one): one token leaves none, and a NaN loss.
  if (l.seq_len < 2) {
    throw ConfigError("llama.seq_len",
                      "llama.seq_len 1 leaves no next token to predict (the "
                      "loss compares each token with the one after it, "
                      "within the sequence); use 2 or more");
  }
  // 0 stands for config.json's null (the default); anything else is a size.
  if (l.num_key_value_heads != 0) {
    RequireSize("llama.num_key_value_heads", l.num_key_value_heads);
    if (l.num_attention_heads % l.num_key_value_heads != 0) {
      throw ConfigError(
          "llama.num_key_value_heads",
          "llama.num_key_value_heads " + std::to_string(l.num_key_value_heads) +
              " does not divide llama.num_attention_heads " +
              std::to_string(l.num_attention_heads) +
              ": each key/value head serves a whole group of query heads; "
              "choose a divisor (or one key/value head per query head: 0 "
              "in a config file or flag, null in a config.json)");
    }
  }
  if (l.head_dim != 0) {
    RequireSize("llama.head_dim", l.head_dim);
  } else if (l.hidden_size % l.num_attention_heads != 0) {
    throw ConfigError("llama.num_attention_heads",
                      "llama.num_attention_heads " +
                          std::to_string(l.num_attention_heads) +
                          " does not divide llama.hidden_size " +
                          std::to_string(l.hidden_size) +
                          ", and llama.head_dim is not set; choose heads "
                          "that divide the width, or set head_dim");
  }
  if (HeadDim(l) % 2 != 0) {
    throw ConfigError(
        l.head_dim != 0 ? "llama.head_dim" : "llama.num_attention_heads",
        "the head width " + std::to_string(HeadDim(l)) +
            " is odd: the rotary embedding turns pairs of its halves; "
            "choose an even llama.head_dim");
  }
  RequireFinitePositive("llama.rms_norm_eps", l.rms_norm_eps);
  RequireFinitePositive("llama.rope_theta", l.rope_theta);
}

void ValidateResnet(const ResnetConfig& r, int64_t micro_batch) {
  RequirePositive("resnet.depth", r.depth);
  if (!ResnetStagesOf(r.depth)) {
    throw ConfigError("resnet.depth", "unsupported resnet.depth " +
                                          std::to_string(r.depth) +
                                          "; supported: 18, 34, 50, 101, 152");
  }
  RequireSize("resnet.width", r.width);
  RequireSize("resnet.resolution", r.resolution);
  RequireSize("resnet.classes", r.classes);
  // BatchNorm in training needs more than one value per channel.
  const int64_t last = ResnetResolutionsOf(r.resolution).stage[3];
  if (last == 0 || (last == 1 && micro_batch == 1)) {
    throw ConfigError(
        "resnet.resolution",
        "resnet.resolution " + std::to_string(r.resolution) +
            " leaves the last stage at 1x1, and with micro-batch 1 its "
            "BatchNorm sees one value per channel; use a resolution of 33 "
            "or more, or a micro-batch of 2 or more");
  }
}

// Note [Countable sizes]: the model's tensors, at this micro-batch, must
// be countable with room for gradients and Adam's state. Several keys make
// a shape, so the error names the tensor and its symbols rather than one
// key.
void RequireCountable(const RunConfig& c) {
  try {
    BuildSizeTable(c, MicroBatch(c)).RequireCountable();
    // Note [Totals across ranks]
    if (c.ddp.world_size > LargestCountableWorld(c)) {
      throw ConfigError(
          "ddp.world_size",
          "ddp.world_size " + std::to_string(c.ddp.world_size) +
              ": the model state of that many ranks, added up, is more "
              "bytes than memprof can count (2^63 - 1); choose at most " +
              std::to_string(LargestCountableWorld(c)) + " ranks");
    }
  } catch (const SizeOverflow& e) {
    // The micro-batch is one of the sizes, and often the one given last.
    const auto origin = c.origins.find("train.micro_batch");
    throw InputError(
        "the " + c.model + " model these sizes describe, at micro-batch " +
        std::to_string(MicroBatch(c)) +
        (origin == c.origins.end() ? std::string()
                                   : " (" + origin->second + ")") +
        ", is too large for memprof to count in bytes: " + e.what() +
        " (Note [Countable sizes]); choose smaller sizes or a smaller "
        "micro-batch");
  }
}

}  // namespace

int64_t LargestCountableWorld(const RunConfig& config) {
  const int64_t parameter_bytes =
      BuildSizeTable(config, 1).Bytes(RowKind::kParameter);
  return std::min(kMaxDdpWorldSize,
                  std::numeric_limits<int64_t>::max() /
                      (kModelStatePerParameterByte *
                       std::max<int64_t>(1, parameter_bytes)));
}

namespace {

// train.freeze (Note [Frozen parameters]): each prefix covers a parameter,
// and at least one parameter is left to train.
void ValidateFreeze(const RunConfig& c) {
  const std::vector<std::string> prefixes = FreezePrefixes(c.train.freeze);
  const char* const kKey = "train.freeze";
  if (FreezesAll(c.train.freeze) && c.lora.rank == 0) {
    throw ConfigError(kKey,
                      "train.freeze 'all' freezes every base weight, which is "
                      "for adapters: add a [lora] section (lora.rank and "
                      "lora.targets), or list the prefixes to freeze and leave "
                      "at least one parameter trained");
  }
  if (!prefixes.empty() && c.lora.rank > 0) {
    throw ConfigError(kKey, "train.freeze '" + c.train.freeze +
                                "' beside [lora]: the adapters freeze every "
                                "base weight already; remove train.freeze or "
                                "write all");
  }
  if (prefixes.empty()) return;
  if (c.model == "resnet") {
    throw ConfigError(kKey,
                      "train.freeze is for mlp, gpt and llama; resnet's "
                      "frozen activations are not predicted yet: remove it");
  }
  if (c.train.activation_checkpointing == "blocks") {
    throw ConfigError(kKey,
                      "train.freeze with activation_checkpointing blocks is "
                      "not predicted yet: set activation_checkpointing = "
                      "none, or remove train.freeze");
  }
  if (c.train.dtype == "bf16-autocast") {
    throw ConfigError(kKey,
                      "train.freeze with dtype bf16-autocast is not "
                      "predicted yet (autocast keeps a frozen weight's copy "
                      "differently): use float32 or bfloat16, or remove "
                      "train.freeze");
  }
  const SizeTable table = BuildSizeTable(c, 1);
  for (const std::string& prefix : prefixes) {
    const bool covers = std::any_of(table.rows.begin(), table.rows.end(),
                                    [&](const SizeRow& row) {
                                      return row.kind == RowKind::kParameter &&
                                             PrefixCovers(prefix, row.name);
                                    });
    if (covers) continue;
    std::string nearest;
    for (const std::string& name : NearestPrefixes(table, prefix)) {
      nearest += (nearest.empty() ? "" : ", ") + name;
    }
    throw ConfigError(
        kKey, "train.freeze: '" + prefix + "' names no parameter of this " +
                  c.model + " (nearest: " + nearest +
                  "); a prefix matches whole dot-separated parts of the "
                  "names 'memprof predict --table' lists");
  }
  if (table.TrainedElements() == 0) {
    throw ConfigError(kKey, "train.freeze '" + c.train.freeze +
                                "' freezes every parameter, leaving nothing "
                                "to train; leave at least one parameter out "
                                "(such as the last block)");
  }
}

// [lora] (Note [LoRA adapters] in models/lora_rows.h), the keys together,
// before the model's sizes are counted (a table with adapters is built to
// count them): a rank when any lora key is given, and no checkpointing.
void ValidateLoraKeys(const RunConfig& c) {
  const LoraConfig& l = c.lora;
  const LoraConfig unset;
  if (l.rank < 0) {
    throw ConfigError("lora.rank",
                      "lora.rank " + std::to_string(l.rank) +
                          ": the adapters' rank must be at least 1 (8 is "
                          "usual); leave out every lora key for no adapters");
  }
  if (l.rank > kMaxDimension) {  // Note [Countable sizes]
    throw ConfigError("lora.rank", "lora.rank must be at most " +
                                       std::to_string(kMaxDimension) +
                                       ", got " + std::to_string(l.rank));
  }
  if (l.rank == 0) {
    // Another lora key without a rank: named after the key given, which
    // has the line or flag (the rank, left out, has none).
    const char* given = l.targets != unset.targets   ? "lora.targets"
                        : l.alpha != unset.alpha     ? "lora.alpha"
                        : l.dropout != unset.dropout ? "lora.dropout"
                                                     : nullptr;
    if (given == nullptr) return;
    throw ConfigError(given, std::string(given) +
                                 " is set, but lora.rank is 0 (no adapters): "
                                 "give the adapters' rank (--lora-rank 8 is "
                                 "usual), or leave out every lora key");
  }
  if (c.train.activation_checkpointing != "none") {
    throw ConfigError(
        "train.activation_checkpointing",
        "train.activation_checkpointing " + c.train.activation_checkpointing +
            " with LoRA adapters (lora.rank " + std::to_string(l.rank) +
            ") is not predicted yet: set "
            "train.activation_checkpointing = none, or leave "
            "out the lora keys");
  }
}

// [lora] with a rank: a scaling and a dropout that make sense, targets
// that name Linear modules of this model, on a model and dtype whose
// adapters run and are predicted.
void ValidateLora(const RunConfig& c) {
  const LoraConfig& l = c.lora;
  if (l.rank == 0) return;
  if (!(l.alpha > 0) || !std::isfinite(l.alpha)) {
    throw ConfigError("lora.alpha", "lora.alpha " + Describe(l.alpha) +
                                        ": the scaling alpha / rank needs "
                                        "alpha > 0 (16 or the rank is usual)");
  }
  if (!(l.dropout >= 0 && l.dropout < 1)) {
    throw ConfigError("lora.dropout",
                      "lora.dropout " + Describe(l.dropout) +
                          ": a dropout probability in [0, 1) (0 or 0.05 is "
                          "usual)");
  }
  if (c.model != "mlp" && c.model != "gpt" && c.model != "llama") {
    throw ConfigError("lora.rank", "[lora] is for mlp, gpt and llama; " +
                                       c.model +
                                       " has no adapters: remove [lora]");
  }
  const std::vector<std::string> modules = LinearModules(c);
  std::string names;  // the modules' names without their layer
  for (const std::string& module : modules) {
    const size_t layer = module.find_first_of("0123456789");
    const size_t dot = module.find('.', layer);
    const std::string name = c.model == "mlp" || dot == std::string::npos
                                 ? module
                                 : module.substr(dot + 1);
    if (names.find(name) == std::string::npos)
      names += (names.empty() ? "" : ", ") + name;
  }
  const std::vector<std::string> targets = LoraTargets(l.targets);
  if (targets.empty()) {
    // Named after the rank, which asked for adapters: a targets key left
    // at its default has no line or flag to name.
    throw ConfigError("lora.rank", "lora.rank " + std::to_string(l.rank) +
                                       " adds adapters, but lora.targets is "
                                       "empty: name the Linear modules that "
                                       "get them (--lora-targets, or targets "
                                       "in [lora]); this " +
                                       c.model + " has " + names);
  }
  for (const std::string& target : targets) {
    if (std::none_of(modules.begin(), modules.end(), [&](const std::string& m) {
          return TargetMatches(target, m);
        })) {
      throw ConfigError("lora.targets",
                        "lora.targets: '" + target +
                            "' matches no Linear module of this " + c.model +
                            " (a module matches when its name is the target "
                            "or ends in '.' + target); it has " +
                            names);
    }
  }
  if (c.train.dtype == "bf16-autocast" && l.dropout > 0) {
    throw ConfigError("lora.dropout",
                      "lora.dropout with dtype bf16-autocast is not predicted "
                      "yet: set lora.dropout = 0, or use float32 or bfloat16");
  }
}

}  // namespace

void ValidateRunConfig(const RunConfig& c) {
  if (c.model == "mlp") {
    RequireSize("mlp.input", c.mlp.input);
    RequireSize("mlp.hidden", c.mlp.hidden);
    RequireSize("mlp.depth", c.mlp.depth, kMaxLayers);
    RequireSize("mlp.output", c.mlp.output);
  } else if (c.model == "gpt") {
    ValidateGpt(c.gpt);
  } else if (c.model == "llama") {
    ValidateLlama(c.llama);
  } else if (c.model != "resnet") {
    throw ConfigError("model", "unknown model '" + c.model +
                                   "'; known models: " + kKnownModels);
  }
  RequireSize("train.micro_batch", c.train.micro_batch);
  RequireSize("train.steps", c.train.steps);
  // Every step leaves about 236 B of rank report (its peak and times,
  // Note [File size caps] in profiler/base/regular_file.h): 300,000 steps
  // wrote 68.2 MiB, which report, check and baseline refused to read.
  // 100,000 steps take about 23 MB, beside at most 5,000 micro-batches'
  // detail (Note [Kept detail bound]).
  if (c.train.steps > kMaxSteps) {
    throw ConfigError(
        "train.steps",
        "train.steps must be at most " + std::to_string(kMaxSteps) + ", got " +
            std::to_string(c.train.steps) +
            ": each step adds to the rank report, and memprof reads reports "
            "of at most 64 MiB; the steady state repeats from step " +
            std::to_string(kFirstSteadyStep) + ", so a few steps profile it");
  }
  // Step 1 creates the gradients and the optimizer state and DDP rebuilds
  // its buckets in step 2: a steady state needs a step after both.
  if (c.train.steps < kFirstSteadyStep) {
    throw ConfigError(
        "train.steps",
        "train.steps must be at least " + std::to_string(kFirstSteadyStep) +
            ", got " + std::to_string(c.train.steps) +
            ": step 1 creates the gradients and the optimizer state and DDP "
            "rebuilds its buckets in step 2, so the steady state memprof "
            "reports begins at step " +
            std::to_string(kFirstSteadyStep));
  }
  RequireFinitePositive("train.lr", c.train.lr);
  RequireSize("ddp.world_size", c.ddp.world_size, kMaxDdpWorldSize);
  RequireFinitePositive("ddp.bucket_cap_mb", c.ddp.bucket_cap_mb);
  if (c.ddp.bucket_cap_mb > kMaxBucketCapMb) {
    throw ConfigError("ddp.bucket_cap_mb",
                      "ddp.bucket_cap_mb must be at most " +
                          std::to_string(kMaxBucketCapMb) + " (1 TiB), got " +
                          Describe(c.ddp.bucket_cap_mb));
  }
  RequireSize("ddp.timeout_s", c.ddp.timeout_s, kMaxTimeoutS);
  if (c.train.global_batch < 0) {
    throw ConfigError("train.global_batch",
                      "train.global_batch must be positive (or 0 for unset), "
                      "got " +
                          std::to_string(c.train.global_batch));
  }
  if (c.train.global_batch > kMaxDimension) {
    throw ConfigError("train.global_batch",
                      "train.global_batch must be at most " +
                          std::to_string(kMaxDimension) + ", got " +
                          std::to_string(c.train.global_batch));
  }
  if (c.train.grad_accum < 1 || c.train.grad_accum > kMaxGradAccum) {
    throw ConfigError(
        "train.grad_accum",
        "train.grad_accum must be between 1 (no accumulation) and " +
            std::to_string(kMaxGradAccum) + " micro-batches per optimizer " +
            "step, got " + std::to_string(c.train.grad_accum) +
            "; set it to the number of micro-batches whose gradients each "
            "optimizer step sums");
  }
  if (c.train.global_batch > 0 &&
      c.train.global_batch % (c.ddp.world_size * c.train.grad_accum) != 0) {
    const bool accumulating = c.train.grad_accum > 1;
    throw ConfigError(
        "train.global_batch",
        "train.global_batch " + std::to_string(c.train.global_batch) +
            " does not divide over ddp.world_size " +
            std::to_string(c.ddp.world_size) +
            (accumulating
                 ? " x train.grad_accum " + std::to_string(c.train.grad_accum)
                 : std::string()) +
            "; choose a multiple of " +
            std::to_string(c.ddp.world_size * c.train.grad_accum));
  }
  // Note [Config key table]: each key with choices takes one of them.
  for (const ConfigKey& key : ConfigKeyTable()) {
    if (key.name == std::string("model") ||
        key.name == std::string("resnet.depth")) {
      continue;  // above and in ValidateResnet: each with its own remedy
    }
    if (key.name == std::string("ddp.backend") && c.ddp.backend.empty()) {
      continue;  // the device's default
    }
    RequireConfigChoice(key, c);
  }
  if (!std::isfinite(c.train.momentum) || c.train.momentum < 0 ||
      c.train.momentum >= 1) {
    throw ConfigError(
        "train.momentum",
        "train.momentum must be in [0, 1), got " + Describe(c.train.momentum));
  }
  // Sizes are positive; the seed is the one integer that may be 0.
  if (c.train.seed < 0 || c.train.seed > std::numeric_limits<int32_t>::max()) {
    throw ConfigError("train.seed",
                      "train.seed must be in [0, 2147483647], "
                      "got " +
                          std::to_string(c.train.seed));
  }
  if (c.train.momentum != 0 && c.train.optimizer != "sgd") {
    throw ConfigError("train.momentum",
                      "train.momentum is sgd's; " + c.train.optimizer +
                          " keeps its own moments (exp_avg, exp_avg_sq): "
                          "set train.optimizer = sgd or leave momentum at 0");
  }
  if (c.train.activation_checkpointing == "blocks" && c.model == "mlp") {
    throw ConfigError("train.activation_checkpointing",
                      "train.activation_checkpointing blocks needs a model "
                      "with blocks (gpt, llama: transformer blocks, resnet: "
                      "residual blocks); mlp has none: use none");
  }
  if (c.ddp.backend == "nccl" && c.train.device != "cuda") {
    throw ConfigError("ddp.backend",
                      "ddp.backend nccl needs train.device cuda (NCCL "
                      "reduces GPU tensors only); use gloo on cpu");
  }
  if (c.model == "resnet") ValidateResnet(c.resnet, MicroBatch(c));
  ValidateLoraKeys(c);
  RequireCountable(c);
  ValidateLora(c);
  ValidateFreeze(c);
}

}  // namespace memprof
