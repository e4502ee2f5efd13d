// The MLP's size table (models/mlp.h builds the module).
#include <string>

#include "models/head_backward.h"
#include "models/size_table.h"

namespace memprof {

SizeTable MlpSizeTable(const MlpConfig& c, int64_t b, Precision precision) {
  const RowDtypes dt(precision);
  SizeTable t;
  t.symbols =
      "B = micro-batch, I = mlp.input, H = mlp.hidden, "
      "D = mlp.depth, O = mlp.output";
  const auto p = RowKind::kParameter, s = RowKind::kSaved;
  // Sequential: Linear at even indices, ReLU between them.
  int64_t width = c.input;
  std::string width_terms = "I";
  for (int64_t i = 0; i < c.depth; ++i) {
    const std::string name = "layers." + std::to_string(2 * i);
    t.Add(name + ".weight", p, {c.hidden, width}, "[H, " + width_terms + "]",
          dt.state);
    t.Add(name + ".bias", p, {c.hidden}, "[H]", dt.state);
    width = c.hidden;
    width_terms = "H";
  }
  const std::string last = "layers." + std::to_string(2 * c.depth);
  t.Add(last + ".weight", p, {c.output, width}, "[O, " + width_terms + "]",
        dt.state);
  t.Add(last + ".bias", p, {c.output}, "[O]", dt.state);

  // Each ReLU keeps its output (threshold_backward needs it); the next
  // Linear's addmm keeps the same tensor as its input. The first Linear keeps
  // the batch, which is an input. The logits are not kept: log_softmax keeps
  // its output instead.
  //
  // Note [MLP backward moments]
  // Each hidden layer i gives two blocks (SizeTable::blocks), in the order
  // backward reaches them: 2i + 1, relu i's backward, and 2i, its Linear's.
  // Relu i's output is held through its own backward (block 2i + 1) and
  // freed before its Linear's; log_softmax's output and total_weight are
  // freed before the first block's. At a large micro-batch the ReLU's
  // moment peaks (three [B, H] maps), at a small one the Linear's (its
  // weight gradient).
  //
  // Under bf16-autocast (Note [MLP under autocast]) the first Linear keeps
  // the batch's bfloat16 copy instead, the ReLUs' outputs are bfloat16,
  // and each Linear after the first keeps its weight's bfloat16 copy.
  t.blocks = static_cast<int32_t>(2 * c.depth);
  if (dt.autocast) {
    t.Add("input's bfloat16 copy (layers.0 input)", s, {b, c.input}, "[B, I]",
          dt.low);
    t.SetBlock(t.rows.size() - 1, 0);
    if (c.depth > 0) t.SetScope(t.rows.size() - 1, "layers.0");
  }
  // Each layer's parameters by name (Note [Frozen activations]).
  auto param = [](int64_t layer, const char* what) {
    return "layers." + std::to_string(2 * layer) + "." + what;
  };
  for (int64_t i = 0; i < c.depth; ++i) {
    t.Add("relu " + std::to_string(i) + " output", s, {b, c.hidden}, "[B, H]",
          dt.low);
    // Kept by the ReLU for its input's gradient, and by the next Linear
    // for its weight's.
    t.NeededWhen(param(i, "bias"), {param(i + 1, "weight")});
    t.SetBlock(t.rows.size() - 1, static_cast<int32_t>(2 * i + 1));
    t.SetScope(t.rows.size() - 1, "layers." + std::to_string(2 * i));
  }
  const size_t after_blocks = t.rows.size();
  t.Add("log_softmax output", s, {b, c.output}, "[B, O]", dt.state);
  t.Add("nll_loss total_weight", s, {}, "[]", dt.state);
  t.SetBlock(after_blocks, SizeRow::kNoBlock);
  MarkFreedBeforeHead(t, after_blocks, after_blocks, dt);
  t.Add("loss", s, {}, "[]", dt.state);

  // Note [MLP under autocast]
  // LibTorch's Linear is addmm(bias, x, weight.t()): autocast casts the
  // transposed view, which its cache does not keep (only leaves), so each
  // weight copy lives as long as addmm keeps it: until the layer's
  // backward, except the first layer's (its input needs no gradient, so
  // addmm keeps only the input), freed at once. The biases are leaves:
  // the cache keeps their copies until the forward's region ends.
  if (dt.autocast) {
    const auto w = RowKind::kWeightCast;
    for (int64_t i = 0; i <= c.depth; ++i) {
      const std::string name = "layers." + std::to_string(2 * i);
      const bool last = i == c.depth;
      const int64_t out = last ? c.output : c.hidden;
      const std::string o = last ? "O" : "H";
      if (i > 0) {
        t.Add(name + ".weight's bfloat16 copy", w, {out, c.hidden},
              "[" + o + ", H]", dt.low);
        // The last one is freed before its layer's weight gradient's
        // float32 copy is made (Note [Head backward]).
        t.SetBlock(t.rows.size() - 1,
                   last ? SizeRow::kHead : static_cast<int32_t>(2 * i));
      }
      t.Add(name + ".bias's bfloat16 copy", w, {out}, "[" + o + "]", dt.low);
      t.SetBlock(t.rows.size() - 1, SizeRow::kForwardOnly);
    }
  }

  // Backward starts with nll_loss's and then log_softmax's gradient, both
  // live while log_softmax's backward runs, with every saved tensor.
  t.Add("nll_loss gradient", RowKind::kWorkspace, {b, c.output}, "[B, O]",
        dt.state);
  t.Add("log_softmax gradient", RowKind::kWorkspace, {b, c.output}, "[B, O]",
        dt.state);
  // Then the last Linear's (Note [Head backward]).
  HeadShape head(b, 1, width, c.output, last + ".weight",
                 param(c.depth - 1, "bias"), dt.state);
  head.bias = last + ".bias";
  head.d_symbol = width_terms;
  head.V_symbol = "O";
  head.per_token = false;
  head.cast_input = false;
  AddHeadBackward(t, head, dt);
  // Hidden layer i's backward, at its Linear: the gradient into its ReLU
  // and out of it, the weight's and bias's fresh gradients (added into
  // .grad after; with SGD the step peaks here), and the loss's gradient.
  for (int64_t i = 0; i < c.depth; ++i) {
    const std::string n = "layers." + std::to_string(2 * i) + " backward: ";
    const int64_t in = i == 0 ? c.input : c.hidden;
    const std::string in_terms = i == 0 ? "I" : "H";
    const auto w = RowKind::kWorkspace;
    const size_t first = t.rows.size();
    // The layer's backward runs while its output requires grad.
    const std::string runs = param(i, "bias");
    t.Add(n + "relu output gradient", w, {b, c.hidden}, "[B, H]", dt.low);
    t.NeededWhen(runs);
    t.Add(n + "relu input gradient", w, {b, c.hidden}, "[B, H]", dt.low);
    t.NeededWhen(runs);
    // In bfloat16 modes the matmul's gradient is bfloat16; under autocast
    // its float32 copy (what is added into .grad) is made while it lives.
    t.Add(n + "weight gradient", w, {c.hidden, in}, "[H, " + in_terms + "]",
          dt.low);
    t.NeededWhen("", {param(i, "weight")});
    t.Add(n + "bias gradient", w, {c.hidden}, "[H]", dt.low);
    t.NeededWhen("", {param(i, "bias")});
    if (dt.autocast) {
      t.Add(n + "weight gradient's float32 copy", w, {c.hidden, in},
            "[H, " + in_terms + "]", dt.state);
      t.NeededWhen("", {param(i, "weight")});
    }
    t.Add(n + "loss gradient", w, {}, "[]", dt.state);
    t.NeededWhen(runs);
    t.SetBlock(first, static_cast<int32_t>(2 * i));
    // Relu i's backward, just before: the gradient into it and out of it.
    const std::string r = "relu " + std::to_string(i) + " backward: ";
    const size_t relu = t.rows.size();
    t.Add(r + "output gradient", w, {b, c.hidden}, "[B, H]", dt.low);
    t.NeededWhen(runs);
    t.Add(r + "input gradient", w, {b, c.hidden}, "[B, H]", dt.low);
    t.NeededWhen(runs);
    t.Add(r + "loss gradient", w, {}, "[]", dt.state);
    t.NeededWhen(runs);
    t.SetBlock(relu, static_cast<int32_t>(2 * i + 1));
  }

  t.Add("input", RowKind::kInput, {b, c.input}, "[B, I]", dt.state);
  t.Add("target", RowKind::kInput, {b}, "[B]", Dtype::kInt64);
  return t;
}

}  // namespace memprof
