// A block's lifetime for hand-made captures (Analyze, the snapshot).
#pragma once

#include <cstdint>

#include "profiler/capture/memory_tracker.h"

namespace memprof {

inline Lifetime Block(int64_t alloc, int64_t free, int64_t bytes, Category c,
                      uint64_t address = 0) {
  Lifetime life;
  life.alloc_seq = alloc;
  life.free_seq = free;
  life.bytes = bytes;
  life.category = c;
  life.address = address;
  return life;
}

}  // namespace memprof
