#include "profiler/session/cuda_session.h"

#include <cmath>

#include <ATen/Context.h>
#include <torch/torch.h>

#include "profiler/capture/cuda_backend.h"
#include "profiler/capture/memory_tracker.h"

namespace memprof {
namespace {

// One trace per process: the allocator keeps the callback for good.
CudaTrace& Trace() {
  static CudaTrace* trace = [] {
    auto* t = new CudaTrace(MemoryTracker::Get());
    at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
    AttachCudaTrace(*t);
    return t;
  }();
  return *trace;
}

// cuBLAS keeps a handle and a workspace per thread and stream, made at the
// first matmul on each: a forward (this thread) and a backward (autograd's
// device thread) make them before the session, so no step pays for them
// and no category holds them.
void WarmUpLibraries(int device) {
  const auto on = torch::TensorOptions().device(torch::kCUDA, device);
  torch::Tensor x = torch::ones({16, 16}, on).requires_grad_(true);
  torch::Tensor w = torch::ones({16, 16}, on).requires_grad_(true);
  torch::Tensor b = torch::ones({16}, on).requires_grad_(true);
  (torch::nn::functional::linear(x, w, b).sum() + torch::mm(x, w).sum())
      .backward();
}

}  // namespace

CudaSession::CudaSession(int device, int64_t memory_limit_bytes) {
  // Before this process's context exists (the first session of a process;
  // later ones find it made).
  static const int64_t used_at_start = DeviceUsedWithoutContext(device);
  if (used_at_start >= 0)
    run_.moments.push_back({"process_start", used_at_start, 0, 0});
  SelectCudaDevice(device);
  run_.device = device;
  run_.device_name = CudaDeviceName(device);
  CudaTrace& trace = Trace();
  Moment("cuda_context");
  run_.device_total = ReadCudaDeviceMemory().total_bytes;
  if (memory_limit_bytes > 0) {
    const double fraction =
        std::min(1.0, static_cast<double>(memory_limit_bytes) /
                          static_cast<double>(run_.device_total));
    SetCudaMemoryFraction(device, fraction);
    // The allocator's own limit: fraction x total, truncated.
    run_.memory_limit_bytes =
        static_cast<int64_t>(fraction * static_cast<double>(run_.device_total));
    trace.SetLimit(run_.memory_limit_bytes);
  }
  WarmUpLibraries(device);
  Moment("cuda_libraries");
  run_.before_session_allocated = trace.Now().allocated;
}

void CudaSession::Moment(const std::string& name) {
  const CudaAllocatorStats stats = ReadCudaAllocatorStats(run_.device);
  run_.moments.push_back({name, ReadCudaDeviceMemory().used(),
                          stats.now.reserved, stats.now.allocated});
}

void CudaSession::Check(Phase phase, int32_t step) {
  run_.checks.push_back(
      {step, phase, Trace().Now(), ReadCudaAllocatorStats(run_.device).now});
}

void CudaSession::StartSteadyState() {
  ResetCudaPeaks(run_.device);
  Trace().ResetPeaks();
}

bool CudaSession::RanOutOfMemory() const {
  return Trace().out_of_memory().happened;
}

std::vector<CudaSegmentView> CudaSession::Segments() const {
  return Trace().Segments();
}

CudaRun CudaSession::Finish() {
  CudaTrace& trace = Trace();
  const CudaAllocatorStats stats = ReadCudaAllocatorStats(run_.device);
  run_.at_allocated_peak = trace.AtAllocatedPeak();
  run_.peak_reserved = trace.PeakReserved();
  run_.allocator_peak_allocated = stats.peak_allocated;
  run_.allocator_peak_reserved = stats.peak_reserved;
  run_.mismatches = trace.mismatches();
  run_.first_mismatch = trace.first_mismatch();
  const CudaOutOfMemory oom = trace.out_of_memory();
  run_.out_of_memory = oom.happened;
  run_.oom_requested_bytes = oom.requested_bytes;
  run_.oom_device_free_bytes = oom.device_free_bytes;
  run_.at_out_of_memory = oom.figures;
  return std::move(run_);
}

}  // namespace memprof
