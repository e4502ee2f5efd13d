// The Llama family's size table (models/llama.h builds the module). Note
// [Llama saved tensors] lists what each op keeps for backward in LibTorch's
// CPU kernels.
#include <algorithm>
#include <string>
#include <unordered_map>

#include "models/head_backward.h"
#include "models/size_table.h"

namespace memprof {

// Note [Llama saved tensors]
// Per decoder layer, with x the residual stream [B, T, d] (float32 unless
// the whole model is bfloat16):
//   input_layernorm   x.to(float32) (a copy only when x is bfloat16), whose
//                     pow and multiply keep it; rsqrt keeps its output
//                     rstd [B, T, 1] float32; the weight multiply keeps the
//                     normalized input cast back to x's dtype [B, T, d]
//   q/k/v_proj        linear keeps its input, the layer norm's output
//                     [B, T, d], one tensor for the three projections
//   rotary            q * cos + rotate_half(q) * sin keeps only cos and
//                     sin, [1, T, D] each, computed once per forward and
//                     shared by every layer; q_proj's and k_proj's outputs
//                     are freed
//   attention         scaled_dot_product_attention on the CPU (its flash
//                     kernel, also with enable_gqa) keeps q and k after
//                     rotary [B, H, T, D] and [B, K, T, D], v (v_proj's
//                     output, [B, T, KD]), its output [B, H, T, D] and the
//                     log-sum-exp [B, H, T] float32; no [T, T] matrix and
//                     no k, v repeated per query head
//   o_proj            keeps the output transposed back to [B, T, HD]: the
//                     attention's own output, no copy (.contiguous() of
//                     the transpose of a transposed tensor)
//   post_attention_layernorm  as input_layernorm, on x after attention
//   gate/up_proj      keep the layer norm's output [B, T, d]
//   silu              keeps its input, gate_proj's output [B, T, I]
//   silu * up         keeps both factors [B, T, I]
//   down_proj         keeps the product [B, T, I]
// The residual adds keep nothing. Outside the layers: the final norm's
// input, rstd, normalized input and output (lm_head's input);
// log_softmax's float32 output [B*T, V] (the logits are upcast to float32
// first; neither the logits nor their float32 copy are kept); nll_loss's
// target, the shifted labels (contiguous [B, T] int64; at B = 1 the slice
// of the padded [1, T + 1] labels is already contiguous and keeps it), its
// total_weight and the loss, one float each. The embedding keeps the token
// ids, which are an input.
//
// Note [Llama under autocast]
// Under bf16-autocast linear and scaled_dot_product_attention run in
// bfloat16; everything else follows its inputs. The residual stream, the
// norms and the rotary cos and sin stay float32. Each linear casts its
// input itself and keeps its own bfloat16 copy, so a layer norm's output
// is kept three times (q, k, v_proj) and twice (gate, up_proj) as
// bfloat16 copies, and its float32 output is freed. Each linear casts its
// weight and bias, leaves that require grad: autocast's cache holds these
// copies until the forward's region ends (kForwardOnly), and the graph
// keeps each weight's copy until its layer's backward (kWeightCast). The
// rotary products are float32 (bfloat16 times float32 cos), so the
// attention keeps bfloat16 copies of q and k after rotary; v and the
// attention output are bfloat16. The output head keeps its input's copy
// and its weight's (the embedding's when tied) until early in backward.
// Checkpointed, a layer's forward (without grad) still caches its weight
// and bias copies until the forward ends; its rerun makes the weight
// copies again, held during its backward (kRecomputedCast).
//
// Note [Llama backward moments]
// A layer's backward begins in its MLP, where it peaks, at one of two
// stages (Note [Block stages]): down_proj's backward (the gradient flowing
// into the layer [B, T, d], down_proj's input gradient [B, T, I] and
// weight gradient [d, I]), or a node later, silu x up's backward, whose
// two input gradients [B, T, I] are live beside down_proj's input
// gradient and the gradient into the layer, down_proj's saved input freed.
// The second is the larger unless d weighs more than B*T (in bytes), or
// down_proj's weight is frozen: then it keeps no input and makes no
// weight gradient, and the second is always the larger.
// With a tied head, lm_head's gradient of the embedding [V, d] waits in
// autograd's input buffer through every layer's backward.
//
// Note [Llama attention backward]
// A third stage, where a wide attention beside a narrow MLP (many heads,
// a long T) peaks: scaled_dot_product_attention's backward, after o_proj's
// and the norm's, the MLP's and post_attention_layernorm's saved rows
// freed. Live: the residual's gradient [B, T, d] (checkpointed, also the
// gradient into the layer, which the checkpoint holds), o_proj's input
// gradient [B, T, HD], and the kernel's q, k and v gradients (zero-filled,
// [B, H, T, D] and [B, K, T, D]: GQA needs no per-head copies). On the
// CPU the flash kernel also takes, for each of the N threads, a block of
// Q queries by C keys of scores and their gradient, float32 (Q = 32 below
// T = 192, 64 below 768, else 256, and C = 512, each at most T), a second
// in bfloat16 when the attention runs in bfloat16, and in each thread
// that gets heads to work on (min(N, B*H)) its Q row sums, float32. N is
// the rank's threads (OMP_NUM_THREADS, which `memprof profile` sets to
// the cores shared between its ranks). The rotary's backward after it
// frees more than it makes. With a GPU's kernels the scratch differs and
// is not in the table.
//
// Note [Llama checkpointed]
// As Note [Checkpointed activations] for GPT: forward keeps each layer's
// input [B, T, d] (in bfloat16 when the model is); the rerun saves the
// layer's rows again, except its input_layernorm input where that is the
// kept input itself (float32 residuals), plus the rerun's output.
namespace {
// A layer's backward stages (Note [Block stages]).
constexpr int32_t kDownProj = 0, kSiluTimesUp = 1, kAttention = 2;
}  // namespace

SizeTable LlamaSizeTable(const LlamaConfig& c, int64_t b,
                         bool checkpoint_blocks, Precision precision,
                         int cpu_threads) {
  const RowDtypes dt(precision);
  const Dtype f = dt.state, lo = dt.low, f32 = Dtype::kFloat32;
  const bool bf16 = precision == Precision::kBfloat16;
  SizeTable t;
  t.symbols =
      "B = micro-batch, T = llama.seq_len, d = llama.hidden_size, "
      "I = llama.intermediate_size, H = llama.num_attention_heads, "
      "K = llama.num_key_value_heads, D = llama.head_dim, "
      "L = llama.num_hidden_layers, V = llama.vocab_size";
  if (cpu_threads > 0) {
    t.symbols +=
        ", N = " + std::to_string(cpu_threads) +
        ", a rank's CPU threads (in a run, LibTorch's; in predict, "
        "MKL_NUM_THREADS or OMP_NUM_THREADS where set, else the cores "
        "shared between the ranks), Q = the attention backward's query "
        "block (32 below T = 192, 64 below 768, else 256; at most T), C = "
        "min(T, 512)";
  }
  const auto p = RowKind::kParameter, s = RowKind::kSaved;
  const int64_t d = c.hidden_size, T = c.seq_len, H = c.num_attention_heads,
                K = KeyValueHeads(c), D = HeadDim(c), I = c.intermediate_size,
                V = c.vocab_size;
  const int64_t hd = H * D, kd = K * D;
  const bool qkv_bias = c.attention_bias || c.qkv_bias;

  t.Add("model.embed_tokens.weight", p, {V, d}, "[V, d]", f);
  // Each layer's linears, in the order Hugging Face registers them.
  struct Linear {
    const char* name;
    int64_t out, in;
    const char* weight_terms;
    const char* bias_terms;
    bool bias;
    // The last stage of its layer's backward that holds its weight's
    // bfloat16 copy (Note [Llama under autocast]).
    int32_t freed_after;
  };
  const Linear linears[] = {
      {"self_attn.q_proj", hd, d, "[HD, d]", "[HD]", qkv_bias,
       SizeRow::kWholeBlock},
      {"self_attn.k_proj", kd, d, "[KD, d]", "[KD]", qkv_bias,
       SizeRow::kWholeBlock},
      {"self_attn.v_proj", kd, d, "[KD, d]", "[KD]", qkv_bias,
       SizeRow::kWholeBlock},
      {"self_attn.o_proj", d, hd, "[d, HD]", "[d]", c.attention_bias,
       kSiluTimesUp},
      {"mlp.gate_proj", I, d, "[I, d]", "[I]", c.mlp_bias, kSiluTimesUp},
      {"mlp.up_proj", I, d, "[I, d]", "[I]", c.mlp_bias, kSiluTimesUp},
      {"mlp.down_proj", d, I, "[d, I]", "[d]", c.mlp_bias, kDownProj},
  };
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string n = "model.layers." + std::to_string(i) + ".";
    for (const Linear& l : linears) {
      t.Add(n + l.name + ".weight", p, {l.out, l.in}, l.weight_terms, f);
      if (l.bias) t.Add(n + l.name + ".bias", p, {l.out}, l.bias_terms, f);
    }
    t.Add(n + "input_layernorm.weight", p, {d}, "[d]", f);
    t.Add(n + "post_attention_layernorm.weight", p, {d}, "[d]", f);
  }
  t.Add("model.norm.weight", p, {d}, "[d]", f);
  if (!c.tie_word_embeddings) t.Add("lm_head.weight", p, {V, d}, "[V, d]", f);
  t.Add("model.rotary_emb.inv_freq", RowKind::kBuffer, {D / 2}, "[D/2]", f);

  // The forward's order of the parameters, and which gradients need each
  // saved and workspace row (Note [Frozen activations]): a norm keeps its
  // input and rstd while its input requires grad, its normalized input
  // for its weight's gradient; a linear keeps its input for its weight's
  // gradient only.
  auto linear_params = [&](const std::string& n, const Linear& l) {
    std::vector<std::string> names = {n + l.name + ".weight"};
    if (l.bias) names.push_back(n + l.name + ".bias");
    return names;
  };
  t.forward_order.push_back("model.embed_tokens.weight");
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string n = "model.layers." + std::to_string(i) + ".";
    t.forward_order.push_back(n + "input_layernorm.weight");
    for (const Linear& l : linears) {
      if (l.name == std::string("mlp.gate_proj"))
        t.forward_order.push_back(n + "post_attention_layernorm.weight");
      for (const std::string& name : linear_params(n, l))
        t.forward_order.push_back(name);
    }
  }
  t.forward_order.push_back("model.norm.weight");
  const std::string head =
      c.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
  if (!c.tie_word_embeddings) t.forward_order.push_back(head);
  // The parameter the forward uses just before `name`.
  // (A map: a scan of the order for each row took time in the layers
  // squared.)
  std::unordered_map<std::string, std::string> previous;
  for (size_t i = 1; i < t.forward_order.size(); ++i) {
    previous.emplace(t.forward_order[i], t.forward_order[i - 1]);
  }
  auto before = [&previous](const std::string& name) {
    const auto it = previous.find(name);
    return it == previous.end() ? std::string() : it->second;
  };
  // A layer's parameters among its linears' (`from`, `to`: indices into
  // `linears`, inclusive), and the last of them in the forward.
  auto params_of = [&](const std::string& n, size_t from, size_t to) {
    std::vector<std::string> names;
    for (size_t l = from; l <= to; ++l) {
      for (const std::string& name : linear_params(n, linears[l]))
        names.push_back(name);
    }
    return names;
  };
  const size_t kQ = 0, kV = 2, kGate = 4, kUp = 5, kDown = 6;

  t.Add("rotary cos", s, {1, T, D}, "[1, T, D]", f);
  // Kept while some layer's q or k requires grad: the last layer's does
  // whenever an earlier one's does.
  const std::string last_layer =
      "model.layers." + std::to_string(c.num_hidden_layers - 1) + ".";
  const std::string rotary_upstream =
      c.num_hidden_layers > 0 ? last_layer + "input_layernorm.weight" : "";
  const std::vector<std::string> rotary_params =
      c.num_hidden_layers > 0 ? params_of(last_layer, kQ, kQ + 1)
                              : std::vector<std::string>{};
  if (c.num_hidden_layers > 0) t.NeededWhen(rotary_upstream, rotary_params);
  t.Add("rotary sin", s, {1, T, D}, "[1, T, D]", f);
  if (c.num_hidden_layers > 0) t.NeededWhen(rotary_upstream, rotary_params);
  // A norm's rows (Note [Llama saved tensors]): its float32 input (unless
  // that is a kept checkpoint input), rstd and normalized input, and what
  // the linears after it keep of its output.
  // `next`: each linear after it, with its weight's name.
  // `freed_after`: the last stage of its layer's backward that holds them.
  auto add_norm =
      [&](const std::string& name, RowKind kind, bool with_input,
          std::initializer_list<std::pair<const char*, std::string>> next,
          int32_t freed_after = SizeRow::kWholeBlock) {
        const std::string weight = name + ".weight";
        if (with_input) {
          t.Add(name + (bf16 ? " input's float32 copy" : " input (residual)"),
                kind, {b, T, d}, "[B, T, d]", f32);
          t.NeededWhen(before(weight));
          t.FreedAfter(freed_after);
        }
        t.Add(name + " rstd", kind, {b, T, 1}, "[B, T, 1]", f32);
        t.NeededWhen(before(weight));
        t.FreedAfter(freed_after);
        t.Add(name + " normalized input", kind, {b, T, d}, "[B, T, d]", f);
        t.NeededWhen("", {weight});
        t.FreedAfter(freed_after);
        std::string users;
        std::vector<std::string> weights;
        for (const auto& [linear, linear_weight] : next) {
          if (dt.autocast) {
            t.Add(name + " output's bfloat16 copy (" + linear + " input)", kind,
                  {b, T, d}, "[B, T, d]", lo);
            t.NeededWhen("", {linear_weight});
            t.FreedAfter(freed_after);
          }
          users += (users.empty() ? "" : ", ") + std::string(linear);
          weights.push_back(linear_weight);
        }
        if (!dt.autocast) {
          t.Add(name + " output (" + users + " input)", kind, {b, T, d},
                "[B, T, d]", f);
          t.NeededWhen("", weights);
          t.FreedAfter(freed_after);
        }
      };
  // Every layer's backward is a predicted moment, checkpointed or not.
  t.blocks = static_cast<int32_t>(c.num_hidden_layers);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string n = "model.layers." + std::to_string(i) + ".";
    const size_t first = t.rows.size();
    const RowKind own =
        checkpoint_blocks ? RowKind::kRecomputed : RowKind::kSaved;
    if (checkpoint_blocks) {
      t.Add(n + "input (kept by the checkpoint)", s, {b, T, d}, "[B, T, d]", f);
    }
    // With float32 residuals the kept input is the norm's input itself.
    add_norm(n + "input_layernorm", own, !checkpoint_blocks || bf16,
             {{"q_proj", n + "self_attn.q_proj.weight"},
              {"k_proj", n + "self_attn.k_proj.weight"},
              {"v_proj", n + "self_attn.v_proj.weight"}});
    // The attention keeps q, k, v, its output and log-sum-exp while any of
    // q, k, v requires grad; o_proj keeps its input for its weight.
    const std::string in_norm = n + "input_layernorm.weight";
    const std::vector<std::string> qkv = params_of(n, kQ, kV);
    std::vector<std::string> qkv_o = qkv;
    qkv_o.push_back(n + "self_attn.o_proj.weight");
    const std::string a = n + "self_attn ";
    t.Add(
        a + (dt.autocast ? "q after rotary, bfloat16 copy" : "q after rotary"),
        own, {b, H, T, D}, "[B, H, T, D]", lo);
    t.NeededWhen(in_norm, qkv);
    t.Add(
        a + (dt.autocast ? "k after rotary, bfloat16 copy" : "k after rotary"),
        own, {b, K, T, D}, "[B, K, T, D]", lo);
    t.NeededWhen(in_norm, qkv);
    t.Add(a + "v (v_proj output)", own, {b, T, kd}, "[B, T, KD]", lo);
    t.NeededWhen(in_norm, qkv);
    t.Add(a + "attention output (o_proj input)", own, {b, T, hd}, "[B, T, HD]",
          lo);
    t.NeededWhen(in_norm, qkv_o);
    t.Add(a + "attention log-sum-exp", own, {b, H, T}, "[B, H, T]", f32);
    t.NeededWhen(in_norm, qkv);
    // Freed by the MLP's and this norm's backward, before the attention's.
    add_norm(n + "post_attention_layernorm", own, true,
             {{"gate_proj", n + "mlp.gate_proj.weight"},
              {"up_proj", n + "mlp.up_proj.weight"}},
             kSiluTimesUp);
    // silu keeps its input, silu x up each factor for the other's
    // gradient, down_proj its input for its weight's.
    const std::string post_norm = n + "post_attention_layernorm.weight";
    const std::vector<std::string> gate = params_of(n, kGate, kGate);
    const std::vector<std::string> up = params_of(n, kUp, kUp);
    t.Add(n + "mlp gate_proj output (silu input)", own, {b, T, I}, "[B, T, I]",
          lo);
    t.NeededWhen(post_norm, gate);
    t.FreedAfter(kSiluTimesUp);
    t.Add(n + "mlp silu output", own, {b, T, I}, "[B, T, I]", lo);
    t.NeededWhen(post_norm, up);
    t.FreedAfter(kSiluTimesUp);
    t.Add(n + "mlp up_proj output", own, {b, T, I}, "[B, T, I]", lo);
    t.NeededWhen(post_norm, gate);
    t.FreedAfter(kSiluTimesUp);
    t.Add(n + "mlp silu x up (down_proj input)", own, {b, T, I}, "[B, T, I]",
          lo);
    t.NeededWhen("", {n + "mlp.down_proj.weight"});
    t.FreedAfter(kDownProj);
    if (checkpoint_blocks) {
      t.Add(n + "rerun output", own, {b, T, d}, "[B, T, d]", f);
    }
    if (dt.autocast) {  // Note [Llama under autocast]
      const RowKind held =
          checkpoint_blocks ? RowKind::kRecomputedCast : RowKind::kWeightCast;
      for (const Linear& l : linears) {
        t.Add(n + l.name + ".weight's bfloat16 copy", held, {l.out, l.in},
              l.weight_terms, lo);
        t.FreedAfter(l.freed_after);
      }
    }
    t.SetBlock(first, static_cast<int32_t>(i));
    // Its input (the first row, unless that is a float32 copy the layer
    // makes) is the output of the layer before it, or of the embedding.
    t.SetScope(first, "model.layers." + std::to_string(i));
    if (checkpoint_blocks || !bf16) {
      t.rows[first].scope =
          i == 0 ? "" : "model.layers." + std::to_string(i - 1);
    }
    if (dt.autocast) {
      // In autocast's cache only, until the forward ends: the biases'
      // copies, and the weights' in a checkpointed forward.
      const size_t cached = t.rows.size();
      for (const Linear& l : linears) {
        if (checkpoint_blocks) {
          t.Add(n + l.name + ".weight's bfloat16 copy (forward)",
                RowKind::kWeightCast, {l.out, l.in}, l.weight_terms, lo);
        }
        if (l.bias) {
          t.Add(n + l.name + ".bias's bfloat16 copy", RowKind::kWeightCast,
                {l.out}, l.bias_terms, lo);
        }
      }
      t.SetBlock(cached, SizeRow::kForwardOnly);
    }
  }
  // Freed by their backward, before any layer's (Note [Checkpointed
  // activations]).
  const size_t after_layers = t.rows.size();
  add_norm("model.norm", s, true, {{"lm_head", head}});
  if (!bf16 && c.num_hidden_layers > 0) {  // its input: the last layer's output
    t.rows[after_layers].scope =
        "model.layers." + std::to_string(c.num_hidden_layers - 1);
  }
  if (dt.autocast) {
    t.Add(std::string(c.tie_word_embeddings ? "model.embed_tokens.weight"
                                            : "lm_head.weight") +
              "'s bfloat16 copy (lm_head)",
          RowKind::kWeightCast, {V, d}, "[V, d]", lo);
  }
  const size_t loss_rows = t.rows.size();
  t.Add("log_softmax output (float32 logits)", s, {b * T, V}, "[B*T, V]", f32);
  if (b == 1) {
    t.Add("nll_loss target (the padded labels)", s, {1, T + 1}, "[1, T+1]",
          Dtype::kInt64);
  } else {
    t.Add("nll_loss target (the shifted labels)", s, {b, T}, "[B, T]",
          Dtype::kInt64);
  }
  t.Add("nll_loss total_weight", s, {}, "[]", f32);
  t.SetBlock(after_layers, SizeRow::kNoBlock);
  MarkFreedBeforeHead(t, after_layers, loss_rows, dt);
  t.Add("loss", s, {}, "[]", f32);

  // Backward peaks at its first nodes: nll_loss's gradient and
  // log_softmax's, both [B*T, V] float32, live together with every saved
  // tensor.
  t.Add("nll_loss gradient", RowKind::kWorkspace, {b * T, V}, "[B*T, V]", f32);
  t.Add("log_softmax gradient", RowKind::kWorkspace, {b * T, V}, "[B*T, V]",
        f32);
  AddHeadBackward(t, {b, T, d, V, head, "model.norm.weight", f32}, dt);
  // Each layer's backward peaks in its MLP (Note [Llama backward
  // moments]).
  t.stages = {"at its MLP's down_proj", "at its MLP's silu x up",
              "in its attention's backward"};
  // The attention backward's blocks of queries and keys (Note [Llama
  // attention backward]).
  const int64_t query_block =
                    std::min<int64_t>(T, T >= 768 ? 256 : (T >= 192 ? 64 : 32)),
                key_block = std::min<int64_t>(T, 512);
  for (int32_t i = 0; i < t.blocks; ++i) {
    const std::string n = "model.layers." + std::to_string(i) + " backward: ";
    const auto w = RowKind::kWorkspace;
    const std::string l = "model.layers." + std::to_string(i) + ".";
    // The layer's backward runs while its output requires grad.
    const std::string runs = params_of(l, kDown, kDown).back();
    const std::string post_norm = l + "post_attention_layernorm.weight";
    // Each stage's rows: beside its own, the gradient into the layer and
    // down_proj's input gradient, lm_head's gradient of a tied embedding
    // and the loss's.
    // With a tied head, lm_head's gradient of the embedding, waiting.
    const auto tied_head_gradient = [&] {
      if (!c.tie_word_embeddings) return;
      t.Add(n + "embed_tokens gradient from lm_head", w, {V, d}, "[V, d]", f);
      t.NeededWhen("", {"model.embed_tokens.weight"});
    };
    const auto stage = [&](int32_t k, const auto& add_own_rows) {
      const size_t first = t.rows.size();
      t.Add(n + "gradient into the layer", w, {b, T, d}, "[B, T, d]", f);
      t.NeededWhen(runs);
      t.Add(n + "down_proj input gradient", w, {b, T, I}, "[B, T, I]", lo);
      t.NeededWhen(before(l + "mlp.down_proj.weight"));
      tied_head_gradient();
      t.Add(n + "loss gradient", w, {}, "[]", f32);
      t.NeededWhen(runs);
      add_own_rows();
      t.SetStage(first, k);
    };
    const size_t first = t.rows.size();
    stage(kDownProj, [&] {
      t.Add(n + "down_proj weight gradient", w, {d, I}, "[d, I]", f);
      t.NeededWhen("", {l + "mlp.down_proj.weight"});
    });
    stage(kSiluTimesUp, [&] {
      t.Add(n + "silu output gradient", w, {b, T, I}, "[B, T, I]", lo);
      t.NeededWhen(post_norm, params_of(l, kGate, kGate));
      t.Add(n + "up_proj output gradient", w, {b, T, I}, "[B, T, I]", lo);
      t.NeededWhen(post_norm, params_of(l, kUp, kUp));
    });
    // The attention's backward, the MLP's and post_attention_layernorm's
    // rows freed: its gradients beside its saved q, k, v and output (Note
    // [Llama attention backward]).
    const size_t attention = t.rows.size();
    const std::string in_norm = l + "input_layernorm.weight";
    const std::vector<std::string> qkv = params_of(l, kQ, kV);
    auto attention_row = [&](const std::string& what,
                             std::vector<int64_t> shape, const char* terms,
                             Dtype dtype) {
      t.Add(n + what, w, std::move(shape), terms, dtype);
      t.NeededWhen(in_norm, qkv);
    };
    if (checkpoint_blocks) {
      // The checkpoint holds it through the rerun's backward.
      attention_row("gradient into the layer", {b, T, d}, "[B, T, d]", f);
    }
    // Held for the layer before it, while that layer's output requires
    // grad (else freed by o_proj's backward).
    t.Add(n + "residual gradient", w, {b, T, d}, "[B, T, d]", f);
    t.NeededWhen(before(in_norm));
    attention_row("o_proj input gradient", {b, T, hd}, "[B, T, HD]", lo);
    attention_row("q gradient", {b, H, T, D}, "[B, H, T, D]", lo);
    attention_row("k gradient", {b, K, T, D}, "[B, K, T, D]", lo);
    attention_row("v gradient", {b, K, T, D}, "[B, K, T, D]", lo);
    if (cpu_threads > 0) {
      const int64_t threads = cpu_threads;
      attention_row("each thread's scores and their gradient",
                    {threads, 2 * query_block * key_block}, "[N, 2QC]", f32);
      if (lo != f32) {
        attention_row("each thread's scores and their gradient, bfloat16",
                      {threads, 2 * query_block * key_block}, "[N, 2QC]", lo);
      }
      attention_row("each working thread's row sums",
                    {std::min(threads, b * H), query_block}, "[min(N, BH), Q]",
                    f32);
    }
    tied_head_gradient();
    attention_row("loss gradient", {}, "[]", f32);
    t.SetStage(attention, kAttention);
    t.SetBlock(first, i);
  }
  // Late in backward, at the embedding: its gradient [V, d] (with a tied
  // head, also lm_head's, waiting in autograd's input buffer, and their
  // sum).
  const size_t late = t.rows.size();
  // With the embedding frozen this moment does not come.
  const std::vector<std::string> embedding = {"model.embed_tokens.weight"};
  if (c.tie_word_embeddings) {
    t.Add("embedding backward: embed_tokens gradient from lm_head",
          RowKind::kWorkspace, {V, d}, "[V, d]", f);
    t.NeededWhen("", embedding);
    t.Add("embedding backward: their sum", RowKind::kWorkspace, {V, d},
          "[V, d]", f);
    t.NeededWhen("", embedding);
  }
  t.Add("embedding backward: embed_tokens gradient", RowKind::kWorkspace,
        {V, d}, "[V, d]", f);
  t.NeededWhen("", embedding);
  t.Add("embedding backward: loss gradient", RowKind::kWorkspace, {}, "[]",
        f32);
  t.NeededWhen("", embedding);
  t.SetBlock(late, SizeRow::kNoBlock);

  t.Add("token ids", RowKind::kInput, {b, T}, "[B, T]", Dtype::kInt64);
  t.Add("labels", RowKind::kInput, {b, T}, "[B, T]", Dtype::kInt64);
  return t;
}

}  // namespace memprof
