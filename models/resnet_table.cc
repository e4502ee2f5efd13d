// ResNet's shape arithmetic and size table (models/resnet.h builds the
// module). Note [ResNet saved tensors] lists what each op keeps.
#include "models/resnet_table.h"

#include <string>
#include <vector>

#include "models/size_table.h"

namespace memprof {

std::optional<ResnetStages> ResnetStagesOf(int64_t depth) {
  switch (depth) {
    case 18:
      return ResnetStages{false, {2, 2, 2, 2}};
    case 34:
      return ResnetStages{false, {3, 4, 6, 3}};
    case 50:
      return ResnetStages{true, {3, 4, 6, 3}};
    case 101:
      return ResnetStages{true, {3, 4, 23, 3}};
    case 152:
      return ResnetStages{true, {3, 8, 36, 3}};
  }
  return std::nullopt;
}

ResnetResolutions ResnetResolutionsOf(int64_t resolution) {
  ResnetResolutions r;
  r.stem = ConvOutput(resolution, /*k=*/7, /*stride=*/2, /*padding=*/3);
  r.pooled = ConvOutput(r.stem, /*k=*/3, /*stride=*/2, /*padding=*/1);
  int64_t side = r.pooled;
  for (int stage = 0; stage < 4; ++stage) {
    if (stage > 0)
      side = ConvOutput(side, /*k=*/3, /*stride=*/2, /*padding=*/1);
    r.stage[stage] = side;
  }
  return r;
}

namespace {

// Rows of one BatchNorm2d over c channels: parameters, then buffers.
void AddBatchNorm(SizeTable& t, const std::string& name, int64_t c,
                  const std::string& terms, Dtype f) {
  t.Add(name + ".weight", RowKind::kParameter, {c}, "[" + terms + "]", f);
  t.Add(name + ".bias", RowKind::kParameter, {c}, "[" + terms + "]", f);
}

void AddBatchNormBuffers(SizeTable& t, const std::string& name, int64_t c,
                         const std::string& terms, Dtype f) {
  t.Add(name + ".running_mean", RowKind::kBuffer, {c}, "[" + terms + "]", f);
  t.Add(name + ".running_var", RowKind::kBuffer, {c}, "[" + terms + "]", f);
  t.Add(name + ".num_batches_tracked", RowKind::kBuffer, {}, "[]",
        Dtype::kInt64);
}

// A BatchNorm in training keeps its input and per-channel mean and inverse
// standard deviation (float32 when its input is bfloat16 and its
// parameters float32).
void AddBatchNormSaved(SizeTable& t, const std::string& name, int64_t b,
                       int64_t c, int64_t side, const std::string& c_terms,
                       const std::string& side_terms, RowKind kind,
                       const RowDtypes& dt) {
  t.Add(name + " input", kind, {b, c, side, side},
        "[B, " + c_terms + ", " + side_terms + ", " + side_terms + "]", dt.low);
  t.Add(name + " save_mean", kind, {c}, "[" + c_terms + "]", dt.state);
  t.Add(name + " save_invstd", kind, {c}, "[" + c_terms + "]", dt.state);
}

// A channel count in units of resnet.width: "w", "2w", "4w" ...
std::string WidthTerms(int64_t multiple) {
  return multiple == 1 ? std::string("w") : std::to_string(multiple) + "w";
}

// Parameters and buffers, in registration order: each module's own
// parameters (the convolutions have no bias), then its children; the
// buffers of every BatchNorm come after all parameters.
void AddResnetParameters(SizeTable& t, const ResnetConfig& c,
                         const ResnetStages& stages, Dtype f) {
  const int64_t e = stages.expansion();
  const auto p = RowKind::kParameter;
  struct BatchNormRow {
    std::string name;
    int64_t channels;
    std::string terms;
  };
  std::vector<BatchNormRow> batch_norms;
  auto conv_bn = [&](const std::string& conv, const std::string& bn, int64_t in,
                     const std::string& in_terms, int64_t out,
                     const std::string& out_terms, int64_t k) {
    const std::string ks = std::to_string(k);
    t.Add(conv + ".weight", p, {out, in, k, k},
          "[" + out_terms + ", " + in_terms + ", " + ks + ", " + ks + "]", f);
    AddBatchNorm(t, bn, out, out_terms, f);
    batch_norms.push_back({bn, out, out_terms});
  };
  conv_bn("conv1", "bn1", 3, "3", c.width, "w", 7);
  int64_t in = c.width;
  std::string in_terms = "w";
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t mw = int64_t{1} << stage;  // stage width in units of w
    const int64_t width = c.width * mw, out = width * e;
    const std::string width_terms = WidthTerms(mw),
                      out_terms = WidthTerms(mw * e);
    for (int64_t j = 0; j < stages.blocks[stage]; ++j) {
      const std::string n =
          "layer" + std::to_string(stage + 1) + "." + std::to_string(j) + ".";
      if (stages.bottleneck) {
        conv_bn(n + "conv1", n + "bn1", in, in_terms, width, width_terms, 1);
        conv_bn(n + "conv2", n + "bn2", width, width_terms, width, width_terms,
                3);
        conv_bn(n + "conv3", n + "bn3", width, width_terms, out, out_terms, 1);
      } else {
        conv_bn(n + "conv1", n + "bn1", in, in_terms, width, width_terms, 3);
        conv_bn(n + "conv2", n + "bn2", width, width_terms, width, width_terms,
                3);
      }
      if (j == 0 && (stage > 0 || in != out)) {
        conv_bn(n + "downsample.0", n + "downsample.1", in, in_terms, out,
                out_terms, 1);
      }
      in = out;
      in_terms = out_terms;
    }
  }
  t.Add("fc.weight", p, {c.classes, in}, "[K, " + in_terms + "]", f);
  t.Add("fc.bias", p, {c.classes}, "[K]", f);
  for (const BatchNormRow& bn : batch_norms) {
    AddBatchNormBuffers(t, bn.name, bn.channels, bn.terms, f);
  }
}

// Note [ResNet saved tensors]
// conv -> BatchNorm -> ReLU, with the ReLU in place as in torchvision:
//   conv       keeps its input (the previous ReLU's output, kept anyway)
//   BatchNorm  keeps its input (the conv's output) and save_mean,
//              save_invstd [C]; its output is not kept
//   relu_      rewrites BatchNorm's output and keeps it (threshold_backward)
// So each conv-BN-ReLU keeps two feature maps. A block's last BatchNorm output
// gets the shortcut added in place, then relu_ keeps it: the block output.
// A downsample shortcut keeps its conv's output (its BatchNorm's input).
// The stem's max-pool keeps int64 indices of its output's size and its output
// (the first block's input); global average pooling over 1x1 output is a
// mean, which keeps nothing, and fc keeps the pooled [B, C] features. Then
// log_softmax's output [B, classes], nll_loss's total_weight and the loss.
//
// Note [ResNet under autocast]
// Under bf16-autocast each convolution runs in bfloat16: the stem casts
// the images (the copy is what conv1 keeps) and every conv weight, a leaf,
// whose copy autocast's cache keeps until the forward's region ends and
// the convolution keeps until its backward (weight_casts). BatchNorm runs
// on the bfloat16 maps with its float32 parameters: its output is
// bfloat16, its saved statistics float32. fc is addmm(bias, x,
// weight.t()): the transposed weight's copy (not cached) is kept until
// fc's backward, the bias's cached copy until the region ends. The loss
// is float32. Checkpointed, the forward's copies of the blocks' weights
// live in the cache alone (autograd is off) until the region ends; each
// rerun makes its block's again.
//
// Checkpointed residual blocks (Note [Checkpointed activations] in
// gpt_table.cc): forward keeps the stem's rows and each block's input; a
// block's rerun saves all of its plain rows again (its output among them,
// kept by its last relu_). The last block's output, kept by no one outside
// it (the 1x1 pooling is a mean), is freed when forward ends.

// Saved for backward at micro-batch b (Note [ResNet saved tensors]).
void AddResnetSaved(SizeTable& t, const ResnetConfig& c, int64_t b,
                    const ResnetStages& stages, const ResnetResolutions& res,
                    bool checkpoint_blocks, const RowDtypes& dt) {
  const int64_t e = stages.expansion();
  const auto saved = RowKind::kSaved;
  // A block's own rows: saved by its forward, or by its rerun.
  const auto s = checkpoint_blocks ? RowKind::kRecomputed : RowKind::kSaved;
  if (dt.autocast) {  // Note [ResNet under autocast]
    t.Add("images' bfloat16 copy (conv1 input)", saved,
          {b, 3, c.resolution, c.resolution}, "[B, 3, R, R]", dt.low);
  }
  AddBatchNormSaved(t, "bn1", b, c.width, res.stem, "w", "S0", saved, dt);
  t.Add("relu output (maxpool input)", saved, {b, c.width, res.stem, res.stem},
        "[B, w, S0, S0]", dt.low);
  t.Add("maxpool indices", saved, {b, c.width, res.pooled, res.pooled},
        "[B, w, S1, S1]", Dtype::kInt64);
  if (!checkpoint_blocks) {
    t.Add("maxpool output (layer1 input)", saved,
          {b, c.width, res.pooled, res.pooled}, "[B, w, S1, S1]", dt.low);
    t.SetBlock(t.rows.size() - 1, 0);  // kept by layer1.0's first conv
  }
  int64_t in = c.width;
  std::string in_terms = "w";
  int64_t side_in = res.pooled;
  int32_t block = 0;
  std::string previous;  // the scope of the block before; "": the stem
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t mw = int64_t{1} << stage;
    const int64_t width = c.width * mw;
    const int64_t out = width * e;
    const int64_t side = res.stage[stage];
    const std::string S = "S" + std::to_string(stage + 1);
    for (int64_t j = 0; j < stages.blocks[stage]; ++j) {
      const std::string Sin = side_in == side ? S : "S" + std::to_string(stage);
      const std::string name =
          "layer" + std::to_string(stage + 1) + "." + std::to_string(j);
      const std::string n = name + ".";
      const size_t first = t.rows.size();
      if (checkpoint_blocks) {
        t.Add(name + " input (kept by the checkpoint)", saved,
              {b, in, side_in, side_in},
              "[B, " + in_terms + ", " + Sin + ", " + Sin + "]", dt.low);
      }
      // In a stage's first block the stride-2 conv halves the side.
      const int64_t first_side = stages.bottleneck ? side_in : side;
      const std::string first_terms = stages.bottleneck ? Sin : S;
      AddBatchNormSaved(t, n + "bn1", b, width, first_side, WidthTerms(mw),
                        first_terms, s, dt);
      t.Add(n + "relu1 output (conv2 input)", s,
            {b, width, first_side, first_side},
            "[B, " + WidthTerms(mw) + ", " + first_terms + ", " + first_terms +
                "]",
            dt.low);
      AddBatchNormSaved(t, n + "bn2", b, width, side, WidthTerms(mw), S, s, dt);
      if (stages.bottleneck) {
        t.Add(n + "relu2 output (conv3 input)", s, {b, width, side, side},
              "[B, " + WidthTerms(mw) + ", " + S + ", " + S + "]", dt.low);
        AddBatchNormSaved(t, n + "bn3", b, out, side, WidthTerms(mw * e), S, s,
                          dt);
      }
      if (j == 0 && (stage > 0 || in != out)) {
        AddBatchNormSaved(t, n + "downsample.1", b, out, side,
                          WidthTerms(mw * e), S, s, dt);
      }
      t.Add(n + "block output", s, {b, out, side, side},
            "[B, " + WidthTerms(mw * e) + ", " + S + ", " + S + "]", dt.low);
      if (dt.autocast) {
        // The block's conv weights' copies: held until its backward (from
        // its rerun, when checkpointed).
        std::vector<SizeRow> casts;
        for (const SizeRow& row : t.rows) {
          if (row.kind == RowKind::kParameter && row.shape.size() == 4 &&
              row.name.rfind(n, 0) == 0) {
            casts.push_back(row);
          }
        }
        for (const SizeRow& row : casts) {
          t.Add(row.name + "'s bfloat16 copy",
                checkpoint_blocks ? RowKind::kRecomputedCast
                                  : RowKind::kWeightCast,
                row.shape, row.terms, dt.low);
        }
      }
      t.SetBlock(first, block);
      t.SetScope(first, name);
      // A checkpoint's kept input is the block before's output.
      if (checkpoint_blocks) t.rows[first].scope = previous;
      previous = name;
      ++block;
      in = out;
      in_terms = WidthTerms(mw * e);
      side_in = side;
    }
  }
  if (checkpoint_blocks) t.blocks = block;
  // Freed by their backward, before any block's.
  const size_t after_blocks = t.rows.size();
  t.Add("pooled features (fc input)", saved, {b, in},
        "[B, " + WidthTerms(8 * e) + "]", dt.low);
  t.Add("log_softmax output", saved, {b, c.classes}, "[B, K]", dt.state);
  t.Add("nll_loss total_weight", saved, {}, "[]", dt.state);
  if (dt.autocast) {
    t.Add("fc.weight's bfloat16 copy", RowKind::kWeightCast, {in, c.classes},
          "[" + WidthTerms(8 * e) + ", K]", dt.low);
  }
  t.SetBlock(after_blocks, SizeRow::kNoBlock);
  if (dt.autocast) {
    t.Add("fc.bias's bfloat16 copy", RowKind::kWeightCast, {c.classes}, "[K]",
          dt.low);
    t.SetBlock(t.rows.size() - 1, SizeRow::kForwardOnly);
    // The stem conv's copy, held until the stem's backward, the last.
    t.Add("conv1.weight's bfloat16 copy", RowKind::kWeightCast,
          {c.width, 3, 7, 7}, "[w, 3, 7, 7]", dt.low);
    if (checkpoint_blocks) {
      // The forward's copies of the blocks' conv weights, made with
      // autograd off: only the cache keeps them, until the region ends.
      std::vector<SizeRow> reruns;
      for (const SizeRow& row : t.rows) {
        if (row.kind == RowKind::kRecomputedCast) reruns.push_back(row);
      }
      for (const SizeRow& row : reruns) {
        t.Add(row.name, RowKind::kWeightCast, row.shape, row.terms, dt.low);
        t.SetBlock(t.rows.size() - 1, SizeRow::kForwardOnly);
      }
    }
  }
  t.Add("loss", saved, {}, "[]", dt.state);
}

// Backward peaks in the last stage, with nearly every saved tensor still
// live, at its largest convolution: oneDNN's backward-data copy of the
// weight in its own layout and the weight gradient, plus three gradients of
// the last block's output size. Measured on oneDNN convolutions; at 1x1 or
// 2x2 last-stage maps oneDNN adds a backward-weights scratchpad (per
// thread) that this table does not predict (docs/prediction.md). Reads the
// parameter rows already in `t`.
void AddResnetBackwardPeak(SizeTable& t, const ResnetConfig& c, int64_t b,
                           const ResnetStages& stages,
                           const ResnetResolutions& res, const RowDtypes& dt) {
  int64_t largest_conv = 0;
  std::vector<int64_t> largest_shape;
  std::string largest_terms;
  for (const SizeRow& row : t.rows) {
    if (row.kind == RowKind::kParameter && row.name.rfind("layer4.", 0) == 0 &&
        row.shape.size() == 4 && row.Elements() > largest_conv) {
      largest_conv = row.Elements();
      largest_shape = row.shape;
      largest_terms = row.terms;
    }
  }
  const int64_t e = stages.expansion();
  const int64_t last_channels = c.width * 8 * e;
  const std::string last_map = "[B, " + WidthTerms(8 * e) + ", S4, S4]";
  const int64_t side4 = res.stage[3];
  t.Add("largest last-stage conv weight, oneDNN layout", RowKind::kWorkspace,
        largest_shape, largest_terms, dt.low);
  t.Add("its weight gradient", RowKind::kWorkspace, largest_shape,
        largest_terms, dt.low);
  for (const char* name :
       {"block output gradient", "relu gradient", "BatchNorm input gradient"}) {
    t.Add(std::string("last block: ") + name, RowKind::kWorkspace,
          {b, last_channels, side4, side4}, last_map, dt.low);
  }
}

// Checkpointed, a block's backward peaks at its last convolution (the one
// before the BatchNorm that meets the shortcut), just after the rerun: the
// block's output gradient, its relu's and that BatchNorm's input gradient
// (three maps of the block's output), and oneDNN's convolution backward:
// the output gradient, the weight and the input gradient in its blocked
// layout, channels padded to a multiple of 16 (AVX-512's block), and the
// loss's gradient. Measured on oneDNN convolutions, as the plain peak.
void AddResnetRecomputePeaks(SizeTable& t, const ResnetConfig& c, int64_t b,
                             const ResnetStages& stages,
                             const ResnetResolutions& res,
                             const RowDtypes& dt) {
  auto padded = [](int64_t channels) { return (channels + 15) / 16 * 16; };
  const auto w = RowKind::kWorkspace;
  int32_t block = 0;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t mw = int64_t{1} << stage;
    const int64_t width = c.width * mw, out = width * stages.expansion();
    const int64_t side = res.stage[stage];
    const int64_t k = stages.bottleneck ? 1 : 3;  // the last convolution's
    const std::string S = "S" + std::to_string(stage + 1);
    const std::string map = ", " + S + ", " + S + "]";
    const std::string o = WidthTerms(mw * stages.expansion());
    const std::string i = WidthTerms(mw);
    for (int64_t j = 0; j < stages.blocks[stage]; ++j, ++block) {
      const std::string n = "layer" + std::to_string(stage + 1) + "." +
                            std::to_string(j) + " backward: ";
      const size_t first = t.rows.size();
      for (const char* name : {"block output gradient", "relu gradient",
                               "BatchNorm input gradient"}) {
        t.Add(n + name, w, {b, out, side, side}, "[B, " + o + map, dt.low);
      }
      t.Add(n + "last conv output gradient, oneDNN layout", w,
            {b, padded(out), side, side}, "[B, pad16(" + o + ")" + map, dt.low);
      t.Add(n + "last conv weight, oneDNN layout", w,
            {padded(out), padded(width), k, k},
            "[pad16(" + o + "), pad16(" + i + "), " + std::to_string(k) + ", " +
                std::to_string(k) + "]",
            dt.low);
      t.Add(n + "last conv input gradient, oneDNN layout", w,
            {b, padded(width), side, side}, "[B, pad16(" + i + ")" + map,
            dt.low);
      t.Add(n + "loss gradient", w, {}, "[]", dt.state);
      t.SetBlock(first, block);
    }
  }
}

}  // namespace

SizeTable ResnetSizeTable(const ResnetConfig& c, int64_t b,
                          bool checkpoint_blocks, Precision precision) {
  const RowDtypes dt(precision);
  SizeTable t;
  t.symbols =
      "B = micro-batch, R = resnet.resolution, w = resnet.width, "
      "K = resnet.classes; S0..S4: feature-map sides";
  const ResnetStages stages = *ResnetStagesOf(c.depth);
  const ResnetResolutions res = ResnetResolutionsOf(c.resolution);
  AddResnetParameters(t, c, stages, dt.state);
  AddResnetSaved(t, c, b, stages, res, checkpoint_blocks, dt);
  AddResnetBackwardPeak(t, c, b, stages, res, dt);
  if (checkpoint_blocks) AddResnetRecomputePeaks(t, c, b, stages, res, dt);
  t.Add("images", RowKind::kInput, {b, 3, c.resolution, c.resolution},
        "[B, 3, R, R]", dt.state);
  t.Add("labels", RowKind::kInput, {b}, "[B]", Dtype::kInt64);
  return t;
}

}  // namespace memprof
