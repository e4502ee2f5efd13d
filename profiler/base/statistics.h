// Small statistics over measured figures.
#pragma once

#include <vector>

namespace memprof {

// The median: the middle value, or the mean of the two middle values for an
// even count; 0 for none.
double Median(std::vector<double> values);

}  // namespace memprof
