#include "models/gpt.h"

#include "models/checkpoint.h"
#include "models/lora.h"
#include "models/scope_observer.h"

#include <cmath>
#include <limits>

namespace memprof {
namespace F = torch::nn::functional;
namespace {

constexpr double kLayerNormEps = 1e-5;  // GPT-2's

torch::nn::LayerNorm MakeLayerNorm(int64_t d) {
  return torch::nn::LayerNorm(
      torch::nn::LayerNormOptions({d}).eps(kLayerNormEps));
}

}  // namespace

GptBlockImpl::GptBlockImpl(const GptConfig& c, const LoraConfig& lora)
    : heads_(c.heads), dropout_(c.dropout), lora_(lora) {
  const int64_t d = c.d_model;
  ln_1_ = register_module("ln_1", MakeLayerNorm(d));
  auto attn = register_module("attn", std::make_shared<torch::nn::Module>());
  c_attn_ = attn->register_module("c_attn", torch::nn::Linear(d, 3 * d));
  attn_proj_ = attn->register_module("c_proj", torch::nn::Linear(d, d));
  ln_2_ = register_module("ln_2", MakeLayerNorm(d));
  auto mlp = register_module("mlp", std::make_shared<torch::nn::Module>());
  c_fc_ = mlp->register_module("c_fc", torch::nn::Linear(d, 4 * d));
  mlp_proj_ = mlp->register_module("c_proj", torch::nn::Linear(4 * d, d));
}

// Dropout only when p > 0, so a dropout-free model runs no dropout op.
torch::Tensor GptBlockImpl::Dropout(const torch::Tensor& x) {
  return dropout_ > 0
             ? F::dropout(x, F::DropoutFuncOptions().p(dropout_).training(
                                 is_training()))
             : x;
}

torch::Tensor GptBlockImpl::Project(torch::nn::Linear& linear,
                                    const torch::Tensor& x) {
  return WithAdapter(*linear, x, linear(x), lora_, is_training());
}

torch::Tensor GptBlockImpl::Attention(const torch::Tensor& x,
                                      const torch::Tensor& causal_mask) {
  const int64_t b = x.size(0), t = x.size(1), d = x.size(2);
  const int64_t hd = d / heads_;
  const std::vector<torch::Tensor> qkv =
      Project(c_attn_, x).split(d, /*dim=*/2);
  // [B, T, d] -> [B, h, T, d/h]
  auto heads = [&](const torch::Tensor& y) {
    return y.view({b, t, heads_, hd}).transpose(1, 2);
  };
  const torch::Tensor q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
  torch::Tensor att =
      torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(hd)));
  att = att.masked_fill(causal_mask, -std::numeric_limits<float>::infinity());
  att = Dropout(torch::softmax(att, /*dim=*/-1));
  const torch::Tensor y =
      torch::matmul(att, v).transpose(1, 2).contiguous().view({b, t, d});
  return Dropout(Project(attn_proj_, y));
}

torch::Tensor GptBlockImpl::forward(const torch::Tensor& x,
                                    const torch::Tensor& causal_mask) {
  const torch::Tensor mid = x + Attention(ln_1_(x), causal_mask);
  return mid + Dropout(Project(
                   mlp_proj_, torch::gelu(Project(c_fc_, ln_2_(mid)), "tanh")));
}

GptImpl::GptImpl(const GptConfig& c, bool checkpoint_blocks,
                 const LoraConfig& lora)
    : dropout_(c.dropout), checkpoint_blocks_(checkpoint_blocks) {
  wte_ = register_module("wte", torch::nn::Embedding(c.vocab, c.d_model));
  wpe_ =
      register_module("wpe", torch::nn::Embedding(GptPositions(c), c.d_model));
  for (int64_t i = 0; i < c.layers; ++i) h_->push_back(GptBlock(c, lora));
  register_module("h", h_);
  ln_f_ = register_module("ln_f", MakeLayerNorm(c.d_model));
}

torch::Tensor GptImpl::forward(const torch::Tensor& token_ids) {
  const int64_t t = token_ids.size(1);
  // Positions and the mask on the tokens' device.
  const auto on = token_ids.options();
  torch::Tensor x = wte_(token_ids) + wpe_(torch::arange(t, on));
  if (dropout_ > 0) {
    x = F::dropout(x,
                   F::DropoutFuncOptions().p(dropout_).training(is_training()));
  }
  const torch::Tensor causal_mask =
      torch::ones({t, t}, on.dtype(torch::kBool)).triu(/*diagonal=*/1);
  for (size_t i = 0; i < h_->size(); ++i) {
    GptBlockImpl* block = h_[i]->as<GptBlock>();
    const std::string scope = "h." + std::to_string(i);
    if (checkpoint_blocks_) {
      x = Checkpoint(
          [block, causal_mask, scope](const torch::Tensor& in,
                                      bool /*recomputing*/) {
            const ModelScope named(scope);
            return block->forward(in, causal_mask);
          },
          x);
    } else {
      const ModelScope named(scope);
      x = block->forward(x, causal_mask);
    }
  }
  // The output projection is the token embedding, transposed (tied).
  return torch::matmul(ln_f_(x), wte_->weight.t());
}

GptModel::GptModel(const GptConfig& config, bool checkpoint_blocks,
                   const LoraConfig& lora)
    : config_(config), gpt_(config, checkpoint_blocks, lora) {}

Batch GptModel::MakeBatch(int64_t micro_batch) {
  return TokenBatch(micro_batch, config_.seq_len, config_.vocab);
}

torch::Tensor GptModel::Loss(const Batch& batch) {
  const torch::Tensor logits = gpt_->forward(batch.input);
  return F::cross_entropy(logits.view({-1, config_.vocab}),
                          batch.target.view({-1}));
}

}  // namespace memprof
