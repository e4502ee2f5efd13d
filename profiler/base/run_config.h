// RunConfig: everything a run needs, as a plain struct. Only the CLI
// (config_cli.h) parses files and flags into it; the library never does.
// Keys are listed in DESIGN.md "Config keys and flags".
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace memprof {

struct MlpConfig {
  int64_t input = 784;    // features per sample
  int64_t hidden = 1024;  // width of each hidden layer
  int64_t depth = 2;      // number of hidden layers
  int64_t output = 10;    // classes
};

// GPT-2: learned positions, pre-LayerNorm blocks, causal self-attention,
// 4x MLP with tanh-GELU, final LayerNorm, output tied to the token embedding.
struct GptConfig {
  int64_t layers = 12;
  int64_t d_model = 768;
  int64_t heads = 12;  // must divide d_model
  int64_t seq_len = 1024;
  int64_t vocab = 50257;
  double dropout = 0;  // in [0, 1)
  // Rows of the position table: the longest sequence the model takes, as
  // GPT-2's n_positions (1024 for every released size). 0: seq_len rows.
  // Training on shorter sequences leaves the table, and the weights, as
  // they are.
  int64_t positions = 0;
};

// Llama-family decoders (Llama, Mistral, Qwen2), keys named as in a
// Hugging Face config.json: RMSNorm, rotary positions, grouped-query
// attention, a SwiGLU MLP, tied or untied output head (models/llama.h).
struct LlamaConfig {
  int64_t num_hidden_layers = 32;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 11008;
  int64_t num_attention_heads = 32;
  // 0: as many as num_attention_heads (config.json's null); else divides it.
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // 0: hidden_size / num_attention_heads; even
  int64_t vocab_size = 32000;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // biases on q_proj, k_proj, v_proj, o_proj
  // Biases on q_proj, k_proj and v_proj only, as Qwen2 always has (not a
  // config.json field: Qwen2ForCausalLM implies it).
  bool qkv_bias = false;
  bool mlp_bias = false;  // biases on gate_proj, up_proj, down_proj
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000;
  int64_t seq_len = 2048;  // tokens per sample
};

// gpt.positions, num_key_value_heads and head_dim with their defaults
// resolved.
int64_t GptPositions(const GptConfig& config);
int64_t KeyValueHeads(const LlamaConfig& config);
int64_t HeadDim(const LlamaConfig& config);

// ResNet v1.5 (stride in the 3x3 conv) with BatchNorm, as torchvision's.
struct ResnetConfig {
  int64_t depth = 50;        // 18 | 34 (basic blocks), 50 | 101 | 152
  int64_t width = 64;        // channels of the stem and the first stage
  int64_t resolution = 224;  // input images are resolution x resolution
  int64_t classes = 1000;
};

struct TrainConfig {
  int64_t micro_batch = 8;  // samples per rank per micro-batch
  // 0: unset; else micro_batch = global / (world * grad_accum).
  int64_t global_batch = 0;
  // Micro-batches per optimizer step, their gradients accumulated in place;
  // the DDP all-reduce runs on the last one only (Note [Gradient
  // accumulation] in profiler/train/trainer.cc).
  int64_t grad_accum = 1;
  int64_t steps = 3;
  std::string optimizer = "adam";  // adam | adamw | sgd
  double momentum = 0;  // sgd: one momentum buffer per parameter when > 0
  double lr = 1e-3;
  std::string dtype = "float32";
  // none | blocks: each GPT or Llama transformer block and ResNet block
  // reruns its forward in backward (models/checkpoint.h).
  std::string activation_checkpointing = "none";
  std::string device = "cpu";  // cpu | cuda (local rank r on cuda:r)
  bool zero_grad_set_to_none = false;
  int64_t seed = 0;  // rank r draws its data from seed + 1 + r
  // Comma list of parameter-name prefixes whose parameters are frozen (no
  // gradient, no optimizer state, no bucket space); "" freezes none
  // (profiler/base/frozen_parameters.h).
  std::string freeze;
};

// [lora]: low-rank adapters on the model's Linear modules (Note [LoRA
// adapters] in models/lora.h). rank 0: none.
struct LoraConfig {
  int64_t rank = 0;
  double alpha = 8;    // the adapter's output is scaled by alpha / rank
  double dropout = 0;  // on the adapter's input, in training
  // Comma list of module names matched as PEFT does (a name equal to the
  // item or ending in "." + item): q_proj,v_proj; attn.c_proj; layers.0.
  std::string targets;
};

struct DdpConfig {
  int64_t world_size = 1;
  double bucket_cap_mb = 25;
  bool gradient_as_bucket_view = false;
  int64_t timeout_s = 300;
  // gloo | nccl; "" takes the device's default (DdpBackend).
  std::string backend;
  // 0: plain replication; 1: optimizer state sharded across the ranks
  // (Note [ZeRO-1 partition] in profiler/base/zero_partition.h).
  int64_t zero_stage = 0;
};

// model = program: a program's own model, profiled through the public
// API (memprof::Session); it has no size table and no keys of its own.
struct ProgramConfig {
  std::string name = "program";  // SessionOptions::name
};

struct RunConfig {
  std::string source;  // the config file it came from ("" for defaults)
  // Each key ("mlp.hidden") -> where its value came from: "FILE:LINE", the
  // flag ("--micro-batch"), "WORLD_SIZE" (an external launcher) or
  // "default" (effective_config.h). Empty when not recorded (a report
  // written before memprof.rank/1.8).
  std::map<std::string, std::string> origins;
  std::string model = "mlp";
  MlpConfig mlp;
  GptConfig gpt;
  LlamaConfig llama;
  ResnetConfig resnet;
  ProgramConfig program;
  TrainConfig train;
  LoraConfig lora;
  DdpConfig ddp;
};

// train.grad_accum's bound: micro-batches per optimizer step.
inline constexpr int64_t kMaxGradAccum = 4096;

inline constexpr const char* kKnownModels = "mlp, gpt, llama, resnet";

// Micro-batch per rank: train.global_batch / (world_size * grad_accum) when
// the global batch is set, else train.micro_batch.
int64_t MicroBatch(const RunConfig& config);
// Samples per optimizer step over all ranks: micro-batch * world_size *
// grad_accum.
int64_t GlobalBatch(const RunConfig& config);

// Adam and AdamW keep two moments per trained parameter; SGD keeps a
// momentum buffer when train.momentum > 0; "none" (a program's session that
// tracks no optimizer) keeps nothing memprof can count.
bool KeepsMoments(const TrainConfig& train);

// The model's name in the reports: the config's model, or a program's own
// name (SessionOptions::name) for a program's model.
std::string ModelLabel(const RunConfig& config);

// The collective backend: ddp.backend, or nccl on cuda and gloo on cpu.
std::string DdpBackend(const RunConfig& config);

// Every key with its value, as written in the report's context.
nlohmann::json ToJson(const RunConfig& config);

}  // namespace memprof
