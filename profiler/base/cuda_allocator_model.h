// CudaAllocatorModel: PyTorch 2.11's CUDA caching allocator
// (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator) without CUDA:
// which block a request gets, which segments it reserves, and the figures of
// its DeviceStats (requested, allocated, reserved, inactive_split bytes).
//
// Note [What the model follows]
// The default configuration, one device and one stream:
//   - round_size: a request of n bytes takes max(512, n rounded up to a
//     multiple of 512) bytes (kCudaMinBlockSize).
//   - get_pool: rounded sizes up to 1 MiB (kCudaSmallSize) are served from
//     the small pool, larger ones from the large pool. The pools never share
//     a segment.
//   - get_free_block: the pool's free blocks are a set ordered by (size,
//     address); a request takes the first block of at least its rounded size
//     (best fit, ties to the lowest address).
//   - alloc_block: when none fits, a new segment of
//     get_allocation_size(rounded) bytes (CudaSegmentSize) is reserved, one
//     free block, and the request is served from its start.
//   - should_split / alloc_found_block: Note [Split rule].
//   - free / free_block: Note [Two-step free].
//   - Segments are released only by SegmentFree (the real allocator's
//     release_block, at empty_cache or on a failed cudaMalloc), and only
//     when the whole segment is one free block.
// Not modelled: expandable segments, max_split_size (taken as unlimited),
// roundup_power2_divisions (taken as none), garbage_collection_threshold,
// several streams (a freed block is reusable by every request), CUDA graph
// private pools, a memory limit (no cudaMalloc fails, so nothing is
// released to retry one).
//
// Note [Split rule]
// A request rounded to r bytes takes a free block of S >= r bytes. The block
// is split when the remainder S - r is worth keeping: in the small pool when
// it is at least 512 bytes, in the large pool when it is more than 1 MiB
// (strictly). Split: the request gets the first r bytes and the remainder
// stays a free block right after it, in the same segment. Not split: the
// request gets all S bytes, and `allocated` counts S, not r (a 15 MiB request
// in a new 16 MiB segment allocates 16 MiB).
//
// Note [Two-step free]
// The allocator frees a block in two steps, which its trace records apart:
// FREE_REQUESTED (free(): `allocated` drops at once) and FREE_COMPLETED
// (free_block(): the block joins its pool, merges with the free blocks just
// before and after it in its segment, and `requested` drops). The steps
// coincide unless the block was used on another stream (recordStream): then
// the completion waits for that stream's events, and until it comes the
// block is neither allocated nor free (nothing merges into it). `requested`
// dropping at the completion, not at the request, is the allocator's own
// bookkeeping (free_block decreases requested_bytes; free() does not).
//
// Note [Inactive split]
// inactive_split counts the free blocks that are not a whole segment: free
// bytes that empty_cache could not give back, since their segment also
// holds other blocks. A whole free segment is cached but not split.
//
// Note [Segment pools]
// A segment belongs to the pool of the request that reserved it. The real
// allocator's small segments are 2 MiB (kCudaSmallBuffer) and its large
// ones at least 10 MiB, so SegmentAlloc takes segments of at most 2 MiB as
// small and larger ones as large; Alloc refuses a request of the other pool.
//
// Two ways to drive it: mirror mode replays the real allocator's trace
// events (SEGMENT_ALLOC, ALLOC, FREE_REQUESTED, FREE_COMPLETED,
// SEGMENT_FREE) at the addresses it chose, and checks that each is possible;
// predict mode (Malloc, Free) chooses the addresses as the allocator would.
// In predict mode a new segment goes just past the highest segment: real
// cudaMalloc addresses are not ordered, and the only thing they decide here
// is which of two free blocks of equal size is taken.
//
// Every operation is O(log n) in the number of blocks. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace memprof {

inline constexpr int64_t kCudaMinBlockSize = 512;        // rounding unit
inline constexpr int64_t kCudaSmallSize = 1 << 20;       // largest small block
inline constexpr int64_t kCudaSmallBuffer = 2 << 20;     // small segment
inline constexpr int64_t kCudaLargeBuffer = 20 << 20;    // 1-10 MiB segment
inline constexpr int64_t kCudaMinLargeAlloc = 10 << 20;  // own-size segments
inline constexpr int64_t kCudaRoundLarge = 2 << 20;      // their rounding

// round_size: the bytes a request of `requested` (> 0) bytes is rounded to.
int64_t CudaRoundSize(int64_t requested);
// get_allocation_size: the bytes of the segment reserved for a request
// rounded to `rounded` bytes when no free block fits.
int64_t CudaSegmentSize(int64_t rounded);
// get_pool: whether a request rounded to `rounded` bytes is a small one.
bool CudaSmallPool(int64_t rounded);

// The allocator's DeviceStats vocabulary (aggregate over both pools).
struct CudaAllocatorFigures {
  int64_t requested = 0;  // sum of requests, unrounded (Note [Two-step free])
  int64_t allocated = 0;  // sum of live blocks (Note [Split rule])
  int64_t reserved = 0;   // sum of segments
  int64_t inactive_split = 0;  // Note [Inactive split]
};

// A sequence of blocks replayed through the model (a run's, in
// profiler/capture/cuda_replay.h; a rank report's `cuda_replay`).
struct CudaReplay {
  CudaAllocatorFigures at_allocated_peak;  // the four figures then
  int64_t peak_reserved = 0;
  int64_t segments = 0;  // reserved when the replay ends
};

// A segment and its blocks as the allocator's own snapshot lists them
// (torch.cuda.memory_snapshot()'s "segments").
struct CudaBlockView {
  uint64_t address = 0;
  int64_t bytes = 0;
  int64_t requested = 0;  // 0 unless allocated or free-requested
  // PyTorch's names: active_allocated, active_pending_free, inactive.
  const char* state = "inactive";
};
struct CudaSegmentView {
  uint64_t address = 0;
  int64_t bytes = 0;
  bool small = false;
  std::vector<CudaBlockView> blocks;  // by address; they tile the segment
};

class CudaAllocatorModel {
 public:
  // Mirror mode: the real allocator's events, at its addresses (its trace).
  // Each throws std::logic_error, naming the address, when the event is not
  // possible in the model's state.

  // A new segment of `bytes` (> 0) at `address`, one free block; it may not
  // overlap another segment.
  void SegmentAlloc(uint64_t address, int64_t bytes);
  // A request of `requested` (> 0) bytes served at `address`, the start of
  // a free block of the request's pool and of at least its rounded size.
  // Returns the block's allocated size (Note [Split rule]).
  int64_t Alloc(uint64_t address, int64_t requested);
  // The block allocated at `address` is freed: `allocated` drops.
  void FreeRequested(uint64_t address);
  // The block at `address`, whose free was requested, becomes free and
  // merges with its free neighbours; `requested` drops.
  void FreeCompleted(uint64_t address);
  // The segment starting at `address`, one free block, is released.
  void SegmentFree(uint64_t address);

  // Predict mode: the model chooses the address as the allocator would
  // (best fit, else a new segment past the others). Returns the address;
  // throws std::logic_error when `requested` is not > 0.
  uint64_t Malloc(int64_t requested);
  // FreeRequested then FreeCompleted.
  void Free(uint64_t address);

  // The size of the allocated block starting at `address`; 0 if none.
  int64_t BlockSize(uint64_t address) const;
  const CudaAllocatorFigures& now() const { return now_; }
  // All four figures at the last moment `allocated` reached its maximum
  // (an Alloc that equals an earlier peak moves the moment to itself).
  const CudaAllocatorFigures& at_allocated_peak() const {
    return at_allocated_peak_;
  }
  int64_t peak_reserved() const { return peak_reserved_; }
  // Peaks from now on (as the allocator's resetPeakStats).
  void ResetPeaks() {
    at_allocated_peak_ = now_;
    peak_reserved_ = now_.reserved;
  }
  // Every segment, by address, with its blocks.
  std::vector<CudaSegmentView> Segments() const;
  int64_t segment_count() const {
    return static_cast<int64_t>(segments_.size());
  }

 private:
  enum class State { kFree, kAllocated, kFreeRequested };
  struct Block {
    int64_t bytes = 0;
    int64_t requested = 0;  // 0 while free
    State state = State::kFree;
  };
  struct Segment {
    int64_t bytes = 0;
    bool small = false;                // Note [Segment pools]
    std::map<uint64_t, Block> blocks;  // by address; they tile the segment
  };
  using FreeSet = std::set<std::pair<int64_t, uint64_t>>;  // (bytes, address)
  using SegmentIt = std::map<uint64_t, Segment>::iterator;
  using BlockIt = std::map<uint64_t, Block>::iterator;

  static const char* StateName(State state);
  // The block starting at `address` in the state `state`; throws
  // std::logic_error, naming `event` and the address, when there is none.
  std::pair<SegmentIt, BlockIt> BlockAt(uint64_t address, State state,
                                        const char* event);
  // Free blocks enter and leave their pool's set only through these, which
  // keep inactive_split (Note [Inactive split]).
  void InsertFree(const Segment& segment, uint64_t address, int64_t bytes);
  void EraseFree(const Segment& segment, uint64_t address, int64_t bytes);
  FreeSet& PoolOf(const Segment& segment) {
    return segment.small ? small_free_ : large_free_;
  }

  std::map<uint64_t, Segment> segments_;  // by start address
  FreeSet small_free_;
  FreeSet large_free_;
  CudaAllocatorFigures now_;
  CudaAllocatorFigures at_allocated_peak_;
  int64_t peak_reserved_ = 0;
};

}  // namespace memprof
