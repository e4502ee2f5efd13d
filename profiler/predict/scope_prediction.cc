#include "profiler/predict/scope_prediction.h"

#include <unordered_map>

namespace memprof {

std::vector<ScopePrediction> PredictScopes(const SizeTable& table) {
  std::vector<ScopePrediction> scopes;
  std::unordered_map<std::string, size_t> index;  // name -> scopes
  for (const SizeRow& row : table.rows) {
    if (row.scope.empty()) continue;
    const auto [it, added] = index.emplace(row.scope, scopes.size());
    if (added) scopes.push_back(ScopePrediction{row.scope, 0});
    if (row.kind == RowKind::kSaved) {
      scopes[it->second].activations_bytes += row.Bytes();
    }
  }
  return scopes;
}

}  // namespace memprof
