// GPT-2 (Radford et al. 2019) in the LibTorch C++ API: token and learned
// position embeddings, pre-LayerNorm blocks of causal self-attention and a
// 4x MLP with tanh-GELU, a final LayerNorm, and an output projection tied to
// the token embedding. Parameter names follow the published checkpoints
// ("h.0.attn.c_attn.weight"); models/gpt_table.cc is its size table.
#pragma once

#include <torch/torch.h>

#include "models/model.h"

namespace memprof {

class GptBlockImpl : public torch::nn::Module {
 public:
  // lora: how the adapters AttachAdapters gives its Linears compute.
  GptBlockImpl(const GptConfig& config, const LoraConfig& lora);
  // x: [B, T, d]; causal_mask: [T, T] bool, true above the diagonal.
  torch::Tensor forward(const torch::Tensor& x,
                        const torch::Tensor& causal_mask);

 private:
  torch::Tensor Attention(const torch::Tensor& x,
                          const torch::Tensor& causal_mask);
  torch::Tensor Dropout(const torch::Tensor& x);
  // linear(x), with its adapter.
  torch::Tensor Project(torch::nn::Linear& linear, const torch::Tensor& x);

  int64_t heads_;
  double dropout_;
  LoraConfig lora_;
  torch::nn::LayerNorm ln_1_{nullptr}, ln_2_{nullptr};
  torch::nn::Linear c_attn_{nullptr}, attn_proj_{nullptr};
  torch::nn::Linear c_fc_{nullptr}, mlp_proj_{nullptr};
};
TORCH_MODULE(GptBlock);

class GptImpl : public torch::nn::Module {
 public:
  // checkpoint_blocks: each block runs checkpointed (models/checkpoint.h).
  GptImpl(const GptConfig& config, bool checkpoint_blocks,
          const LoraConfig& lora = {});
  // token_ids: [B, T] int64 -> logits [B, T, V].
  torch::Tensor forward(const torch::Tensor& token_ids);

 private:
  double dropout_;
  bool checkpoint_blocks_;
  torch::nn::Embedding wte_{nullptr}, wpe_{nullptr};
  torch::nn::ModuleList h_;
  torch::nn::LayerNorm ln_f_{nullptr};
};
TORCH_MODULE(Gpt);

class GptModel final : public TrainableModel {
 public:
  GptModel(const GptConfig& config, bool checkpoint_blocks,
           const LoraConfig& lora = {});
  torch::nn::Module& module() override { return *gpt_; }
  // Random token ids and next-token targets, [B, T] each.
  Batch MakeBatch(int64_t micro_batch) override;
  torch::Tensor Loss(const Batch& batch) override;

 private:
  GptConfig config_;
  Gpt gpt_;
};

}  // namespace memprof
