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
  // A program's own model has no prediction of its scopes: no column then.
  bool predicted_any = false;
  for (const RankReport& rank : view.ranks) {
    for (const ScopeReport& scope : rank.scopes) {
      predicted_any |= scope.predicted_activations_bytes.has_value();
    }
  }
  ReportTable table;
  table.id = "scopes";
  table.title = "By scope";
  table.caption =
      std::string(
          "Named scopes in the steady-state peak's step: the "
          "activations allocated inside each and live when backward "
          "began, ") +
      (predicted_any ? "predicted and measured on each rank"
                     : "measured on each rank (memprof predicts the scopes of "
                       "its own models only)") +
      ", and the most temporaries allocated inside it live at once while it "
      "was open. A scope counts what the scopes inside it count; \"—\": "
      "not predicted, or not opened on that rank.";
  table.header = {"scope"};
  if (predicted_any) table.header.push_back("predicted activations");
  for (const RankReport& rank : view.ranks) {
    const std::string r = "rank " + std::to_string(rank.context.rank);
    table.header.push_back(r + " activations");
    table.header.push_back(r + " temporaries peak");
  }
  table.numeric.assign(table.header.size(), true);
  table.numeric[0] = false;
  const std::string none = "—";
  for (const std::string& name : names) {
    std::vector<std::string> row = {name};
    if (predicted_any) {
      std::string predicted = none;
      for (const RankReport& rank : view.ranks) {
        const ScopeReport* scope = Find(rank, name);
        if (scope != nullptr && scope->predicted_activations_bytes) {
          predicted = HumanBytes(*scope->predicted_activations_bytes);
          break;
        }
      }
      row.push_back(predicted);
    }
    for (const RankReport& rank : view.ranks) {
      const ScopeReport* scope = Find(rank, name);
      row.push_back(scope ? HumanBytes(scope->activations_bytes) : none);
      row.push_back(scope ? HumanBytes(scope->temporaries_peak_bytes) : none);
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

}  // namespace memprof
