#include "profiler/base/statistics.h"

#include <algorithm>

namespace memprof {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2;
}

double Spread::Relative() const {
  return median > 0 ? (max - min) / median : 0;
}

Spread SpreadOf(const std::vector<double>& values) {
  Spread spread;
  if (values.empty()) return spread;
  const auto [min, max] = std::minmax_element(values.begin(), values.end());
  spread.count = static_cast<int64_t>(values.size());
  spread.min = *min;
  spread.max = *max;
  spread.median = Median(values);
  return spread;
}

}  // namespace memprof
