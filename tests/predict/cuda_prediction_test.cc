// The prediction on a GPU (Note [CUDA prediction sequence]): the tensors of
// the predicted peak, through the caching allocator's model.
#include "profiler/predict/cuda_prediction.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "profiler/cli/config_cli.h"
#include "tests/preset_config.h"

namespace memprof {
namespace {

constexpr int64_t kMiB = 1 << 20;

// The sequence allocates exactly the tensors live at the predicted peak:
// its requested bytes then are the CPU prediction's peak, to the byte, and
// what the allocator adds is rounding, whole blocks and segments.
TEST(CudaPrediction, RequestsAtThePeakAreThePredictedPeak) {
  for (const auto& [name, extra] :
       std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"mlp-tiny", {}},
           {"gpt-tiny", {}},
           {"resnet-tiny", {}},
           {"default", {}},
           {"gpt2-small", {}},
           {"gpt-tiny", {"--ddp.gradient_as_bucket_view", "true"}},
           {"mlp-tiny", {"--train.optimizer", "sgd"}},
           {"mlp-tiny",
            {"--train.optimizer", "sgd", "--train.momentum", "0.9"}},
           {"gpt-tiny", {"--train.activation_checkpointing", "blocks"}},
           {"resnet-tiny", {"--train.activation_checkpointing", "blocks"}},
           {"gpt-tiny", {"--world-size", "4"}},
           {"mlp-tiny", {"--train.dtype", "bf16-autocast"}},
           {"gpt-tiny", {"--train.dtype", "bf16-autocast"}},
           {"resnet-tiny", {"--train.dtype", "bf16-autocast"}},
           {"gpt-tiny",
            {"--train.dtype", "bf16-autocast",
             "--train.activation_checkpointing", "blocks"}},
           {"resnet-tiny",
            {"--train.dtype", "bf16-autocast",
             "--train.activation_checkpointing", "blocks"}},
           {"gpt-tiny", {"--train.dtype", "bfloat16"}},
           {"llama-tiny", {}},
           {"llama-odd", {"--train.activation_checkpointing", "blocks"}},
           {"llama-tiny",
            {"--train.dtype", "bf16-autocast",
             "--train.activation_checkpointing", "blocks"}},
           {"llama-odd", {"--train.dtype", "bfloat16", "--micro-batch", "5"}},
           // Frozen parameters: no gradient, state or bucket blocks.
           {"mlp-tiny", {"--freeze", "layers.0,layers.2"}},
           {"gpt-tiny", {"--freeze", "wte,wpe,h.0"}},
           {"gpt-tiny",
            {"--freeze", "wte,wpe,h.0", "--world-size", "2", "--ddp.zero_stage",
             "1"}},
           {"llama-tiny", {"--freeze", "model.embed_tokens,model.layers.0"}},
           // Adapters (the recipe on a GPU, and dropout) and accumulation.
           {"llama-tiny",
            {"--lora-rank", "4", "--lora-targets", "q_proj,v_proj"}},
           {"gpt-tiny",
            {"--lora-rank", "4", "--lora-targets", "c_attn,attn.c_proj",
             "--train.dtype", "bf16-autocast", "--train.device", "cuda"}},
           {"gpt-tiny",
            {"--lora-rank", "4", "--lora-targets", "c_attn", "--lora-dropout",
             "0.1"}},
           {"mlp-tiny", {"--grad-accum", "4"}}}) {
    const RunConfig config = PredictPreset(name, extra);
    const Prediction p = Predict(config);
    const CudaPrediction cuda = PredictOnCuda(p, config);
    std::string flags;
    for (const std::string& word : extra) flags += " " + word;
    SCOPED_TRACE(name + flags);
    // A GPU run's prediction holds each request rounded to 512 B already
    // (Note [Rounded categories]).
    EXPECT_EQ(config.train.device == "cuda" ? cuda.at_peak.allocated
                                            : cuda.at_peak.requested,
              p.Peak().Total());
    EXPECT_GE(cuda.at_peak.allocated, cuda.at_peak.requested);
    EXPECT_EQ(cuda.at_peak.allocated % 512, 0);
    EXPECT_LE(cuda.at_peak.allocated + cuda.at_peak.inactive_split,
              cuda.at_peak.reserved);
    EXPECT_EQ(cuda.at_peak.reserved % (2 * kMiB), 0);
    EXPECT_LE(cuda.at_peak.reserved, cuda.peak_reserved);
  }
}

// mlp-tiny's tensors are all small (under 1 MiB) and live together in
// under 2 MiB: one small segment.
TEST(CudaPrediction, SmallTensorsShareOneSmallSegment) {
  const RunConfig config = PredictPreset("mlp-tiny");
  const CudaPrediction cuda = PredictOnCuda(Predict(config), config);
  EXPECT_EQ(cuda.at_peak.reserved, 2 * kMiB);
  EXPECT_EQ(cuda.peak_reserved, 2 * kMiB);
  EXPECT_EQ(cuda.at_peak.inactive_split, 2 * kMiB - cuda.at_peak.allocated);
}

// A larger micro-batch only adds activations: allocated grows by at least
// the requested bytes it adds, and reserved never shrinks.
TEST(CudaPrediction, MoreActivationsNeverReserveLess) {
  const RunConfig small = PredictPreset("gpt-tiny", {"--micro-batch", "2"});
  const RunConfig large = PredictPreset("gpt-tiny", {"--micro-batch", "8"});
  const CudaPrediction a = PredictOnCuda(Predict(small), small);
  const CudaPrediction b = PredictOnCuda(Predict(large), large);
  EXPECT_GE(b.at_peak.allocated - a.at_peak.allocated,
            b.at_peak.requested - a.at_peak.requested - 512 * 64);
  EXPECT_GE(b.peak_reserved, a.peak_reserved);
}

// Note [Math-path attention]: llama-tiny's 2 key/value heads of 4, in
// float32 on a GPU: the [B, H, T, T] float32 probabilities of both layers
// (4 x 2 x 4 x 4 x 32 x 32 = 131,072 B at micro-batch 4), named beside the
// GPU figures; none where a fused kernel runs.
TEST(CudaPrediction, MathPathAttentionIsNamedWhereNoFusedKernelRuns) {
  const RunConfig gqa = PredictPreset("llama-tiny", {"--train.device", "cuda"});
  EXPECT_EQ(MathPathAttentionBytes(gqa, 4), 4 * 2 * 4 * 4 * 32 * 32);
  const std::string note = MathPathAttentionNote(gqa, 4);
  EXPECT_NE(note.find("float32 attention with grouped key/value heads (2 of "
                      "4) has no fused kernel"),
            std::string::npos)
      << note;
  EXPECT_NE(note.find(": 128 KiB more at micro-batch 4"), std::string::npos)
      << note;
  EXPECT_EQ(MathPathAttentionBytes(
                PredictPreset("llama-tiny",
                              {"--train.device", "cuda",
                               "--train.activation_checkpointing", "blocks"}),
                4),
            4 * 1 * 4 * 4 * 32 * 32);
  for (const std::vector<std::string>& fused :
       {std::vector<std::string>{},  // the CPU
        {"--train.device", "cuda", "--train.dtype", "bf16-autocast"},
        {"--train.device", "cuda", "--train.dtype", "bfloat16"},
        {"--train.device", "cuda", "--llama.num_key_value_heads", "4"}}) {
    EXPECT_EQ(MathPathAttentionBytes(PredictPreset("llama-tiny", fused), 4), 0);
    EXPECT_EQ(MathPathAttentionNote(PredictPreset("llama-tiny", fused), 4), "");
  }
}

}  // namespace
}  // namespace memprof
