// Note [Communication time]
// The Reducer's process group, with a timer around every all-reduce: a
// c10d::ProcessGroup that forwards each collective to the real one
// (the group of ProcessGroupGloo) and, for all-reduce, records when it was
// issued and when its Work's future completed. The Reducer issues one
// all-reduce per bucket from autograd hooks while backward still computes; the
// time spent communicating in a step is the union of those intervals within it
// (two buckets in flight together count once). Only the timer is added: the
// collectives, their tensors and their threads are the real ones.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

namespace memprof {

using SteadyTime = std::chrono::steady_clock::time_point;

// Issue-to-completion intervals of the all-reduces; any thread.
class CommIntervals {
 public:
  void Issued();  // an all-reduce whose interval Add() will bring
  void Add(SteadyTime begin, SteadyTime end);
  // Seconds of the union of the intervals, clipped to [begin, end]. A
  // completed future may run its callbacks just after its waiter wakes, so
  // this first waits (at most a second) until every issued all-reduce has
  // been added: call it once the Reducer has waited for them.
  double SecondsBetween(SteadyTime begin, SteadyTime end) const;
  // All-reduces issued so far.
  int64_t issued() const;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable added_;
  int64_t issued_ = 0;
  std::vector<std::pair<SteadyTime, SteadyTime>> intervals_;
};

// Carries the inner group's backend for every other collective, which
// ProcessGroup dispatches to it unchanged.
class TimedProcessGroup final : public c10d::ProcessGroup {
 public:
  TimedProcessGroup(c10::intrusive_ptr<c10d::ProcessGroup> inner,
                    std::shared_ptr<CommIntervals> intervals);

  c10::intrusive_ptr<c10d::Work> allreduce(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceOptions& opts) override;

 private:
  c10::intrusive_ptr<c10d::ProcessGroup> inner_;
  std::shared_ptr<CommIntervals> intervals_;
};

}  // namespace memprof
