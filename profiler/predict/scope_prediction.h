// The predicted side of the "by scope" tables: the activations each named
// scope's forward saves, from the size table (Note [Named scopes] in
// profiler/capture/lifetime_analysis.h has the measured side). Pure
// arithmetic: no tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/size_table.h"

namespace memprof {

struct ScopePrediction {
  std::string name;
  // The table's kSaved rows allocated in the scope (SizeRow::scope): what
  // is live of it when backward begins.
  int64_t activations_bytes = 0;
};

// One entry per scope the table names, in the order of its first row.
std::vector<ScopePrediction> PredictScopes(const SizeTable& table);

}  // namespace memprof
