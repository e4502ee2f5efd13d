#include "profiler/train/timed_process_group.h"

#include <algorithm>

namespace memprof {

void CommIntervals::Issued() {
  std::lock_guard<std::mutex> guard(mutex_);
  ++issued_;
}

void CommIntervals::Add(SteadyTime begin, SteadyTime end) {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    intervals_.emplace_back(begin, end);
  }
  added_.notify_all();
}

int64_t CommIntervals::issued() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return issued_;
}

double CommIntervals::SecondsBetween(SteadyTime begin, SteadyTime end) const {
  std::vector<std::pair<SteadyTime, SteadyTime>> clipped;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    added_.wait_for(lock, std::chrono::seconds(1), [&] {
      return static_cast<int64_t>(intervals_.size()) >= issued_;
    });
    for (const auto& [from, to] : intervals_) {
      const SteadyTime a = std::max(from, begin);
      const SteadyTime b = std::min(to, end);
      if (a < b) clipped.emplace_back(a, b);
    }
  }
  std::sort(clipped.begin(), clipped.end());
  std::chrono::duration<double> total{0};
  SteadyTime covered = begin;
  for (const auto& [from, to] : clipped) {
    const SteadyTime a = std::max(from, covered);
    if (to > a) {
      total += to - a;
      covered = to;
    }
  }
  return total.count();
}

TimedProcessGroup::TimedProcessGroup(
    c10::intrusive_ptr<c10d::ProcessGroup> inner,
    std::shared_ptr<CommIntervals> intervals)
    : c10d::ProcessGroup(inner->getRank(), inner->getSize()),
      inner_(std::move(inner)),
      intervals_(std::move(intervals)) {
  // The same backends: Gloo for host tensors, and for GPU tensors the
  // group's default (NCCL, or Gloo again), which the Reducer also reaches
  // for (the rebuilt buckets' indices are broadcast on the GPU).
  using Type = c10d::ProcessGroup::BackendType;
  setDefaultBackend(inner_->getBackendType());
  setBackend(c10::DeviceType::CPU, Type::GLOO,
             inner_->getBackend(c10::DeviceType::CPU));
  for (const c10::Device& device : inner_->getDeviceTypes()) {
    if (device.type() != c10::DeviceType::CUDA) continue;
    setBackend(c10::DeviceType::CUDA, inner_->getBackendType(),
               inner_->getBackend(c10::DeviceType::CUDA));
  }
}

c10::intrusive_ptr<c10d::Work> TimedProcessGroup::allreduce(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) {
  const SteadyTime issued = std::chrono::steady_clock::now();
  c10::intrusive_ptr<c10d::Work> work = inner_->allreduce(tensors, opts);
  intervals_->Issued();
  std::shared_ptr<CommIntervals> intervals = intervals_;
  work->getFuture()->addCallback([intervals, issued](c10::ivalue::Future&) {
    intervals->Add(issued, std::chrono::steady_clock::now());
  });
  return work;
}

}  // namespace memprof
