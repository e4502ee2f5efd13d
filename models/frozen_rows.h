// train.freeze applied to a size table: frozen parameter rows, and the
// saved and workspace rows autograd no longer needs (Note [Frozen
// activations]). Pure arithmetic: no tensors.
#pragma once

#include <string>
#include <vector>

#include "models/size_table.h"

namespace memprof {

// Note [Frozen activations]
// Autograd keeps a tensor for an op's backward only when the gradient that
// needs it is wanted: an op with no input that requires grad records
// nothing, and an op whose saved input serves one gradient alone saves it
// only when that gradient is wanted (a matmul keeps its input x for its
// weight's gradient and its weight for x's). A frozen parameter does not
// require grad, so freezing removes saved tensors in two places:
// - Before the first trained parameter in the forward, nothing requires
//   grad: a frozen prefix of layers saves nothing, and the first trained
//   layer keeps only what its own parameters' gradients need (its input,
//   where a matmul or a layer norm keeps it; not what only the gradient of
//   its input would need, such as a Llama RMSNorm's float32 input and
//   rstd). Its backward, and every backward before it, does not run: their
//   workspace rows go too.
// - A frozen Linear inside trained layers still passes the gradient to its
//   input (it keeps its weight, which is held anyway) but no longer keeps
//   its input for its weight's gradient: that input goes from the saved
//   rows unless another op keeps it too (GPT's layer norm outputs, its
//   attention heads and GELU output; Llama's norm outputs and down_proj's
//   input), and its weight's gradient from the workspace rows.
// Each table says, per saved and workspace row, which gradients need it
// (SizeRow::upstream, SizeRow::needed_for); ApplyFreezing drops the rows
// no trained parameter needs. Measured against predicted in
// tests/predict/frozen_test.cc.

// Marks the parameter rows `prefixes` cover (PrefixCovers) frozen, beside
// those already marked (ApplyLora's base), and
// drops the rows no trained parameter needs. Expects a table with at least
// one trained parameter.
void ApplyFreezing(const std::vector<std::string>& prefixes, SizeTable& table);

// For a train.freeze prefix that covers no parameter of `table`: up to
// three of the table's names, cut to as many dot-separated parts as the
// prefix has, that begin most like it ("h.1", "h.0"), for the error.
std::vector<std::string> NearestPrefixes(const SizeTable& table,
                                         const std::string& prefix);

}  // namespace memprof
