#include "models/llama.h"

#include <cmath>

#include "models/checkpoint.h"
#include "models/lora.h"
#include "models/scope_observer.h"

namespace memprof {
namespace F = torch::nn::functional;
namespace {

// Note [Llama as Hugging Face computes it]
// Each op is the one Hugging Face's LlamaForCausalLM (and Mistral's and
// Qwen2's, which differ only in their biases) runs in training, so that
// autograd saves the same tensors:
// - RMSNorm: the input cast to float32 (a no-op for float32), its
//   variance, x * rsqrt(variance + eps), cast back to the input's dtype,
//   then the weight multiply.
// - Rotary: inv_freq = 1 / theta^(2i / head_dim), a buffer; cos and sin of
//   positions x inv_freq (float32, outside autocast), concatenated twice
//   and cast to the hidden states' dtype, once per forward and shared by
//   the layers; q * cos + rotate_half(q) * sin, rotate_half(x) =
//   cat(-x[second half], x[first half]).
// - Attention: scaled_dot_product_attention(q, k, v, is_causal = true,
//   scale = head_dim^-0.5, enable_gqa = true): Hugging Face passes
//   enable_gqa whenever there is no attention mask (training without
//   padding), rather than repeating k and v per query head (repeat_kv).
//   Then the heads transposed back, made contiguous, and o_proj.
// - MLP: down_proj(silu(gate_proj(x)) * up_proj(x)).
// - The projections are torch::linear (ATen's linear, as Python's
//   nn.Linear calls it), not LibTorch's nn::Linear::forward, which is
//   matmul then an in-place bias add: under autocast the two cast and
//   cache the weights and biases differently.
// - Loss: the logits upcast to float32, the labels padded on the right
//   with -100 and shifted left by one, cross_entropy ignoring -100.
torch::Tensor Project(const torch::nn::Linear& linear, const torch::Tensor& x) {
  return torch::linear(x, linear->weight, linear->bias);
}

torch::nn::Linear MakeLinear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

torch::Tensor RotateHalf(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.slice(/*dim=*/-1, half), x.slice(/*dim=*/-1, 0, half)},
                    /*dim=*/-1);
}

constexpr int64_t kIgnoreIndex = -100;  // Hugging Face's

}  // namespace

LlamaRmsNormImpl::LlamaRmsNormImpl(int64_t width, double eps) : eps_(eps) {
  weight_ = register_parameter("weight", torch::ones({width}));
}

torch::Tensor LlamaRmsNormImpl::forward(const torch::Tensor& x) {
  const torch::ScalarType dtype = x.scalar_type();
  torch::Tensor h = x.to(torch::kFloat32);
  const torch::Tensor variance = h.pow(2).mean(/*dim=*/-1, /*keepdim=*/true);
  h = h * torch::rsqrt(variance + eps_);
  return weight_ * h.to(dtype);
}

LlamaLayerImpl::LlamaLayerImpl(const LlamaConfig& c, const LoraConfig& lora)
    : head_dim_(HeadDim(c)), lora_(lora) {
  const int64_t d = c.hidden_size, q = c.num_attention_heads * head_dim_,
                kv = KeyValueHeads(c) * head_dim_, i = c.intermediate_size;
  const bool qkv_bias = c.attention_bias || c.qkv_bias;
  auto attn =
      register_module("self_attn", std::make_shared<torch::nn::Module>());
  q_proj_ = attn->register_module("q_proj", MakeLinear(d, q, qkv_bias));
  k_proj_ = attn->register_module("k_proj", MakeLinear(d, kv, qkv_bias));
  v_proj_ = attn->register_module("v_proj", MakeLinear(d, kv, qkv_bias));
  o_proj_ = attn->register_module("o_proj", MakeLinear(q, d, c.attention_bias));
  auto mlp = register_module("mlp", std::make_shared<torch::nn::Module>());
  gate_proj_ = mlp->register_module("gate_proj", MakeLinear(d, i, c.mlp_bias));
  up_proj_ = mlp->register_module("up_proj", MakeLinear(d, i, c.mlp_bias));
  down_proj_ = mlp->register_module("down_proj", MakeLinear(i, d, c.mlp_bias));
  input_layernorm_ =
      register_module("input_layernorm", LlamaRmsNorm(d, c.rms_norm_eps));
  post_attention_layernorm_ = register_module("post_attention_layernorm",
                                              LlamaRmsNorm(d, c.rms_norm_eps));
}

torch::Tensor LlamaLayerImpl::Project(const torch::nn::Linear& linear,
                                      const torch::Tensor& x) {
  return WithAdapter(*linear, x, memprof::Project(linear, x), lora_,
                     is_training());
}

torch::Tensor LlamaLayerImpl::Attention(const torch::Tensor& x,
                                        const torch::Tensor& cos,
                                        const torch::Tensor& sin) {
  const int64_t b = x.size(0), t = x.size(1);
  // [B, T, heads * head_dim] -> [B, heads, T, head_dim]
  auto heads = [&](const torch::Tensor& y) {
    return y.view({b, t, -1, head_dim_}).transpose(1, 2);
  };
  torch::Tensor q = heads(Project(q_proj_, x));
  torch::Tensor k = heads(Project(k_proj_, x));
  const torch::Tensor v = heads(Project(v_proj_, x));
  const torch::Tensor c = cos.unsqueeze(1), s = sin.unsqueeze(1);
  q = q * c + RotateHalf(q) * s;
  k = k * c + RotateHalf(k) * s;
  const torch::Tensor y = at::scaled_dot_product_attention(
      q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true,
      /*scale=*/1.0 / std::sqrt(static_cast<double>(head_dim_)),
      /*enable_gqa=*/true);
  return Project(o_proj_, y.transpose(1, 2).contiguous().reshape({b, t, -1}));
}

torch::Tensor LlamaLayerImpl::forward(const torch::Tensor& x,
                                      const torch::Tensor& cos,
                                      const torch::Tensor& sin) {
  const torch::Tensor mid = x + Attention(input_layernorm_(x), cos, sin);
  const torch::Tensor h = post_attention_layernorm_(mid);
  return mid + Project(down_proj_, torch::silu(Project(gate_proj_, h)) *
                                       Project(up_proj_, h));
}

LlamaImpl::LlamaImpl(const LlamaConfig& c, bool checkpoint_blocks,
                     const LoraConfig& lora)
    : checkpoint_blocks_(checkpoint_blocks) {
  auto model = register_module("model", std::make_shared<torch::nn::Module>());
  embed_tokens_ = model->register_module(
      "embed_tokens", torch::nn::Embedding(c.vocab_size, c.hidden_size));
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    layers_->push_back(LlamaLayer(c, lora));
  }
  model->register_module("layers", layers_);
  norm_ = model->register_module("norm",
                                 LlamaRmsNorm(c.hidden_size, c.rms_norm_eps));
  auto rotary = model->register_module("rotary_emb",
                                       std::make_shared<torch::nn::Module>());
  const int64_t head_dim = HeadDim(c);
  inv_freq_ = rotary->register_buffer(
      "inv_freq",
      1.0 /
          torch::pow(
              c.rope_theta,
              torch::arange(0, head_dim, 2, torch::kLong).to(torch::kFloat32) /
                  static_cast<double>(head_dim)));
  if (!c.tie_word_embeddings) {
    lm_head_ = register_module(
        "lm_head", MakeLinear(c.hidden_size, c.vocab_size, /*bias=*/false));
  }
}

torch::Tensor LlamaImpl::forward(const torch::Tensor& token_ids) {
  const int64_t t = token_ids.size(1);
  torch::Tensor x = embed_tokens_(token_ids);
  // cos, sin: [1, T, head_dim], computed in float32 (an outer product, no
  // op autocast lowers) and cast to the hidden states' dtype.
  const torch::Tensor positions =
      torch::arange(t, token_ids.options()).to(torch::kFloat32);
  const torch::Tensor freqs =
      (positions.unsqueeze(-1) * inv_freq_.to(torch::kFloat32)).unsqueeze(0);
  const torch::Tensor angles = torch::cat({freqs, freqs}, /*dim=*/-1);
  const torch::Tensor cos = angles.cos().to(x.scalar_type());
  const torch::Tensor sin = angles.sin().to(x.scalar_type());
  for (size_t i = 0; i < layers_->size(); ++i) {
    LlamaLayerImpl* layer = layers_[i]->as<LlamaLayer>();
    const std::string scope = "model.layers." + std::to_string(i);
    if (checkpoint_blocks_) {
      x = Checkpoint(
          [layer, cos, sin, scope](const torch::Tensor& in,
                                   bool /*recomputing*/) {
            const ModelScope named(scope);
            return layer->forward(in, cos, sin);
          },
          x);
    } else {
      const ModelScope named(scope);
      x = layer->forward(x, cos, sin);
    }
  }
  x = norm_(x);
  return lm_head_ ? Project(lm_head_, x)
                  : torch::linear(x, embed_tokens_->weight);
}

LlamaModel::LlamaModel(const LlamaConfig& config, bool checkpoint_blocks,
                       const LoraConfig& lora)
    : config_(config), llama_(config, checkpoint_blocks, lora) {}

Batch LlamaModel::MakeBatch(int64_t micro_batch) {
  return TokenBatch(micro_batch, config_.seq_len, config_.vocab_size);
}

torch::Tensor LlamaModel::Loss(const Batch& batch) {
  const torch::Tensor logits = llama_->forward(batch.input).to(torch::kFloat32);
  const torch::Tensor labels =
      torch::constant_pad_nd(batch.target, {0, 1}, kIgnoreIndex);
  const torch::Tensor shifted = labels.slice(/*dim=*/-1, 1).contiguous();
  return F::cross_entropy(
      logits.view({-1, config_.vocab_size}), shifted.view({-1}),
      F::CrossEntropyFuncOptions().ignore_index(kIgnoreIndex));
}

}  // namespace memprof
