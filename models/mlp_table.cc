// The MLP's size table (models/mlp.h builds the module).
#include <string>

#include "models/size_table.h"

namespace memprof {

SizeTable MlpSizeTable(const MlpConfig& c, int64_t b) {
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
    t.Add(name + ".weight", p, {c.hidden, width}, "[H, " + width_terms + "]");
    t.Add(name + ".bias", p, {c.hidden}, "[H]");
    width = c.hidden;
    width_terms = "H";
  }
  const std::string last = "layers." + std::to_string(2 * c.depth);
  t.Add(last + ".weight", p, {c.output, width}, "[O, " + width_terms + "]");
  t.Add(last + ".bias", p, {c.output}, "[O]");

  // Each ReLU keeps its output (threshold_backward needs it); the next
  // Linear's addmm keeps the same tensor as its input. The first Linear keeps
  // the batch, which is an input. The logits are not kept: log_softmax keeps
  // its output instead.
  //
  // Each hidden layer i is a block (SizeTable::blocks): relu i's output is
  // held until layer i + 1's backward; log_softmax's output and
  // total_weight are freed before the first layer's.
  t.blocks = static_cast<int32_t>(c.depth);
  for (int64_t i = 0; i < c.depth; ++i) {
    t.Add("relu " + std::to_string(i) + " output", s, {b, c.hidden}, "[B, H]");
    t.SetBlock(t.rows.size() - 1, static_cast<int32_t>(i + 1));
  }
  const size_t after_blocks = t.rows.size();
  t.Add("log_softmax output", s, {b, c.output}, "[B, O]");
  t.Add("nll_loss total_weight", s, {}, "[]");
  t.SetBlock(after_blocks, SizeRow::kNoBlock);
  t.Add("loss", s, {}, "[]");

  // Backward starts with nll_loss's and then log_softmax's gradient, both
  // live while log_softmax's backward runs, with every saved tensor.
  t.Add("nll_loss gradient", RowKind::kWorkspace, {b, c.output}, "[B, O]");
  t.Add("log_softmax gradient", RowKind::kWorkspace, {b, c.output}, "[B, O]");
  // Hidden layer i's backward, at its Linear: the gradient into its ReLU
  // and out of it, the weight's and bias's fresh gradients (added into
  // .grad after; with SGD the step peaks here), and the loss's gradient.
  for (int64_t i = 0; i < c.depth; ++i) {
    const std::string n = "layers." + std::to_string(2 * i) + " backward: ";
    const int64_t in = i == 0 ? c.input : c.hidden;
    const std::string in_terms = i == 0 ? "I" : "H";
    const auto w = RowKind::kWorkspace;
    const size_t first = t.rows.size();
    t.Add(n + "relu output gradient", w, {b, c.hidden}, "[B, H]");
    t.Add(n + "relu input gradient", w, {b, c.hidden}, "[B, H]");
    t.Add(n + "weight gradient", w, {c.hidden, in}, "[H, " + in_terms + "]");
    t.Add(n + "bias gradient", w, {c.hidden}, "[H]");
    t.Add(n + "loss gradient", w, {}, "[]");
    t.SetBlock(first, static_cast<int32_t>(i));
  }

  t.Add("input", RowKind::kInput, {b, c.input}, "[B, I]");
  t.Add("target", RowKind::kInput, {b}, "[B]", Dtype::kInt64);
  return t;
}

}  // namespace memprof
