// A Hugging Face config.json as memprof config keys (--hf-config FILE):
// the architecture picks the model, the JSON's sizes become that model's
// keys, and every field that would change memory but that memprof does not
// model is refused or warned about by name (Note [Hugging Face config]).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/base/run_config.h"

namespace memprof {

// Note [Hugging Face config]
// The JSON is the bottom layer of a run's config: the keys of --config's
// INI file override it, and flags override both; each key it set has
// "FILE: FIELD" as its origin in the effective config.
//
// Architectures (the one name in "architectures"):
// - LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM: model = llama;
//   num_hidden_layers, hidden_size, intermediate_size, num_attention_heads,
//   num_key_value_heads, head_dim, vocab_size, tie_word_embeddings,
//   attention_bias, mlp_bias, rms_norm_eps, rope_theta keep their names
//   under [llama]. As each class builds its model: Llama reads
//   attention_bias (biases on q, k, v and o) and mlp_bias (default false)
//   and defaults num_key_value_heads to num_attention_heads; Mistral has no
//   biases; Qwen2 has biases on q, k and v (llama.qkv_bias) whatever
//   attention_bias says, and none on o or the MLP.
//   head_dim, when absent or null, is left to the model's default,
//   hidden_size / num_attention_heads. rms_norm_eps and rope_theta, when
//   absent, are the classes' defaults (1e-06, 10000.0). seq_len is not in
//   config.json (max_position_embeddings is the longest context, not a
//   training length): it comes from --config or --llama.seq_len.
// - GPT2LMHeadModel: model = gpt; n_layer, n_embd, n_head, vocab_size and
//   n_positions become gpt.layers, gpt.d_model, gpt.heads, gpt.vocab and
//   gpt.positions (the position table's rows); n_positions is also
//   gpt.seq_len's default, which --gpt.seq_len may lower without changing
//   the weights; the three dropout
//   probabilities (default 0.1) must agree and become gpt.dropout.
// Any other architecture is refused, naming the supported ones.
//
// Refused (exit 2, naming the field): a sliding window shorter than the
// run's seq_len (Mistral's sliding_window; Qwen2's sliding_window when
// use_sliding_window is true): memprof attends over the whole causal
// context, and such a window changes what attention computes and keeps.
// Mixture-of-experts fields (num_experts, num_local_experts,
// num_experts_per_tok, n_routed_experts, n_shared_experts,
// num_shared_experts, moe_intermediate_size): a different MLP.
// quantization_config: quantized weights, which memprof does not model.
// attention_dropout > 0, hidden_act other than silu, and for GPT-2 an
// n_inner other than 4 * n_embd, tie_word_embeddings false, an activation
// other than tanh-GELU, reorder_and_upcast_attn or add_cross_attention.
//
// Warned about: torch_dtype (or dtype) other than float32 while train.dtype
// is memprof's default: it is the dtype the checkpoint is stored in, not a
// training choice, so it does not set train.dtype.
//
// Accepted without effect on memory: rope_scaling (Llama 3's changes the
// rotary frequencies, not any shape), max_position_embeddings, token ids,
// initializer_range, use_cache, pretraining_tp, and any other field.

// One config key the JSON sets.
struct HfKey {
  std::string key;    // "llama.hidden_size"
  std::string value;  // as an INI value: "2048", "true", "1e-05"
  std::string field;  // the JSON field it came from: "hidden_size"
};

struct HfConfig {
  std::string path;
  std::string architecture;  // "LlamaForCausalLM"
  std::string model;         // "llama" | "gpt"
  std::vector<HfKey> keys;   // "model" first
  // The attention window, 0 when the model attends over the whole context;
  // checked against the run's seq_len by HfConfigWarnings.
  int64_t sliding_window = 0;
  std::string torch_dtype;  // "" when the file names none
};

// The largest config.json memprof reads (Note [File size caps]).
inline constexpr int64_t kMaxHfConfigFileBytes = int64_t{1} << 20;

// The config at `path` (named in errors), whose text is `text`. InputError
// "PATH: FIELD: REASON; REMEDY" for malformed JSON, a missing required
// field, a value of the wrong type or range, an unsupported architecture
// and each refused field.
HfConfig HfConfigOf(const std::string& path, const std::string& text);

// HfConfigOf the file at `path`, read as a regular file of at most
// kMaxHfConfigFileBytes.
HfConfig ReadHfConfig(const std::string& path);

// Checks `hf` against the run's effective config (its seq_len, its dtype
// and their origins): InputError for a sliding window shorter than seq_len;
// the warnings to print otherwise.
std::vector<std::string> HfConfigWarnings(const HfConfig& hf,
                                          const RunConfig& config);

}  // namespace memprof
