// The steps whose detail a run's outputs keep (Note [Kept steps] in
// profiler/capture/lifetime_analysis.h).
#pragma once

#include <cstdint>

namespace memprof {

// Which steps keep their detail (Note [Kept steps]).
struct KeepSteps {
  bool all = false;
  int32_t last = 2;
  bool Keeps(int32_t step, int32_t last_step) const {
    return all || step <= 1 || step > last_step - last;
  }
};

}  // namespace memprof
