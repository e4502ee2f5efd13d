// The failure messages of memprof::testing's checks (<memprof/gtest.h>):
// what was limited, the figure that crossed it, the bytes of each category
// at that moment, the largest blocks live then, and what to do. Figures in
// KiB/MiB/GiB with the exact bytes beside them.
#pragma once

#include <cstdint>
#include <string>

#include "profiler/base/category.h"
#include "profiler/gtest/check_figures.h"

namespace memprof {

// `scope`: the helper's name as the test wrote it ("MemoryLimit").
// The peak of all categories, `peak`, is over `limit_bytes`.
std::string LimitFailure(const std::string& scope, int64_t limit_bytes,
                         const Moment& peak);
// `category`'s own peak, `peak` (its largest blocks of that category), is
// over `limit_bytes`.
std::string CategoryLimitFailure(const std::string& scope, Category category,
                                 int64_t limit_bytes, const Moment& peak);
// figures.leaked_blocks > 0.
std::string LeakFailure(const std::string& scope, const CheckFigures& figures);

}  // namespace memprof
