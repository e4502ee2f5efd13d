#include "profiler/base/cuda_allocator_model.h"

#include <algorithm>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>

namespace memprof {
namespace {

// Where predict mode puts its first segment (any nonzero address will do).
constexpr uint64_t kFirstSegmentAddress = uint64_t{1} << 32;

std::string Hex(uint64_t address) {
  std::ostringstream out;
  out << "0x" << std::hex << address;
  return out.str();
}

void CheckRequest(int64_t requested, const std::string& where) {
  if (requested <= 0) {
    throw std::logic_error(where +
                           ": expected a request of at least 1 byte, "
                           "got " +
                           std::to_string(requested));
  }
}

}  // namespace

int64_t CudaRoundSize(int64_t requested) {
  if (requested < kCudaMinBlockSize) return kCudaMinBlockSize;
  return (requested + kCudaMinBlockSize - 1) / kCudaMinBlockSize *
         kCudaMinBlockSize;
}

int64_t CudaSegmentSize(int64_t rounded) {
  if (CudaSmallPool(rounded)) return kCudaSmallBuffer;
  if (rounded < kCudaMinLargeAlloc) return kCudaLargeBuffer;
  return (rounded + kCudaRoundLarge - 1) / kCudaRoundLarge * kCudaRoundLarge;
}

bool CudaSmallPool(int64_t rounded) { return rounded <= kCudaSmallSize; }

void CudaAllocatorModel::SegmentAlloc(uint64_t address, int64_t bytes) {
  const auto next = segments_.lower_bound(address);
  const bool refused =
      bytes <= 0 ||
      (next != segments_.end() &&
       next->first < address + static_cast<uint64_t>(bytes)) ||
      (next != segments_.begin() &&
       std::prev(next)->first +
               static_cast<uint64_t>(std::prev(next)->second.bytes) >
           address);
  if (refused) {
    throw std::logic_error("SegmentAlloc at " + Hex(address) +
                           ": a segment of " + std::to_string(bytes) +
                           " bytes is empty or overlaps another segment");
  }
  Segment& segment = segments_.emplace_hint(next, address, Segment())->second;
  segment.bytes = bytes;
  segment.small = bytes <= kCudaSmallBuffer;  // Note [Segment pools]
  segment.blocks.emplace(address, Block{bytes, 0, State::kFree});
  InsertFree(segment, address, bytes);
  now_.reserved += bytes;
  peak_reserved_ = std::max(peak_reserved_, now_.reserved);
}

int64_t CudaAllocatorModel::Alloc(uint64_t address, int64_t requested) {
  CheckRequest(requested, "Alloc at " + Hex(address));
  const auto [segment_it, block_it] = BlockAt(address, State::kFree, "Alloc");
  Segment& segment = segment_it->second;
  Block& block = block_it->second;
  const int64_t rounded = CudaRoundSize(requested);
  if (CudaSmallPool(rounded) != segment.small || block.bytes < rounded) {
    throw std::logic_error("Alloc at " + Hex(address) + ": a request of " +
                           std::to_string(requested) + " bytes (" +
                           std::to_string(rounded) + " rounded, " +
                           (CudaSmallPool(rounded) ? "small" : "large") +
                           " pool) cannot take the free block of " +
                           std::to_string(block.bytes) + " bytes there, in a " +
                           (segment.small ? "small" : "large") + " segment");
  }
  EraseFree(segment, address, block.bytes);
  // Note [Split rule]
  const int64_t remaining = block.bytes - rounded;
  if (segment.small ? remaining >= kCudaMinBlockSize
                    : remaining > kCudaSmallSize) {
    block.bytes = rounded;
    const uint64_t rest = address + static_cast<uint64_t>(rounded);
    segment.blocks.emplace_hint(std::next(block_it), rest,
                                Block{remaining, 0, State::kFree});
    InsertFree(segment, rest, remaining);
  }
  block.state = State::kAllocated;
  block.requested = requested;
  now_.allocated += block.bytes;
  now_.requested += requested;
  if (now_.allocated >= at_allocated_peak_.allocated) {
    at_allocated_peak_ = now_;
  }
  return block.bytes;
}

void CudaAllocatorModel::FreeRequested(uint64_t address) {
  Block& block =
      BlockAt(address, State::kAllocated, "FreeRequested").second->second;
  block.state = State::kFreeRequested;
  now_.allocated -= block.bytes;
}

void CudaAllocatorModel::FreeCompleted(uint64_t address) {
  auto [segment_it, block_it] =
      BlockAt(address, State::kFreeRequested, "FreeCompleted");
  Segment& segment = segment_it->second;
  now_.requested -= block_it->second.requested;
  block_it->second.requested = 0;
  block_it->second.state = State::kFree;
  if (block_it != segment.blocks.begin()) {
    const auto prev = std::prev(block_it);
    if (prev->second.state == State::kFree) {
      EraseFree(segment, prev->first, prev->second.bytes);
      prev->second.bytes += block_it->second.bytes;
      segment.blocks.erase(block_it);
      block_it = prev;
    }
  }
  const auto next = std::next(block_it);
  if (next != segment.blocks.end() && next->second.state == State::kFree) {
    EraseFree(segment, next->first, next->second.bytes);
    block_it->second.bytes += next->second.bytes;
    segment.blocks.erase(next);
  }
  InsertFree(segment, block_it->first, block_it->second.bytes);
}

void CudaAllocatorModel::SegmentFree(uint64_t address) {
  const auto segment_it = segments_.find(address);
  if (segment_it == segments_.end() || segment_it->second.blocks.size() != 1 ||
      segment_it->second.blocks.begin()->second.state != State::kFree) {
    throw std::logic_error("SegmentFree at " + Hex(address) +
                           ": no segment that is one free block starts there");
  }
  const Segment& segment = segment_it->second;
  EraseFree(segment, address, segment.bytes);
  now_.reserved -= segment.bytes;
  segments_.erase(segment_it);
}

uint64_t CudaAllocatorModel::Malloc(int64_t requested) {
  CheckRequest(requested, "Malloc");
  const int64_t rounded = CudaRoundSize(requested);
  const FreeSet& pool = CudaSmallPool(rounded) ? small_free_ : large_free_;
  const auto fit = pool.lower_bound({rounded, 0});
  uint64_t address = kFirstSegmentAddress;
  if (fit != pool.end()) {
    address = fit->second;
  } else {
    if (!segments_.empty()) {
      const auto& [last, segment] = *segments_.rbegin();
      address = last + static_cast<uint64_t>(segment.bytes);
    }
    SegmentAlloc(address, CudaSegmentSize(rounded));
  }
  Alloc(address, requested);
  return address;
}

void CudaAllocatorModel::Free(uint64_t address) {
  FreeRequested(address);
  FreeCompleted(address);
}

int64_t CudaAllocatorModel::BlockSize(uint64_t address) const {
  const auto segment_it = segments_.upper_bound(address);
  if (segment_it == segments_.begin()) return 0;
  const auto& blocks = std::prev(segment_it)->second.blocks;
  const auto block_it = blocks.find(address);
  if (block_it == blocks.end() || block_it->second.state != State::kAllocated) {
    return 0;
  }
  return block_it->second.bytes;
}

std::pair<CudaAllocatorModel::SegmentIt, CudaAllocatorModel::BlockIt>
CudaAllocatorModel::BlockAt(uint64_t address, State state, const char* event) {
  auto segment_it = segments_.upper_bound(address);
  if (segment_it != segments_.begin()) {
    --segment_it;
    const auto block_it = segment_it->second.blocks.find(address);
    if (block_it != segment_it->second.blocks.end() &&
        block_it->second.state == state) {
      return {segment_it, block_it};
    }
  }
  throw std::logic_error(std::string(event) + " at " + Hex(address) + ": no " +
                         StateName(state) + " block starts there");
}

std::vector<CudaSegmentView> CudaAllocatorModel::Segments() const {
  std::vector<CudaSegmentView> out;
  for (const auto& [address, segment] : segments_) {
    CudaSegmentView view{address, segment.bytes, segment.small, {}};
    for (const auto& [at, block] : segment.blocks) {
      const char* state = block.state == State::kAllocated ? "active_allocated"
                          : block.state == State::kFreeRequested
                              ? "active_pending_free"
                              : "inactive";
      view.blocks.push_back({at, block.bytes, block.requested, state});
    }
    out.push_back(std::move(view));
  }
  return out;
}

const char* CudaAllocatorModel::StateName(State state) {
  switch (state) {
    case State::kFree:
      return "free";
    case State::kAllocated:
      return "allocated";
    case State::kFreeRequested:
      return "free-requested";
  }
  return "";
}

void CudaAllocatorModel::InsertFree(const Segment& segment, uint64_t address,
                                    int64_t bytes) {
  PoolOf(segment).emplace(bytes, address);
  if (bytes != segment.bytes) now_.inactive_split += bytes;
}

void CudaAllocatorModel::EraseFree(const Segment& segment, uint64_t address,
                                   int64_t bytes) {
  PoolOf(segment).erase({bytes, address});
  if (bytes != segment.bytes) now_.inactive_split -= bytes;
}

}  // namespace memprof
