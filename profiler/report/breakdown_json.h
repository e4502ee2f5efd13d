// A Breakdown (bytes by category) as a JSON object keyed by category name,
// in category order: the form every report and the prediction use.
#pragma once

#include <nlohmann/json.hpp>

#include "profiler/base/category.h"

namespace memprof {

inline nlohmann::ordered_json BreakdownJson(const Breakdown& bytes) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (Category c : kAllCategories) out[CategoryName(c)] = bytes[Index(c)];
  return out;
}

}  // namespace memprof
