// Small statistics over measured figures.
#pragma once

#include <cstdint>
#include <vector>

namespace memprof {

// The median: the middle value, or the mean of the two middle values for an
// even count; 0 for none.
double Median(std::vector<double> values);

// How far repeated measurements of one figure (step times) stray.
struct Spread {
  int64_t count = 0;
  double min = 0;
  double max = 0;
  double median = 0;
  // (max - min) / median; 0 for no values or a zero median.
  double Relative() const;
};

Spread SpreadOf(const std::vector<double>& values);

}  // namespace memprof
