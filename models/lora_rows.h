// [lora] on a model: which Linear modules its targets name, and the
// adapters' rows in a size table (Note [LoRA adapters]). Pure arithmetic:
// no tensors.
#pragma once

#include <string>
#include <vector>

#include "models/size_table.h"
#include "profiler/base/run_config.h"

namespace memprof {

// Note [LoRA adapters]
// [lora] rank r, alpha, dropout p, targets: each target Linear y = W x + b
// (W: out x in) becomes y = W x + b + (alpha / r) * B(A(dropout_p(x))), as
// Hugging Face PEFT's LoRA layer computes it, with A: r x in (Kaiming-
// uniform with a = sqrt(5), PEFT's and a Linear's own initialisation) and
// B: out x r (zeros, so the adapted model starts as the base model). The
// adapters are children of their Linear, named as PEFT names them without
// its adapter name: "model.layers.0.self_attn.q_proj.lora_A.weight".
// Every base parameter (weights, biases, norms, embeddings) is frozen
// (PEFT's default); train.freeze beside [lora] may only be "all", which
// says so. Targets match module names as PEFT does: a module is a target
// when its name equals an item or ends in "." + item, so "c_proj" adapts
// both of GPT-2's c_proj (attention and MLP) and "attn.c_proj" or
// "mlp.c_proj" one of them.
//
// An adapter holds r (in + out) parameters, in the base weights' dtype
// under float32 and bfloat16, in float32 under bf16-autocast (the recipe:
// base weights stored in bfloat16, being frozen, Note [LoRA under
// autocast]). What autograd saves for it, measured (tests/predict/
// lora_test.cc): A's input, which the frozen base no longer keeps (the
// Linear's input row stays, needed for A's gradient), and A's output
// [.., r], which B keeps for its gradient; the scaling and the sum keep
// nothing. With dropout p > 0 (on the CPU, x times a noise tensor of x's
// shape), A keeps the dropout's output instead and the product keeps the
// noise while x requires grad; the Linear's input row is still counted,
// which over-predicts by one input per target when nothing else keeps it.
// The adapter's output requires grad whatever came before: in the forward
// order A and B stand just before their Linear's weight, so every row
// needed once that Linear's output requires grad stays. A's and B's
// gradients are workspace where the table has the Linear's weight
// gradient (its block and stage), which the frozen weight drops: an MLP
// 784-256x3-10 with adapters on every Linear, at micro-batch 1 under SGD,
// peaked at the first layer's A gradient, 1.26% over the table without
// them; with both rows it is 0.64% under. Where the table has no weight
// gradient row for the Linear, none are added.

// The items of lora.targets, in order. Throws ConfigError (lora.targets)
// for an empty item.
std::vector<std::string> LoraTargets(const std::string& targets);

// Whether the module `name` is the target `target` (PEFT's rule above).
bool TargetMatches(const std::string& target, const std::string& name);

// The Linear modules of config.model that adapters can go on, in the
// forward's order ("h.0.attn.c_attn"); empty for resnet.
std::vector<std::string> LinearModules(const RunConfig& config);

// The Linear modules lora.targets names (none when lora.rank is 0).
std::vector<std::string> AdaptedModules(const RunConfig& config);

// Adds the adapters of AdaptedModules(config) to a model's table: their
// parameter rows (SizeRow::adapter) and saved rows, every other parameter
// frozen, the rows no trained parameter needs dropped (ApplyFreezing).
// Expects a validated config with lora.rank > 0.
void ApplyLora(const RunConfig& config, SizeTable& table);

}  // namespace memprof
