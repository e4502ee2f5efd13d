#include "profiler/base/config_keys.h"

#include <cstdio>

#include "profiler/base/errors.h"

namespace memprof {
namespace {

// clang-format off
#define MEMPROF_FIELD(member) \
  [](RunConfig& c) -> ConfigField { return &c.member; }
// clang-format on

const char* const kModelSize = "required when model is this key's section";

std::vector<ConfigKey> BuildTable() {
  return {
      {"model",
       MEMPROF_FIELD(model),
       {{"mlp", ""},
        {"gpt", "GPT-2"},
        {"llama", "Llama, Mistral, Qwen2"},
        {"resnet", "ResNet v1.5"}},
       "model family",
       "required"},
      {"mlp.input", MEMPROF_FIELD(mlp.input), {}, "input features", kModelSize},
      {"mlp.hidden", MEMPROF_FIELD(mlp.hidden), {}, "hidden width", kModelSize},
      {"mlp.depth",
       MEMPROF_FIELD(mlp.depth),
       {},
       "number of hidden layers",
       kModelSize},
      {"mlp.output",
       MEMPROF_FIELD(mlp.output),
       {},
       "output classes",
       kModelSize},
      {"gpt.layers",
       MEMPROF_FIELD(gpt.layers),
       {},
       "transformer blocks",
       kModelSize},
      {"gpt.d_model",
       MEMPROF_FIELD(gpt.d_model),
       {},
       "model width",
       kModelSize},
      {"gpt.heads",
       MEMPROF_FIELD(gpt.heads),
       {},
       "attention heads (divide d_model)",
       kModelSize},
      {"gpt.seq_len",
       MEMPROF_FIELD(gpt.seq_len),
       {},
       "tokens per sample",
       kModelSize},
      {"gpt.positions",
       MEMPROF_FIELD(gpt.positions),
       {},
       "rows of the position table, the longest sequence the model takes "
       "(0: gpt.seq_len)"},
      {"gpt.vocab",
       MEMPROF_FIELD(gpt.vocab),
       {},
       "vocabulary size",
       kModelSize},
      {"gpt.dropout",
       MEMPROF_FIELD(gpt.dropout),
       {},
       "dropout probability, in [0, 1)"},
      {"llama.num_hidden_layers",
       MEMPROF_FIELD(llama.num_hidden_layers),
       {},
       "decoder layers",
       kModelSize},
      {"llama.hidden_size",
       MEMPROF_FIELD(llama.hidden_size),
       {},
       "model width",
       kModelSize},
      {"llama.intermediate_size",
       MEMPROF_FIELD(llama.intermediate_size),
       {},
       "the MLP's width (gate_proj, up_proj)",
       kModelSize},
      {"llama.num_attention_heads",
       MEMPROF_FIELD(llama.num_attention_heads),
       {},
       "query heads",
       kModelSize},
      {"llama.num_key_value_heads",
       MEMPROF_FIELD(llama.num_key_value_heads),
       {},
       "key/value heads, dividing the query heads (0: as many as the query "
       "heads)"},
      {"llama.head_dim",
       MEMPROF_FIELD(llama.head_dim),
       {},
       "width of a head, even (0: hidden_size / num_attention_heads)"},
      {"llama.vocab_size",
       MEMPROF_FIELD(llama.vocab_size),
       {},
       "vocabulary size",
       kModelSize},
      {"llama.tie_word_embeddings",
       MEMPROF_FIELD(llama.tie_word_embeddings),
       {{"true", ""}, {"false", ""}},
       "the output head is the token embedding"},
      {"llama.attention_bias",
       MEMPROF_FIELD(llama.attention_bias),
       {{"true", ""}, {"false", ""}},
       "biases on q_proj, k_proj, v_proj and o_proj"},
      {"llama.qkv_bias",
       MEMPROF_FIELD(llama.qkv_bias),
       {{"true", ""}, {"false", ""}},
       "biases on q_proj, k_proj and v_proj only, as Qwen2 has"},
      {"llama.mlp_bias",
       MEMPROF_FIELD(llama.mlp_bias),
       {{"true", ""}, {"false", ""}},
       "biases on gate_proj, up_proj and down_proj"},
      {"llama.rms_norm_eps",
       MEMPROF_FIELD(llama.rms_norm_eps),
       {},
       "RMSNorm's epsilon"},
      {"llama.rope_theta",
       MEMPROF_FIELD(llama.rope_theta),
       {},
       "rotary base frequency"},
      {"llama.seq_len",
       MEMPROF_FIELD(llama.seq_len),
       {},
       "tokens per sample",
       kModelSize},
      {"resnet.depth",
       MEMPROF_FIELD(resnet.depth),
       {{"18", "basic blocks"},
        {"34", "basic blocks"},
        {"50", "bottleneck blocks"},
        {"101", "bottleneck blocks"},
        {"152", "bottleneck blocks"}},
       "layers",
       kModelSize},
      {"resnet.width",
       MEMPROF_FIELD(resnet.width),
       {},
       "channels of the first stage (64 in the published models)",
       kModelSize},
      {"resnet.resolution",
       MEMPROF_FIELD(resnet.resolution),
       {},
       "input images are resolution x resolution",
       kModelSize},
      {"resnet.classes",
       MEMPROF_FIELD(resnet.classes),
       {},
       "output classes",
       kModelSize},
      {"train.micro_batch",
       MEMPROF_FIELD(train.micro_batch),
       {},
       "samples per rank per micro-batch (per step without accumulation)",
       "required unless train.global_batch is set"},
      {"train.global_batch",
       MEMPROF_FIELD(train.global_batch),
       {},
       "samples per optimizer step over all ranks; the micro-batch is then "
       "global / (world size x grad_accum); given with the micro-batch, it "
       "sets grad_accum = global / (micro-batch x world size) (0: unset)"},
      {"train.grad_accum",
       MEMPROF_FIELD(train.grad_accum),
       {},
       "micro-batches per optimizer step, their gradients accumulated; the "
       "all-reduce runs once per optimizer step"},
      {"train.steps",
       MEMPROF_FIELD(train.steps),
       {},
       "training steps (at least 3: the steady state begins at step 3)"},
      {"train.optimizer",
       MEMPROF_FIELD(train.optimizer),
       {{"adam", ""}, {"adamw", ""}, {"sgd", ""}},
       "optimizer"},
      {"train.momentum",
       MEMPROF_FIELD(train.momentum),
       {},
       "sgd's momentum, in [0, 1) (0: no momentum buffer)"},
      {"train.lr", MEMPROF_FIELD(train.lr), {}, "learning rate"},
      {"train.dtype",
       MEMPROF_FIELD(train.dtype),
       {{"float32", ""},
        {"bf16-autocast", "float32 weights, the forward autocast to bfloat16"},
        {"bfloat16", "everything in bfloat16"}},
       "number format"},
      {"train.activation_checkpointing",
       MEMPROF_FIELD(train.activation_checkpointing),
       {{"none", ""},
        {"blocks",
         "each GPT or Llama layer or ResNet block recomputed in backward"}},
       "activation checkpointing"},
      {"train.device",
       MEMPROF_FIELD(train.device),
       {{"cpu", ""}, {"cuda", "local rank r trains on GPU r"}},
       "device to train on"},
      {"train.zero_grad_set_to_none",
       MEMPROF_FIELD(train.zero_grad_set_to_none),
       {{"true", ""}, {"false", ""}},
       "free gradients after each step instead of zeroing them"},
      {"train.seed",
       MEMPROF_FIELD(train.seed),
       {},
       "random seed (the weights on every rank; rank r draws its data from "
       "seed + 1 + r)"},
      {"train.freeze",
       MEMPROF_FIELD(train.freeze),
       {},
       "comma list of parameter-name prefixes to freeze (no gradient, no "
       "optimizer state, no bucket space): h.0,h.1 freezes every parameter "
       "named h.0.* or h.1.*; 'memprof predict --table' lists the names",
       "none"},
      {"lora.rank",
       MEMPROF_FIELD(lora.rank),
       {},
       "LoRA adapters' rank r: each target Linear (out x in) gains A (r x "
       "in) and B (out x r), and every base weight is frozen",
       "0 (no adapters)"},
      {"lora.alpha",
       MEMPROF_FIELD(lora.alpha),
       {},
       "LoRA scaling: the adapter's output is multiplied by alpha / rank"},
      {"lora.dropout",
       MEMPROF_FIELD(lora.dropout),
       {},
       "dropout on the adapter's input in training, in [0, 1)"},
      {"lora.targets",
       MEMPROF_FIELD(lora.targets),
       {},
       "comma list of the Linear modules that get adapters, matched by name "
       "suffix: q_proj,v_proj (llama), c_attn or attn.c_proj (gpt), "
       "layers.0 (mlp)",
       "none"},
      {"ddp.world_size", MEMPROF_FIELD(ddp.world_size), {}, "number of ranks"},
      {"ddp.bucket_cap_mb",
       MEMPROF_FIELD(ddp.bucket_cap_mb),
       {},
       "DDP bucket size in MiB"},
      {"ddp.gradient_as_bucket_view",
       MEMPROF_FIELD(ddp.gradient_as_bucket_view),
       {{"true", ""}, {"false", ""}},
       "gradients are views into the DDP buckets"},
      {"ddp.timeout_s",
       MEMPROF_FIELD(ddp.timeout_s),
       {},
       "collective timeout in seconds"},
      {"ddp.backend",
       MEMPROF_FIELD(ddp.backend),
       {{"gloo", ""}, {"nccl", "train.device cuda only"}},
       "collective backend",
       "nccl on cuda, gloo on cpu"},
      {"ddp.zero_stage",
       MEMPROF_FIELD(ddp.zero_stage),
       {{"0", "replicated optimizer state"},
        {"1", "optimizer state sharded across the ranks (ZeRO-1)"}},
       "optimizer state sharding"},
  };
}

#undef MEMPROF_FIELD

}  // namespace

const std::vector<ConfigKey>& ConfigKeyTable() {
  static const std::vector<ConfigKey> table = BuildTable();
  return table;
}

const ConfigKey* FindConfigKey(const std::string& name) {
  for (const ConfigKey& key : ConfigKeyTable()) {
    if (name == key.name) return &key;
  }
  return nullptr;
}

std::string ConfigValueText(const ConfigKey& key, const RunConfig& config) {
  // The field is only read.
  const ConfigField field = key.field(const_cast<RunConfig&>(config));
  if (const auto* text = std::get_if<std::string*>(&field)) return **text;
  if (const auto* flag = std::get_if<bool*>(&field)) {
    return **flag ? "true" : "false";
  }
  if (const auto* number = std::get_if<int64_t*>(&field)) {
    return std::to_string(**number);
  }
  char text[32];
  std::snprintf(text, sizeof text, "%g", *std::get<double*>(field));
  return text;
}

bool IsModelSizeKey(const ConfigKey& key) {
  return std::string(key.default_text) == kModelSize;
}

std::string ConfigDefaultText(const ConfigKey& key) {
  if (key.default_text[0] != '\0') return key.default_text;
  return ConfigValueText(key, RunConfig{});
}

std::string ConfigChoicesText(const ConfigKey& key) {
  std::string text;
  for (const ConfigChoice& choice : key.choices) {
    if (!text.empty()) text += ", ";
    text += choice.value;
    if (choice.meaning[0] != '\0')
      text += std::string(" (") + choice.meaning + ")";
  }
  return text;
}

std::string ConfigValueName(const ConfigKey& key) {
  RunConfig config;
  const ConfigField field = key.field(config);
  if (std::holds_alternative<bool*>(field)) return "BOOL";
  if (!key.choices.empty()) return "CHOICE";
  if (std::holds_alternative<int64_t*>(field)) return "N";
  if (std::holds_alternative<double*>(field)) return "X";
  return "TEXT";
}

void RequireConfigChoice(const ConfigKey& key, const RunConfig& config) {
  if (key.choices.empty()) return;
  const std::string value = ConfigValueText(key, config);
  for (const ConfigChoice& choice : key.choices) {
    if (value == choice.value) return;
  }
  throw ConfigError(key.name, std::string("unknown ") + key.name + " '" +
                                  value +
                                  "'; known: " + ConfigChoicesText(key));
}

}  // namespace memprof
