#include "profiler/base/run_config.h"

#include <nlohmann/json.hpp>

namespace memprof {
int64_t MicroBatch(const RunConfig& c) {
  return c.train.global_batch > 0
             ? c.train.global_batch / (c.ddp.world_size * c.train.grad_accum)
             : c.train.micro_batch;
}

int64_t GlobalBatch(const RunConfig& c) {
  return MicroBatch(c) * c.ddp.world_size * c.train.grad_accum;
}

bool KeepsMoments(const TrainConfig& train) {
  return train.optimizer == "adam" || train.optimizer == "adamw";
}

std::string ModelLabel(const RunConfig& c) {
  return c.model == "program" ? c.program.name : c.model;
}

std::string DdpBackend(const RunConfig& c) {
  if (!c.ddp.backend.empty()) return c.ddp.backend;
  return c.train.device == "cuda" ? "nccl" : "gloo";
}

int64_t GptPositions(const GptConfig& c) {
  return c.positions > 0 ? c.positions : c.seq_len;
}

int64_t KeyValueHeads(const LlamaConfig& c) {
  return c.num_key_value_heads > 0 ? c.num_key_value_heads
                                   : c.num_attention_heads;
}

int64_t HeadDim(const LlamaConfig& c) {
  return c.head_dim > 0 || c.num_attention_heads <= 0
             ? c.head_dim
             : c.hidden_size / c.num_attention_heads;
}

namespace {

nlohmann::json ModelSectionJson(const RunConfig& c) {
  if (c.model == "gpt") {
    return {{"layers", c.gpt.layers},
            {"d_model", c.gpt.d_model},
            {"heads", c.gpt.heads},
            {"seq_len", c.gpt.seq_len},
            {"vocab", c.gpt.vocab},
            {"dropout", c.gpt.dropout},
            {"positions", GptPositions(c.gpt)}};
  }
  if (c.model == "llama") {
    const LlamaConfig& l = c.llama;
    return {{"num_hidden_layers", l.num_hidden_layers},
            {"hidden_size", l.hidden_size},
            {"intermediate_size", l.intermediate_size},
            {"num_attention_heads", l.num_attention_heads},
            {"num_key_value_heads", KeyValueHeads(l)},
            {"head_dim", HeadDim(l)},
            {"vocab_size", l.vocab_size},
            {"tie_word_embeddings", l.tie_word_embeddings},
            {"attention_bias", l.attention_bias},
            {"qkv_bias", l.qkv_bias},
            {"mlp_bias", l.mlp_bias},
            {"rms_norm_eps", l.rms_norm_eps},
            {"rope_theta", l.rope_theta},
            {"seq_len", l.seq_len}};
  }
  if (c.model == "program") return {{"name", c.program.name}};
  if (c.model == "resnet") {
    return {{"depth", c.resnet.depth},
            {"width", c.resnet.width},
            {"resolution", c.resnet.resolution},
            {"classes", c.resnet.classes}};
  }
  return {{"input", c.mlp.input},
          {"hidden", c.mlp.hidden},
          {"depth", c.mlp.depth},
          {"output", c.mlp.output}};
}

}  // namespace

nlohmann::json ToJson(const RunConfig& c) {
  // Only the chosen model's section: the others do not describe the run.
  return {
      {"source", c.source},
      {"model", c.model},
      {c.model, ModelSectionJson(c)},
      {"train",
       {{"micro_batch", c.train.micro_batch},
        {"global_batch", c.train.global_batch},
        {"grad_accum", c.train.grad_accum},
        {"steps", c.train.steps},
        {"optimizer", c.train.optimizer},
        {"momentum", c.train.momentum},
        {"lr", c.train.lr},
        {"dtype", c.train.dtype},
        {"activation_checkpointing", c.train.activation_checkpointing},
        {"device", c.train.device},
        {"zero_grad_set_to_none", c.train.zero_grad_set_to_none},
        {"seed", c.train.seed},
        {"freeze", c.train.freeze}}},
      {"lora",
       {{"rank", c.lora.rank},
        {"alpha", c.lora.alpha},
        {"dropout", c.lora.dropout},
        {"targets", c.lora.targets}}},
      {"ddp",
       {{"world_size", c.ddp.world_size},
        {"bucket_cap_mb", c.ddp.bucket_cap_mb},
        {"gradient_as_bucket_view", c.ddp.gradient_as_bucket_view},
        {"timeout_s", c.ddp.timeout_s},
        {"backend", DdpBackend(c)},
        {"zero_stage", c.ddp.zero_stage}}},
  };
}

}  // namespace memprof
