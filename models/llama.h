// Llama-family decoders (Llama, Mistral, Qwen2) in the LibTorch C++ API,
// op for op as Hugging Face's modeling_llama.py computes them in training
// (Note [Llama as Hugging Face computes it] in llama.cc): a token
// embedding, pre-RMSNorm decoder layers of grouped-query causal attention
// with rotary positions and a SwiGLU MLP, a final RMSNorm, an output head
// (tied to the embedding or not) and the causal-LM loss. Parameter names
// follow the published checkpoints ("model.layers.0.self_attn.q_proj.weight");
// models/llama_table.cc is its size table.
#pragma once

#include <torch/torch.h>

#include "models/model.h"

namespace memprof {

// RMSNorm in float32: x / sqrt(mean(x^2) + eps), cast back to x's dtype,
// times the weight.
class LlamaRmsNormImpl : public torch::nn::Module {
 public:
  LlamaRmsNormImpl(int64_t width, double eps);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  double eps_;
  torch::Tensor weight_;
};
TORCH_MODULE(LlamaRmsNorm);

class LlamaLayerImpl : public torch::nn::Module {
 public:
  // lora: how the adapters AttachAdapters gives its Linears compute.
  LlamaLayerImpl(const LlamaConfig& config, const LoraConfig& lora);
  // x: [B, T, d]; cos, sin: [1, T, head_dim], shared by every layer.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos,
                        const torch::Tensor& sin);

 private:
  torch::Tensor Attention(const torch::Tensor& x, const torch::Tensor& cos,
                          const torch::Tensor& sin);

  // linear(x) as Hugging Face computes it, with its adapter.
  torch::Tensor Project(const torch::nn::Linear& linear,
                        const torch::Tensor& x);

  int64_t head_dim_;
  LoraConfig lora_;
  torch::nn::Linear q_proj_{nullptr}, k_proj_{nullptr}, v_proj_{nullptr},
      o_proj_{nullptr};
  torch::nn::Linear gate_proj_{nullptr}, up_proj_{nullptr}, down_proj_{nullptr};
  LlamaRmsNorm input_layernorm_{nullptr}, post_attention_layernorm_{nullptr};
};
TORCH_MODULE(LlamaLayer);

class LlamaImpl : public torch::nn::Module {
 public:
  // checkpoint_blocks: each decoder layer runs checkpointed
  // (models/checkpoint.h).
  LlamaImpl(const LlamaConfig& config, bool checkpoint_blocks,
            const LoraConfig& lora = {});
  // token_ids: [B, T] int64 -> logits [B, T, V], in the weights' dtype
  // (bfloat16 under autocast).
  torch::Tensor forward(const torch::Tensor& token_ids);

 private:
  bool checkpoint_blocks_;
  torch::nn::Embedding embed_tokens_{nullptr};
  torch::nn::ModuleList layers_;
  LlamaRmsNorm norm_{nullptr};
  torch::Tensor inv_freq_;              // [head_dim / 2]
  torch::nn::Linear lm_head_{nullptr};  // null when tied
};
TORCH_MODULE(Llama);

class LlamaModel final : public TrainableModel {
 public:
  LlamaModel(const LlamaConfig& config, bool checkpoint_blocks,
             const LoraConfig& lora = {});
  torch::nn::Module& module() override { return *llama_; }
  // Random token ids and labels, [B, T] each.
  Batch MakeBatch(int64_t micro_batch) override;
  // Hugging Face's causal-LM loss: the labels shifted left by one (the
  // last position ignored), the logits upcast to float32, cross-entropy.
  torch::Tensor Loss(const Batch& batch) override;

 private:
  LlamaConfig config_;
  Llama llama_;
};

}  // namespace memprof
