// train.freeze: which parameters a run freezes, by name prefix (Note
// [Frozen parameters]).
#pragma once

#include <string>
#include <vector>

namespace memprof {

// Note [Frozen parameters]
// train.freeze is a comma list of parameter-name prefixes, the names
// `memprof predict --table` prints. A prefix matches whole dot-separated
// parts: "h.1" freezes h.1.ln_1.weight but not h.10.ln_1.weight, and a
// full name freezes that parameter alone. A frozen parameter has
// requires_grad false: no gradient, no optimizer state (the optimizer
// steps the trained parameters only), no DDP bucket space (the Reducer
// holds the trained parameters only) and, under ZeRO-1, no share of the
// partition. Its weight is still held (4 bytes in float32). What changes
// in the activations is in Note [Frozen activations] (models/size_table.h).
//
// "all" freezes every base weight, which is what [lora] does (Note [LoRA
// adapters] in models/lora_rows.h): it is valid beside [lora] only, and
// says what [lora] does anyway; beside [lora] no other prefix is (every
// base weight is frozen already).

// The prefixes of a train.freeze value, in order; none for "all" (the
// adapters' freezing). Throws ConfigError (train.freeze) for an empty item
// ("h.0,,h.1", a trailing comma) or for "all" among prefixes.
std::vector<std::string> FreezePrefixes(const std::string& freeze);

// Whether the value is "all" (every base weight, beside [lora]).
bool FreezesAll(const std::string& freeze);

// Whether `prefix` covers the parameter `name` (whole parts).
bool PrefixCovers(const std::string& prefix, const std::string& name);

// Whether any of `prefixes` covers `name`.
bool IsFrozen(const std::vector<std::string>& prefixes,
              const std::string& name);

}  // namespace memprof
