#include "models/lora_rows.h"

#include <algorithm>
#include <optional>

#include "models/frozen_rows.h"
#include "profiler/base/comma_list.h"
#include "profiler/base/errors.h"
#include "profiler/base/frozen_parameters.h"

namespace memprof {

std::vector<std::string> LoraTargets(const std::string& targets) {
  return CommaItems(targets, "lora.targets", "module names", "q_proj,v_proj");
}

bool TargetMatches(const std::string& target, const std::string& name) {
  return name == target || (name.size() > target.size() &&
                            name.compare(name.size() - target.size(),
                                         target.size(), target) == 0 &&
                            name[name.size() - target.size() - 1] == '.');
}

std::vector<std::string> LinearModules(const RunConfig& c) {
  std::vector<std::string> names;
  if (c.model == "mlp") {
    for (int64_t i = 0; i <= c.mlp.depth; ++i) {
      names.push_back("layers." + std::to_string(2 * i));
    }
  } else if (c.model == "gpt") {
    for (int64_t i = 0; i < c.gpt.layers; ++i) {
      const std::string n = "h." + std::to_string(i) + ".";
      for (const char* linear :
           {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"}) {
        names.push_back(n + linear);
      }
    }
  } else if (c.model == "llama") {
    for (int64_t i = 0; i < c.llama.num_hidden_layers; ++i) {
      const std::string n = "model.layers." + std::to_string(i) + ".";
      for (const char* linear :
           {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
            "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj",
            "mlp.down_proj"}) {
        names.push_back(n + linear);
      }
    }
  }
  return names;
}

std::vector<std::string> AdaptedModules(const RunConfig& config) {
  std::vector<std::string> adapted;
  if (config.lora.rank <= 0) return adapted;
  const std::vector<std::string> targets = LoraTargets(config.lora.targets);
  for (const std::string& name : LinearModules(config)) {
    if (std::any_of(targets.begin(), targets.end(), [&](const std::string& t) {
          return TargetMatches(t, name);
        }))
      adapted.push_back(name);
  }
  return adapted;
}

namespace {

const SizeRow& ParameterRow(const SizeTable& table, const std::string& name) {
  for (const SizeRow& row : table.rows) {
    if (row.kind == RowKind::kParameter && row.name == name) return row;
  }
  throw std::logic_error("no parameter row " + name);
}

// The shape's terms with the last one replaced: "[B, T, d]" -> "[B, T, r]".
std::string WithLastTerm(const std::string& terms, const std::string& last) {
  const size_t comma = terms.rfind(", ");
  return comma == std::string::npos ? "[" + last + "]"
                                    : terms.substr(0, comma + 2) + last + "]";
}

// "[3d, d]" -> {"3d", "d"}.
std::pair<std::string, std::string> OutIn(const std::string& terms) {
  const size_t comma = terms.find(", ");
  return {terms.substr(1, comma - 1),
          terms.substr(comma + 2, terms.size() - comma - 3)};
}

// The named scope the module runs in: the longest row scope covering it.
std::string ScopeOf(const SizeTable& table, const std::string& module) {
  std::string scope;
  for (const SizeRow& row : table.rows) {
    if (row.scope.size() > scope.size() && PrefixCovers(row.scope, module))
      scope = row.scope;
  }
  return scope;
}

// Whether `row` is what one of GPT's layer norms keeps: its input, mean or
// rstd ("h.0.ln_2 mean", "ln_f input (residual)").
bool IsLayerNormSaved(const SizeRow& row) {
  const auto ends_with = [&](const std::string& tail) {
    return row.name.size() > tail.size() &&
           row.name.compare(row.name.size() - tail.size(), tail.size(), tail) ==
               0;
  };
  return row.kind == RowKind::kSaved &&
         row.name.find("ln_") != std::string::npos &&
         (ends_with(" input (residual)") || ends_with(" mean") ||
          ends_with(" rstd"));
}

// Note [LoRA under autocast]
// The recipe: train.dtype bf16-autocast with [lora] stores the frozen base
// in bfloat16 (it is never updated, so it needs no float32 master) and the
// adapters in float32, and runs the forward under bf16 autocast. Against
// bf16-autocast's table, with every base parameter frozen:
// - the base's parameters and floating buffers, and a floating batch, are
//   bfloat16;
// - the base weights' bfloat16 copies go (a bfloat16 weight is used as it
//   is); the adapters' float32 A and B are copied instead, held by the
//   graph until backward: B's always (its input, A's output, requires
//   grad), A's when its input requires grad (an adapter earlier in the
//   forward), else by autocast's cache until the forward ends;
// - a Linear's input that was a bfloat16 copy of a float32 tensor is the
//   bfloat16 tensor itself where that tensor is bfloat16 already: the
//   MLP's batch (the first layer keeps the batch, an input), and Llama's
//   RMSNorm outputs (the norm returns its input's dtype, the residual
//   stream's bfloat16): one tensor where q, k and v (gate and up) each kept
//   a copy; Llama's rotary cos and sin are bfloat16 too.
// - GPT's layer norms on the CPU: CPU autocast runs layer_norm in its
//   input's dtype, so with a bfloat16 residual stream each norm keeps that
//   bfloat16 input itself and a bfloat16 mean and rstd, where float32 was
//   kept (measured: 16.5 KiB less per norm on gpt-tiny). CUDA autocast
//   runs layer_norm in float32: it keeps a float32 copy of its input, and
//   float32 mean and rstd, as the table already says.
// Measured against predicted in tests/predict/lora_run_test.cc.
void BaseInBfloat16(SizeTable& table, bool gpt_norms_in_bfloat16) {
  auto& rows = table.rows;
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [](const SizeRow& row) {
                              return row.kind == RowKind::kWeightCast ||
                                     row.kind == RowKind::kRecomputedCast ||
                                     row.name.rfind("input's bfloat16 copy",
                                                    0) == 0;
                            }),
             rows.end());
  const std::string copy = " output's bfloat16 copy (";
  for (size_t i = 0; i < rows.size(); ++i) {
    SizeRow& row = rows[i];
    const bool floating = row.dtype == Dtype::kFloat32;
    if (floating &&
        (row.kind == RowKind::kParameter || row.kind == RowKind::kBuffer ||
         row.kind == RowKind::kInput || row.name == "rotary cos" ||
         row.name == "rotary sin" ||
         (gpt_norms_in_bfloat16 && IsLayerNormSaved(row)))) {
      row.dtype = Dtype::kBFloat16;
    }
    const size_t at = row.name.find(copy);
    if (row.kind != RowKind::kSaved || at == std::string::npos) continue;
    // The norm's output itself, kept once for every Linear it feeds.
    const std::string norm = row.name.substr(0, at);
    row.name = norm + " output (" + row.name.substr(at + copy.size());
    for (size_t j = i + 1; j < rows.size();) {
      if (rows[j].kind == RowKind::kSaved &&
          rows[j].name.rfind(norm + copy, 0) == 0) {
        row.needed_for.insert(row.needed_for.end(), rows[j].needed_for.begin(),
                              rows[j].needed_for.end());
        rows.erase(rows.begin() + static_cast<std::ptrdiff_t>(j));
      } else {
        ++j;
      }
    }
  }
}

// Note [LoRA dropout]
// With lora.dropout p > 0, A's input is dropout(x), not the Linear's input
// x: x is no longer kept for A (the frozen base weight needs it for
// nothing), the dropout's output is (A's matmul keeps it), and so is the
// dropout's float32 noise, the size of x, where x requires grad (an
// adapter earlier in the forward feeds it): the CPU's dropout is x times a
// scaled Bernoulli noise, as GPT's own dropout rows say (Note in
// gpt_table.cc). Dropout runs in float32 only (refused under
// bf16-autocast). Measured in tests/predict/lora_run_test.cc.

// Whether the Linear modules `a` and `b` take the same input: Llama's q, k
// and v_proj, and its gate and up_proj, in one layer.
bool SameInput(const std::string& a, const std::string& b) {
  const auto parent = [](const std::string& m) {
    return m.substr(0, m.rfind('.'));
  };
  const auto group = [](const std::string& m) {
    const std::string last = m.substr(m.rfind('.') + 1);
    if (last == "q_proj" || last == "k_proj" || last == "v_proj") return 1;
    if (last == "gate_proj" || last == "up_proj") return 2;
    return 0;
  };
  return parent(a) == parent(b) && group(a) != 0 && group(a) == group(b);
}

}  // namespace

void ApplyLora(const RunConfig& config, SizeTable& table) {
  const int64_t r = config.lora.rank;
  const Precision precision = PrecisionOf(config.train);
  const bool recipe = precision == Precision::kAutocast;
  if (recipe) {
    BaseInBfloat16(table,
                   config.model == "gpt" && config.train.device != "cuda");
  }
  if (table.forward_order.empty()) {
    for (const SizeRow& row : table.rows) {
      if (row.kind == RowKind::kParameter)
        table.forward_order.push_back(row.name);
    }
  }
  const std::vector<std::string> adapted = AdaptedModules(config);
  for (size_t m = 0; m < adapted.size(); ++m) {
    const std::string& module = adapted[m];
    const SizeRow weight = ParameterRow(table, module + ".weight");
    const int64_t out = weight.shape[0], in = weight.shape[1];
    const auto [out_terms, in_terms] = OutIn(weight.terms);
    // Under bf16-autocast the adapters are the float32 state the recipe
    // trains (Note [LoRA under autocast]); else the base weights' dtype.
    const Dtype dtype =
        precision == Precision::kAutocast ? Dtype::kFloat32 : weight.dtype;
    const std::string a = module + ".lora_A.weight",
                      b = module + ".lora_B.weight";
    SizeRow row_a = weight, row_b = weight;
    row_a.name = a;
    row_a.shape = {r, in};
    row_a.terms = "[r, " + in_terms + "]";
    row_a.dtype = dtype;
    row_a.adapter = true;
    row_b.name = b;
    row_b.shape = {out, r};
    row_b.terms = "[" + out_terms + ", r]";
    row_b.dtype = dtype;
    row_b.adapter = true;
    row_a.Bytes();
    row_b.Bytes();
    // After the Linear's own parameters, as named_parameters() lists a
    // module's children after its own.
    auto last = std::find_if(table.rows.begin(), table.rows.end(),
                             [&](const SizeRow& row) {
                               return row.kind == RowKind::kParameter &&
                                      row.name == module + ".weight";
                             });
    if (last + 1 != table.rows.end() && last[1].name == module + ".bias")
      ++last;
    last = table.rows.insert(last + 1, row_a);
    table.rows.insert(last + 1, row_b);
    // A and B stand just before their Linear's weight in the forward.
    auto at = std::find(table.forward_order.begin(), table.forward_order.end(),
                        module + ".weight");
    at = table.forward_order.insert(at, b);
    table.forward_order.insert(at, a);
    // Every saved row the Linear's weight needs is needed for the
    // adapters' gradients too: its input (the first such row whose last
    // dimension is the Linear's `in`; the others are downstream of it), for
    // A's unless A's input is a dropout's output (Note [LoRA dropout]), and
    // the rows the gradient flows back through. A's output is B's input.
    const bool dropout = config.lora.dropout > 0;
    std::optional<SizeRow> input;
    for (SizeRow& row : table.rows) {
      if (row.kind != RowKind::kSaved) continue;
      const auto& needed = row.needed_for;
      if (std::find(needed.begin(), needed.end(), weight.name) == needed.end())
        continue;
      const bool is_input =
          !input && !row.shape.empty() && row.shape.back() == in;
      if (is_input) input = row;
      if (!(is_input && dropout)) {
        row.needed_for.push_back(a);
        row.needed_for.push_back(b);
      }
    }
    if (!input) {
      // The MLP's first layer: its input is the batch, an input row.
      for (const SizeRow& row : table.rows) {
        if (row.kind == RowKind::kInput && row.dtype != Dtype::kInt64) {
          input = row;
          break;
        }
      }
    }
    if (!input) {
      // No row holds the Linear's input (activation checkpointing keeps
      // only the blocks' inputs): the adapters cannot be priced here.
      throw ConfigError("lora.targets",
                        "no saved input of " + module +
                            " to price its adapters with; LoRA adapters run "
                            "without activation checkpointing: set "
                            "train.activation_checkpointing = none");
    }
    // Whether the Linear's input requires grad: an adapter earlier in the
    // forward feeds it.
    const bool input_requires_grad = std::any_of(
        adapted.begin(), adapted.begin() + static_cast<std::ptrdiff_t>(m),
        [&](const std::string& earlier) {
          return !SameInput(earlier, module);
        });
    SizeRow saved = *input;
    saved.kind = RowKind::kSaved;
    saved.upstream.clear();
    saved.needed_for = {b};
    saved.scope = ScopeOf(table, module);
    if (saved.block == SizeRow::kNoBlock) saved.block = SizeRow::kEveryBlock;
    std::vector<int64_t> shape = input->shape;
    if (dropout) {  // Note [LoRA dropout]
      SizeRow dropped = saved;
      dropped.name = module + " lora dropout output (lora_A input)";
      dropped.needed_for = {a};
      table.rows.push_back(dropped);
      if (input_requires_grad) {
        dropped.name = module + " lora dropout noise";
        table.rows.push_back(dropped);
      }
    }
    shape.back() = r;
    saved.name = module + " lora_A output (lora_B input)";
    saved.shape = shape;
    saved.terms = WithLastTerm(input->terms, "r");
    table.rows.push_back(saved);
    // The adapters' gradients, where the Linear's backward would make its
    // weight's: beside the first row the table has for that (the block
    // and stage of the Linear's backward), which the frozen weight drops.
    std::vector<SizeRow> gradients;
    for (const SizeRow& row : table.rows) {
      if (row.kind != RowKind::kWorkspace ||
          row.needed_for != std::vector<std::string>{module + ".weight"}) {
        continue;
      }
      for (const SizeRow& adapter : {row_a, row_b}) {
        SizeRow gradient = row;
        gradient.name = adapter.name + " gradient";
        gradient.shape = adapter.shape;
        gradient.terms = adapter.terms;
        gradient.dtype = adapter.dtype;
        gradient.needed_for = {adapter.name};
        gradients.push_back(gradient);
      }
      break;
    }
    table.rows.insert(table.rows.end(), gradients.begin(), gradients.end());
    if (recipe) {  // Note [LoRA under autocast]
      SizeRow cast = row_a;
      cast.kind = RowKind::kWeightCast;
      cast.adapter = false;
      cast.name = a + "'s bfloat16 copy";
      cast.dtype = Dtype::kBFloat16;
      cast.block = input_requires_grad ? saved.block : SizeRow::kForwardOnly;
      table.rows.push_back(cast);
      cast = row_b;
      cast.kind = RowKind::kWeightCast;
      cast.adapter = false;
      cast.name = b + "'s bfloat16 copy";
      cast.dtype = Dtype::kBFloat16;
      cast.block = saved.block;
      table.rows.push_back(cast);
    }
  }
  for (SizeRow& row : table.rows) {
    if (row.kind == RowKind::kParameter && !row.adapter) row.frozen = true;
  }
  ApplyFreezing({}, table);
}

}  // namespace memprof
