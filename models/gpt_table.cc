// GPT-2's size table (models/gpt.h builds the module). Note [GPT saved
// tensors] lists what each op keeps for backward in LibTorch's CPU kernels.
#include <string>

#include "models/head_backward.h"
#include "models/size_table.h"

namespace memprof {

// Note [GPT saved tensors]
// Per block, with x the residual stream [B, T, d]:
//   ln_1      native_layer_norm keeps its input x and mean, rstd [B, T, 1]
//   c_attn    addmm keeps its input, ln_1's output [B, T, d]
//   q @ k^T   matmul reshapes the strided q, k views of c_attn's output to
//             [B*h, T, d/h] and [B*h, d/h, T]: two copies, both kept by bmm
//   softmax   keeps its output [B, h, T, T] (masked_fill keeps the mask,
//             one [T, T] bool shared by all blocks; the scaling keeps nothing)
//   att @ v   bmm keeps the softmax output (a view) and a copy of v
//   c_proj    addmm keeps the re-assembled heads y [B, T, d]
//   ln_2      keeps its input (x after attention) and mean, rstd
//   c_fc      keeps ln_2's output [B, T, d]
//   gelu      keeps its input, c_fc's output [B, T, 4d]
//   c_proj    keeps gelu's output [B, T, 4d]
// The residual adds keep nothing. With dropout p > 0, each dropout keeps its
// float32 noise (the size of its input); the attention dropout's output is
// kept by att @ v in place of the softmax output (which softmax still keeps).
// Outside the blocks: the position indices [T] (int64, embedding), ln_f's
// input, mean, rstd and output (kept by the tied output projection's mm),
// log_softmax's output [B*T, V] (the logits themselves are not kept), and
// nll_loss's total_weight and the loss, one float each. The token
// embedding keeps the token ids, which are an input.
//
// Note [GPT under autocast]
// Under bf16-autocast the matmuls run in bfloat16: each casts its float32
// arguments first. LibTorch's Linear on a [B, T, d] input is
// matmul(x, weight.t()) then an in-place add of the (float32) bias, so
// what a Linear keeps is its input's bfloat16 copy (a layer norm's output
// is freed once copied) and its transposed weight's bfloat16 copy, held
// until the block's backward (weight_casts; autocast's cache keeps only
// leaves, so a view's copy is never cached). Everything between the
// matmuls follows their bfloat16 outputs: q, k, v, the softmax, GELU,
// dropout noise. The residual stream stays float32 (float32 plus bfloat16
// is float32), and with it the layer norms' inputs, mean and rstd; the
// loss is autocast's float32 op: log_softmax's output is float32. The
// output projection keeps wte.weight.t()'s copy [d, V]. Checkpointed, a
// block's forward keeps no copy (its casts are freed at once); its rerun
// makes them again, held during its backward (kRecomputedCast).
//
// Note [Checkpointed activations]
// With checkpointed blocks (models/checkpoint.h) a block's forward saves
// nothing but its input, which the checkpoint keeps until the block's
// backward: forward ends holding the rows outside the blocks and one
// [B, T, d] input per block. In backward, block i reruns just before its
// own backward and saves its rows again (kRecomputed): all of a plain
// block's, except its ln_1 input, which is the kept input itself, plus the
// rerun's output [B, T, d], held while backpropagating through it. By then
// every row after the blocks (ln_f's, log_softmax's; kNoBlock) and the
// inputs of the blocks after i have been freed. Block L-1 reruns first,
// with every input still held: activations peak there. The loss is held by
// the loop throughout.
namespace {
// A block's backward stages (Note [Block stages]), in the order backward
// reaches them.
constexpr int32_t kCProj = 0, kGelu = 1, kCFc = 2, kAttention = 3;
}  // namespace

SizeTable GptSizeTable(const GptConfig& c, int64_t b, bool checkpoint_blocks,
                       Precision precision) {
  const RowDtypes dt(precision);
  const Dtype f = dt.state, lo = dt.low;
  // A layer norm's output, which the next matmul keeps: under autocast its
  // bfloat16 copy (the float32 output itself is freed).
  auto ln_out = [&dt](int ln, const char* next) {
    const std::string name = ln == 0 ? "ln_f" : "ln_" + std::to_string(ln);
    return name + (dt.autocast ? " output's bfloat16 copy (" : " output (") +
           next + " input)";
  };
  SizeTable t;
  t.symbols =
      "B = micro-batch, T = gpt.seq_len, d = gpt.d_model, "
      "h = gpt.heads, L = gpt.layers, V = gpt.vocab, N = gpt.positions";
  const auto p = RowKind::kParameter, s = RowKind::kSaved;
  const int64_t d = c.d_model, T = c.seq_len, h = c.heads, hd = d / h;
  const bool dropout = c.dropout > 0;

  t.Add("wte.weight", p, {c.vocab, d}, "[V, d]", f);
  t.Add("wpe.weight", p, {GptPositions(c), d}, "[N, d]", f);
  for (int64_t i = 0; i < c.layers; ++i) {
    const std::string n = "h." + std::to_string(i) + ".";
    t.Add(n + "ln_1.weight", p, {d}, "[d]", f);
    t.Add(n + "ln_1.bias", p, {d}, "[d]", f);
    t.Add(n + "attn.c_attn.weight", p, {3 * d, d}, "[3d, d]", f);
    t.Add(n + "attn.c_attn.bias", p, {3 * d}, "[3d]", f);
    t.Add(n + "attn.c_proj.weight", p, {d, d}, "[d, d]", f);
    t.Add(n + "attn.c_proj.bias", p, {d}, "[d]", f);
    t.Add(n + "ln_2.weight", p, {d}, "[d]", f);
    t.Add(n + "ln_2.bias", p, {d}, "[d]", f);
    t.Add(n + "mlp.c_fc.weight", p, {4 * d, d}, "[4d, d]", f);
    t.Add(n + "mlp.c_fc.bias", p, {4 * d}, "[4d]", f);
    t.Add(n + "mlp.c_proj.weight", p, {d, 4 * d}, "[d, 4d]", f);
    t.Add(n + "mlp.c_proj.bias", p, {d}, "[d]", f);
  }
  t.Add("ln_f.weight", p, {d}, "[d]", f);
  t.Add("ln_f.bias", p, {d}, "[d]", f);
  // The output projection is wte.weight itself (tied): no row of its own.

  // Which gradients need each row: Note [Frozen activations]. The forward
  // uses the parameters in the order of their rows.
  t.Add("positions", s, {T}, "[T]", Dtype::kInt64);
  t.NeededWhen("", {"wpe.weight"});
  t.Add("causal mask", s, {T, T}, "[T, T]", Dtype::kBool);
  if (c.layers > 0) {  // kept while some block's scores require grad
    t.NeededWhen("h." + std::to_string(c.layers - 1) + ".attn.c_attn.bias");
  }
  if (dropout) {
    t.Add("embedding dropout noise", s, {b, T, d}, "[B, T, d]", f);
    t.NeededWhen("wpe.weight");
  }
  t.blocks = static_cast<int32_t>(c.layers);
  for (int64_t i = 0; i < c.layers; ++i) {
    const std::string n = "h." + std::to_string(i) + ".";
    const size_t first = t.rows.size();
    // The block's own rows: saved by its forward, or by its rerun.
    const RowKind own =
        checkpoint_blocks ? RowKind::kRecomputed : RowKind::kSaved;
    // A layer norm keeps its input, mean and rstd while its input or its
    // own parameters require grad; a matmul keeps its input for its
    // weight's gradient only; the ops between the matmuls keep theirs
    // while their input requires grad (Note [Frozen activations]).
    if (checkpoint_blocks) {
      t.Add("h." + std::to_string(i) + " input (kept by the checkpoint)", s,
            {b, T, d}, "[B, T, d]", f);
    } else {
      t.Add(n + "ln_1 input (residual)", s, {b, T, d}, "[B, T, d]", f);
      t.NeededWhen(n + "ln_1.bias");
    }
    t.Add(n + "ln_1 mean", own, {b, T, 1}, "[B, T, 1]", f);
    t.NeededWhen(n + "ln_1.bias");
    t.Add(n + "ln_1 rstd", own, {b, T, 1}, "[B, T, 1]", f);
    t.NeededWhen(n + "ln_1.bias");
    t.Add(n + ln_out(1, "c_attn"), own, {b, T, d}, "[B, T, d]", lo);
    t.NeededWhen("", {n + "attn.c_attn.weight"});
    const std::string qkv = n + "attn.c_attn.bias";
    t.Add(n + "attn q copy", own, {b * h, T, hd}, "[B*h, T, d/h]", lo);
    t.NeededWhen(qkv);
    t.Add(n + "attn k^T copy", own, {b * h, hd, T}, "[B*h, d/h, T]", lo);
    t.NeededWhen(qkv);
    t.Add(n + "attn softmax output", own, {b, h, T, T}, "[B, h, T, T]", lo);
    t.NeededWhen(qkv);
    if (dropout) {
      t.Add(n + "attn dropout noise", own, {b, h, T, T}, "[B, h, T, T]", lo);
      t.NeededWhen(qkv);
      t.Add(n + "attn dropout output", own, {b, h, T, T}, "[B, h, T, T]", lo);
      t.NeededWhen(qkv);
      t.FreedAfter(kCFc);  // by att @ v's backward
    }
    t.Add(n + "attn v copy", own, {b * h, T, hd}, "[B*h, T, d/h]", lo);
    t.NeededWhen(qkv);
    // Freed by att @ v's backward, before softmax's: at B = 1 the reshape
    // makes no copy, and q, k and v are views of c_attn's output, held
    // until q @ k^T's backward.
    if (b > 1) t.FreedAfter(kCFc);
    // Freed before the attention's stage (Note [Block stages]): what the
    // MLP's and ln_2's nodes and the attention's c_proj saved; the gelu's
    // and c_proj's before that.
    t.Add(n + "attn heads (c_proj input)", own, {b, T, d}, "[B, T, d]", lo);
    t.NeededWhen("", {n + "attn.c_proj.weight"});
    t.FreedAfter(kCFc);
    if (dropout) {
      t.Add(n + "attn residual dropout noise", own, {b, T, d}, "[B, T, d]", lo);
      t.NeededWhen(n + "attn.c_proj.bias");
      t.FreedAfter(kCFc);
    }
    t.Add(n + "ln_2 input (residual)", own, {b, T, d}, "[B, T, d]", f);
    t.NeededWhen(n + "ln_2.bias");
    t.FreedAfter(kCFc);
    t.Add(n + "ln_2 mean", own, {b, T, 1}, "[B, T, 1]", f);
    t.NeededWhen(n + "ln_2.bias");
    t.FreedAfter(kCFc);
    t.Add(n + "ln_2 rstd", own, {b, T, 1}, "[B, T, 1]", f);
    t.NeededWhen(n + "ln_2.bias");
    t.FreedAfter(kCFc);
    t.Add(n + ln_out(2, "c_fc"), own, {b, T, d}, "[B, T, d]", lo);
    t.NeededWhen("", {n + "mlp.c_fc.weight"});
    t.FreedAfter(kCFc);
    t.Add(n + "mlp c_fc output (gelu input)", own, {b, T, 4 * d}, "[B, T, 4d]",
          lo);
    t.NeededWhen(n + "mlp.c_fc.bias");
    t.FreedAfter(kGelu);
    // Freed by c_proj's backward, before the gelu's.
    t.Add(n + "mlp gelu output (c_proj input)", own, {b, T, 4 * d},
          "[B, T, 4d]", lo);
    t.NeededWhen("", {n + "mlp.c_proj.weight"});
    t.FreedAfter(kCProj);
    if (dropout) {
      t.Add(n + "mlp residual dropout noise", own, {b, T, d}, "[B, T, d]", lo);
      t.NeededWhen(n + "mlp.c_proj.bias");
      t.FreedAfter(kCProj);
    }
    if (checkpoint_blocks) {
      t.Add(n + "rerun output", own, {b, T, d}, "[B, T, d]", f);
    }
    if (dt.autocast) {  // Note [GPT under autocast]
      const RowKind cast =
          checkpoint_blocks ? RowKind::kRecomputedCast : RowKind::kWeightCast;
      t.Add(n + "attn.c_attn.weight's bfloat16 copy", cast, {d, 3 * d},
            "[d, 3d]", lo);
      t.Add(n + "attn.c_proj.weight's bfloat16 copy", cast, {d, d}, "[d, d]",
            lo);
      t.Add(n + "mlp.c_fc.weight's bfloat16 copy", cast, {d, 4 * d}, "[d, 4d]",
            lo);
      t.Add(n + "mlp.c_proj.weight's bfloat16 copy", cast, {4 * d, d},
            "[4d, d]", lo);
    }
    t.SetBlock(first, static_cast<int32_t>(i));
    // Its input (the first row) is the output of the block before it, or
    // of the embeddings.
    t.SetScope(first, "h." + std::to_string(i));
    t.rows[first].scope = i == 0 ? "" : "h." + std::to_string(i - 1);
  }
  // Freed by their backward, before any block's (Note [Checkpointed
  // activations]).
  const size_t after_blocks = t.rows.size();
  t.Add("ln_f input (residual)", s, {b, T, d}, "[B, T, d]", f);
  t.NeededWhen("ln_f.bias");
  if (c.layers > 0)
    t.SetScope(after_blocks, "h." + std::to_string(c.layers - 1));
  t.Add("ln_f mean", s, {b, T, 1}, "[B, T, 1]", f);
  t.NeededWhen("ln_f.bias");
  t.Add("ln_f rstd", s, {b, T, 1}, "[B, T, 1]", f);
  t.NeededWhen("ln_f.bias");
  t.Add(ln_out(0, "lm head"), s, {b, T, d}, "[B, T, d]", lo);
  t.NeededWhen("", {"wte.weight"});
  if (dt.autocast) {
    t.Add("wte.weight's bfloat16 copy (lm head)", RowKind::kWeightCast,
          {d, c.vocab}, "[d, V]", lo);
  }
  const size_t loss_rows = t.rows.size();
  t.Add("log_softmax output", s, {b * T, c.vocab}, "[B*T, V]", f);
  t.Add("nll_loss total_weight", s, {}, "[]", f);
  t.SetBlock(after_blocks, SizeRow::kNoBlock);
  MarkFreedBeforeHead(t, after_blocks, loss_rows, dt);
  t.Add("loss", s, {}, "[]", f);

  // Backward peaks at its first nodes: nll_loss's gradient and
  // log_softmax's, both [B*T, V], live together with every saved tensor.
  t.Add("nll_loss gradient", RowKind::kWorkspace, {b * T, c.vocab}, "[B*T, V]",
        f);
  t.Add("log_softmax gradient", RowKind::kWorkspace, {b * T, c.vocab},
        "[B*T, V]", f);
  AddHeadBackward(t, {b, T, d, c.vocab, "wte.weight", "ln_f.bias", f}, dt);
  // Each block's backward peaks at one of four stages (Note [Block
  // stages]; a checkpointed block's just after its rerun), each with the
  // gradient flowing into the block, the loss's gradient and the tied
  // wte's gradient from the output projection, which waits in autograd's
  // input buffer for the embedding's share. Not checkpointed, the last
  // block's are the busiest: every block's saved tensors are still held,
  // the rows after the blocks freed.
  t.stages = {"at its MLP's c_proj", "at its MLP's gelu", "at its MLP's c_fc",
              "in its attention's backward"};
  for (int32_t i = 0; i < t.blocks; ++i) {
    const std::string n = "h." + std::to_string(i) + " backward: ";
    const std::string l = "h." + std::to_string(i) + ".";
    const auto w = RowKind::kWorkspace;
    // The block's backward runs while some parameter up to its last
    // requires grad (Note [Frozen activations]).
    const std::string runs = l + "mlp.c_proj.bias";
    const auto stage = [&](int32_t k, const auto& add_own_rows) {
      const size_t first = t.rows.size();
      t.Add(n + "gradient into the block", w, {b, T, d}, "[B, T, d]", f);
      t.NeededWhen(runs);
      t.Add(n + "wte gradient from the output projection", w, {c.vocab, d},
            "[V, d]", f);
      t.NeededWhen("", {"wte.weight"});
      t.Add(n + "loss gradient", w, {}, "[]", f);
      t.NeededWhen(runs);
      add_own_rows();
      t.SetStage(first, k);
    };
    const size_t first = t.rows.size();
    // c_proj's: its input and weight gradients. At a small micro-batch the
    // step's peak: at gpt-tiny's micro-batch 1 the two [V, d] gradients
    // outweigh early backward's two [B*T, V] ones.
    stage(kCProj, [&] {
      t.Add(n + "mlp c_proj input gradient", w, {b, T, 4 * d}, "[B, T, 4d]",
            lo);
      t.NeededWhen(l + "mlp.c_fc.bias");
      t.Add(n + "mlp c_proj weight gradient", w, {d, 4 * d}, "[d, 4d]", f);
      t.NeededWhen("", {l + "mlp.c_proj.weight"});
    });
    // The gelu's: its output's gradient (c_proj's input gradient) and its
    // input's, c_proj's saved input freed (and, with c_proj's weight
    // frozen, never kept: then this stage outweighs c_proj's).
    stage(kGelu, [&] {
      for (const char* what : {"gelu output gradient", "gelu input gradient"}) {
        t.Add(n + what, w, {b, T, 4 * d}, "[B, T, 4d]", lo);
        t.NeededWhen(l + "mlp.c_fc.bias");
      }
    });
    // c_fc's: the gelu's input gradient, c_fc's weight and input
    // gradients, the gelu's saved input freed. With c_proj's weight frozen
    // the gelu's output was never kept, and where d outweighs B*T this
    // stage outweighs c_proj's.
    stage(kCFc, [&] {
      t.Add(n + "gelu input gradient", w, {b, T, 4 * d}, "[B, T, 4d]", lo);
      t.NeededWhen(l + "mlp.c_fc.bias");
      t.Add(n + "mlp c_fc weight gradient", w, {4 * d, d}, "[4d, d]", f);
      t.NeededWhen("", {l + "mlp.c_fc.weight"});
      t.Add(n + "mlp c_fc input gradient", w, {b, T, d}, "[B, T, d]", lo);
      t.NeededWhen(l + "ln_2.bias");
    });
    // The attention's matmuls and softmax, the MLP's and ln_2's saved rows
    // freed: the heads' gradient reshaped for the matmul, the
    // probabilities' gradient and the scores' (softmax's backward; with
    // dropout, first the dropout's backward, its output freed and its noise
    // still held, the larger moment).
    stage(kAttention, [&] {
      if (checkpoint_blocks) {
        // The checkpoint holds the gradient into the block through the
        // rerun's backward, so the residual's gradient (ln_2's added in)
        // is a new tensor beside it.
        t.Add(n + "residual gradient", w, {b, T, d}, "[B, T, d]", f);
        t.NeededWhen(l + "attn.c_attn.bias");
      }
      t.Add(n + "attn heads gradient, reshaped", w, {b, T, d}, "[B, T, d]", lo);
      t.NeededWhen(l + "attn.c_attn.bias");
      for (const char* what :
           {"attn probabilities gradient", "attn scores gradient"}) {
        t.Add(n + what, w, {b, h, T, T}, "[B, h, T, T]", lo);
        t.NeededWhen(l + "attn.c_attn.bias");
      }
    });
    t.SetBlock(first, i);
  }

  // Late in backward, at the embeddings: the tied wte's two gradients (from
  // the output projection, waiting in autograd's input buffer, and from
  // the embedding) and their sum, before it is added into wte.grad, with
  // wpe's gradient. Only the rows outside the blocks are still saved then.
  // With both embeddings frozen this moment does not come.
  const size_t late = t.rows.size();
  for (const char* name : {"wte gradient from the output projection",
                           "wte gradient from the embedding", "their sum"}) {
    t.Add(std::string("embeddings backward: ") + name, RowKind::kWorkspace,
          {c.vocab, d}, "[V, d]", f);
    t.NeededWhen("", {"wte.weight"});
  }
  t.Add("embeddings backward: wpe gradient", RowKind::kWorkspace, {T, d},
        "[T, d]", f);
  t.NeededWhen("", {"wpe.weight"});
  t.Add("embeddings backward: loss gradient", RowKind::kWorkspace, {}, "[]", f);
  t.NeededWhen("", {"wte.weight", "wpe.weight"});
  t.SetBlock(late, SizeRow::kNoBlock);

  t.Add("token ids", RowKind::kInput, {b, T}, "[B, T]", Dtype::kInt64);
  t.Add("targets", RowKind::kInput, {b, T}, "[B, T]", Dtype::kInt64);
  return t;
}

}  // namespace memprof
