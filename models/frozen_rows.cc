#include "models/frozen_rows.h"

#include <algorithm>
#include <climits>
#include <map>

#include "profiler/base/frozen_parameters.h"

namespace memprof {

void ApplyFreezing(const std::vector<std::string>& prefixes, SizeTable& table) {
  std::vector<std::string> order = table.forward_order;
  if (order.empty()) {
    for (const SizeRow& row : table.rows) {
      if (row.kind == RowKind::kParameter) order.push_back(row.name);
    }
  }
  std::map<std::string, bool> trained;
  for (SizeRow& row : table.rows) {
    if (row.kind != RowKind::kParameter) continue;
    row.frozen = row.frozen || IsFrozen(prefixes, row.name);
    trained[row.name] = !row.frozen;
  }
  // Forward position of each parameter, and of the first trained one.
  std::map<std::string, size_t> position;
  size_t first_trained = SIZE_MAX;
  for (size_t i = 0; i < order.size(); ++i) {
    position[order[i]] = i;
    if (trained[order[i]]) first_trained = std::min(first_trained, i);
  }
  const auto needed = [&](const SizeRow& row) {
    if (row.upstream.empty() && row.needed_for.empty()) return true;
    if (!row.upstream.empty() && first_trained <= position.at(row.upstream))
      return true;
    return std::any_of(
        row.needed_for.begin(), row.needed_for.end(),
        [&](const std::string& name) { return trained.at(name); });
  };
  table.rows.erase(std::remove_if(table.rows.begin(), table.rows.end(),
                                  [&](const SizeRow& row) {
                                    return (row.kind == RowKind::kSaved ||
                                            row.kind == RowKind::kWorkspace) &&
                                           !needed(row);
                                  }),
                   table.rows.end());
}

std::vector<std::string> NearestPrefixes(const SizeTable& table,
                                         const std::string& prefix) {
  const size_t parts = std::count(prefix.begin(), prefix.end(), '.') + 1;
  // Each name cut to `parts` parts, with how many leading characters it
  // shares with the prefix; the most alike first, then in table order.
  std::vector<std::pair<size_t, std::string>> cut;
  for (const SizeRow& row : table.rows) {
    if (row.kind != RowKind::kParameter) continue;
    size_t end = 0;
    for (size_t p = 0; p < parts && end != std::string::npos; ++p) {
      end = row.name.find('.', end == 0 && p == 0 ? 0 : end + 1);
    }
    const std::string name = row.name.substr(0, end);
    if (std::any_of(cut.begin(), cut.end(),
                    [&](const auto& c) { return c.second == name; })) {
      continue;
    }
    size_t same = 0;
    while (same < name.size() && same < prefix.size() &&
           name[same] == prefix[same]) {
      ++same;
    }
    cut.emplace_back(same, name);
  }
  std::stable_sort(cut.begin(), cut.end(), [](const auto& a, const auto& b) {
    return a.first > b.first;
  });
  std::vector<std::string> nearest;
  for (size_t i = 0; i < cut.size() && i < 3; ++i)
    nearest.push_back(cut[i].second);
  return nearest;
}

}  // namespace memprof
