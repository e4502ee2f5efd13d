#include "profiler/base/cpu_threads.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace memprof {

int CpuThreadsPerRank(int local_ranks) {
  const int cores =
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (const char* variable : {"MKL_NUM_THREADS", "OMP_NUM_THREADS"}) {
    const char* set = std::getenv(variable);
    if (set == nullptr) continue;
    char* end = nullptr;
    const long n = std::strtol(set, &end, 10);
    // "4" or "4,2" (the outermost level's threads first).
    const bool valid = end != set && (*end == '\0' || *end == ',');
    return valid && n > 0 && n <= std::min(cores, kMaxCpuThreads)
               ? static_cast<int>(n)
               : cores;
  }
  return std::max(1, cores / std::max(1, local_ranks));
}

}  // namespace memprof
