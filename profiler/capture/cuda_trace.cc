#include "profiler/capture/cuda_trace.h"

#include <stdexcept>

namespace memprof {

using Entry = c10::CachingDeviceAllocator::TraceEntry;

void CudaTrace::Apply(const Entry& entry) {
  std::lock_guard<std::mutex> guard(mutex_);
  const uint64_t address = entry.addr_;
  const auto bytes = static_cast<int64_t>(entry.size_);
  try {
    switch (entry.action_) {
      case Entry::SEGMENT_ALLOC:
        mirror_.SegmentAlloc(address, bytes);
        break;
      case Entry::SEGMENT_FREE:
        mirror_.SegmentFree(address);
        break;
      case Entry::ALLOC: {
        mirror_.Alloc(address, bytes);
        // No limit is set on a CUDA run's tracker: the device refuses.
        tracker_.RecordAlloc(reinterpret_cast<void*>(address),
                             CudaRoundSize(bytes));
        break;
      }
      case Entry::FREE_REQUESTED:
        mirror_.FreeRequested(address);
        tracker_.RecordFree(reinterpret_cast<void*>(address));
        break;
      case Entry::FREE_COMPLETED:
        mirror_.FreeCompleted(address);
        break;
      case Entry::OOM:
        if (!out_of_memory_.happened) {
          // The OOM entry carries the device's free bytes in addr_.
          out_of_memory_ = {true, bytes, static_cast<int64_t>(address),
                            mirror_.now()};
        }
        tracker_.RecordRefusal(bytes, limit_bytes_);
        break;
      case Entry::SEGMENT_MAP:
      case Entry::SEGMENT_UNMAP:
        Mismatch("expandable segments (SEGMENT_MAP/UNMAP) are not modelled");
        break;
      case Entry::SNAPSHOT:
        break;
    }
  } catch (const std::logic_error& e) {
    Mismatch(e.what());
  }
}

void CudaTrace::Mismatch(const std::string& what) {
  if (mismatches_++ == 0) first_mismatch_ = what;
}

void CudaTrace::SetLimit(int64_t limit_bytes) {
  std::lock_guard<std::mutex> guard(mutex_);
  limit_bytes_ = limit_bytes;
}

void CudaTrace::ResetPeaks() {
  std::lock_guard<std::mutex> guard(mutex_);
  mirror_.ResetPeaks();
}

CudaAllocatorFigures CudaTrace::Now() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return mirror_.now();
}

std::vector<CudaSegmentView> CudaTrace::Segments() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return mirror_.Segments();
}

CudaAllocatorFigures CudaTrace::AtAllocatedPeak() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return mirror_.at_allocated_peak();
}

int64_t CudaTrace::PeakReserved() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return mirror_.peak_reserved();
}

CudaOutOfMemory CudaTrace::out_of_memory() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return out_of_memory_;
}

int64_t CudaTrace::mismatches() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return mismatches_;
}

std::string CudaTrace::first_mismatch() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return first_mismatch_;
}

}  // namespace memprof
