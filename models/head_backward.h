// The output projection's backward as a predicted moment: the workspace
// rows live while lm_head (GPT's tied wte) makes its gradients. Pure
// arithmetic: no tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "models/size_table.h"

namespace memprof {

// Note [Head backward]
// Backward begins at the loss: nll_loss's and log_softmax's gradients
// [B*T, V] (early in backward, every saved tensor still held). Then the
// loss's own saved rows go (log_softmax's output, nll_loss's target and
// total_weight), nll_loss's gradient goes, and the output projection's mm
// makes its two gradients while log_softmax's is still live:
// - float32: log_softmax's gradient, the weight's [V, d] and the input's
//   [B, T, d]; the weight's is then added into its .grad (GPT's tied wte:
//   held in autograd's input buffer for the embedding's share).
// - bfloat16: log_softmax's float32 gradient cast to the logits' bfloat16
//   (the float32 one freed), then the mm's bfloat16 gradients.
// - bf16-autocast: the mm's bfloat16 gradients, then, with the logits'
//   gradient, the projection's bfloat16 input and the weight's bfloat16
//   copy freed, their float32 copies: the input's [B, T, d] and the
//   weight's [V, d] beside its bfloat16 one. That later moment is the
//   larger whenever this one outweighs early backward.
// The two [B*T, V] of early backward grow with the micro-batch, the [V, d]
// here do not: where d outweighs B*T (one short sequence per rank) this is
// the step's peak. The MLP's last Linear is the same moment, one row per
// sample (T = 1) and a bias: its bias's gradient [O] beside the rest; an
// MLP with a wide output under SGD (no optimizer-step moment to hide it)
// measured it 26.26% over early backward. Under autocast its input is
// the last ReLU's bfloat16 output: the input's gradient stays bfloat16.
// llama-odd (d = 48, T = 17) at micro-batch 1 in float32 measured it 8.57 KiB
// over early backward, to the byte; bf16-autocast, with ONEDNN_MAX_CPU_ISA=AVX2
// (no oneDNN scratchpads), 276 B over. Rows block SizeRow::kHead: the kSaved
// rows freed before it, the kWorkspace rows live in it.
struct HeadShape {
  HeadShape(int64_t b, int64_t T, int64_t d, int64_t V, std::string weight,
            std::string upstream, Dtype loss)
      : b(b),
        T(T),
        d(d),
        V(V),
        weight(std::move(weight)),
        upstream(std::move(upstream)),
        loss(loss) {}
  int64_t b = 0, T = 0, d = 0, V = 0;
  std::string weight;    // the projection's weight (a tied one's embedding)
  std::string upstream;  // the last parameter before it in the forward
  Dtype loss = Dtype::kFloat32;  // the loss's (its gradient's) dtype
  std::string bias;              // its bias; "": none
  // The symbols of d and V in the terms; per_token: rows are [B, T]
  // (GPT, Llama), else [B] (the MLP, T = 1).
  std::string d_symbol = "d", V_symbol = "V";
  bool per_token = true;
  // bf16-autocast: its input is a bfloat16 copy of a float32 tensor (GPT's
  // ln_f output, Llama's norm), so the input's gradient is copied back to
  // float32; false: a bfloat16 tensor already (the MLP's last ReLU output).
  bool cast_input = true;
};

// Adds the kWorkspace rows of Note [Head backward] to `t`, with the
// gradients train.freeze leaves out (Note [Frozen activations]).
void AddHeadBackward(SizeTable& t, const HeadShape& head, const RowDtypes& dt);

// Marks the kSaved rows freed before the output projection's gradients
// (Note [Head backward]): the loss's, rows `loss_rows` on, and under
// autocast the projection's bfloat16 input and weight copy, the bfloat16
// rows from `after_blocks` (the first row after the blocks) up to them.
void MarkFreedBeforeHead(SizeTable& t, size_t after_blocks, size_t loss_rows,
                         const RowDtypes& dt);

}  // namespace memprof
