#include "profiler/report/scope_table.h"

#include <algorithm>
#include <string>
#include <vector>

#include "profiler/base/human_bytes.h"

namespace memprof {
namespace {

const ScopeReport* Find(const RankReport& rank, const std::string& name) {
  for (const ScopeReport& scope : rank.scopes) {
    if (scope.name == name) return &scope;
  }
  return nullptr;
}

}  // namespace

std::optional<ReportTable> ScopeTable(const RunView& view) {
  // Every rank's scopes, in the order the first rank to open each opened it.
  std::vector<std::string> names;
  for (const RankReport& rank : view.ranks) {
    for (const ScopeReport& scope : rank.scopes) {
      if (std::find(names.begin(), names.end(), scope.name) == names.end()) {
        names.push_back(scope.name);
      }
    }
  }
  if (names.empty()) return std::nullopt;
  ReportTable table;
  table.id = "scopes";
  table.title = "By scope";
  table.caption =
      "Named scopes in the steady-state peak's step: the activations "
      "allocated inside each and live when backward began, predicted and "
      "measured on each rank, and the most temporaries allocated inside it "
      "live at once while it was open. A scope counts what the scopes "
      "inside it count.";
  table.header = {"scope", "predicted activations"};
  for (const RankReport& rank : view.ranks) {
    const std::string r = "rank " + std::to_string(rank.context.rank);
    table.header.push_back(r + " activations");
    table.header.push_back(r + " temporaries peak");
  }
  table.numeric.assign(table.header.size(), true);
  table.numeric[0] = false;
  for (const std::string& name : names) {
    std::string predicted;
    for (const RankReport& rank : view.ranks) {
      const ScopeReport* scope = Find(rank, name);
      if (scope != nullptr && scope->predicted_activations_bytes) {
        predicted = HumanBytes(*scope->predicted_activations_bytes);
        break;
      }
    }
    std::vector<std::string> row = {name, predicted};
    for (const RankReport& rank : view.ranks) {
      const ScopeReport* scope = Find(rank, name);
      row.push_back(scope ? HumanBytes(scope->activations_bytes) : "");
      row.push_back(scope ? HumanBytes(scope->temporaries_peak_bytes) : "");
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

}  // namespace memprof
