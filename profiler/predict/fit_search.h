// The searches `fit` makes over a monotone question ("does micro-batch b
// fit?", "does ZeRO-3 fit on n ranks?"), shared by the fit from a size
// table (fit.h) and the fit from runs (fit_runs.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

namespace memprof {

// The largest micro-batch and world size a search tries.
inline constexpr int64_t kLargestMicroBatch = int64_t{1} << 30;
inline constexpr int64_t kLargestWorld = int64_t{1} << 20;

// The largest n in [lo, cap] with fits(n), given fits(lo); fits is
// monotone (true, then false).
template <typename Fits>
int64_t LargestThat(int64_t lo, int64_t cap, const Fits& fits) {
  int64_t good = lo;
  while (good < cap && fits(std::min(cap, 2 * good))) {
    good = std::min(cap, 2 * good);
  }
  if (good == cap) return cap;
  int64_t bad = std::min(cap, 2 * good);  // !fits(bad)
  while (bad - good > 1) {
    const int64_t mid = good + (bad - good) / 2;
    (fits(mid) ? good : bad) = mid;
  }
  return good;
}

// The smallest n in [lo, hi] with fits(n), given fits(hi); fits is
// monotone (false, then true).
template <typename Fits>
int64_t SmallestThat(int64_t lo, int64_t hi, const Fits& fits) {
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (fits(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// "1 rank", "3 ranks".
inline std::string Plural(int64_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

}  // namespace memprof
