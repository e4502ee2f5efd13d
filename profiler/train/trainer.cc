#include "profiler/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include <torch/torch.h>

#include "models/model.h"
#include "profiler/train/attribution.h"
#include "profiler/capture/cpu_hook.h"
#include "profiler/base/errors.h"
#include "profiler/capture/memory_tracker.h"
#include "profiler/train/redundancy.h"

namespace memprof {
namespace {

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(
    const TrainConfig& train, const std::vector<torch::Tensor>& params) {
  if (train.optimizer == "adam") {
    return std::make_unique<torch::optim::Adam>(
        params, torch::optim::AdamOptions(train.lr));
  }
  if (train.optimizer == "adamw") {
    return std::make_unique<torch::optim::AdamW>(
        params, torch::optim::AdamWOptions(train.lr));
  }
  return std::make_unique<torch::optim::SGD>(
      params, torch::optim::SGDOptions(train.lr));
}

// Zeroes the gradients in place, or drops them (set_to_none). 1.13's
// Optimizer::zero_grad() would detach_() them, which fails on gradients that
// are views into DDP buckets (gradient_as_bucket_view).
void ZeroGrad(const std::vector<torch::Tensor>& params, bool set_to_none) {
  for (const torch::Tensor& p : params) {
    torch::Tensor& grad = const_cast<torch::Tensor&>(p).mutable_grad();
    if (!grad.defined()) continue;
    if (set_to_none) {
      grad.reset();
    } else {
      grad.zero_();
    }
  }
}

// Note [Late bucket frees]
// After DDP rebuilds its buckets (step 2), the old bucket buffers die when
// the last reference drops, and a Gloo worker thread keeps one until it
// loops again after its last all-reduce: on a loaded machine that can be a
// step later. The steady state starts only after the step in which the
// last replaced bucket buffer was freed.
int32_t LastBucketFreeStep(const Capture& capture) {
  int64_t last_free = -1;
  for (const Lifetime& life : capture.lifetimes) {
    if ((life.flags & kFlagBucket) && life.free_seq != kLive) {
      last_free = std::max(last_free, life.free_seq);
    }
  }
  int32_t step = 0;
  for (const PhaseMark& mark : capture.marks) {
    if (mark.seq > last_free) break;
    step = mark.step;
  }
  return last_free < 0 ? 0 : step;
}

int64_t CountElements(const std::vector<torch::Tensor>& tensors) {
  int64_t n = 0;
  for (const torch::Tensor& t : tensors) n += t.numel();
  return n;
}

}  // namespace

RankRun RunRank(const RunConfig& config, ProcessGroup& group,
                   int64_t memory_limit_bytes) {
  MemoryTracker& tracker = MemoryTracker::Get();
  tracker.SetMemoryLimit(memory_limit_bytes);
  RankRun report;
  report.rank = group.rank();
  report.world_size = group.size();
  report.backend = "gloo";
  report.hooked = CpuHookInstalled();
  report.config = config;
  report.micro_batch = MicroBatch(config);
  report.prediction = Predict(config);
  OwnershipMisses misses;
  // Bucket buffers: DDP buckets, or the gradients themselves when the
  // gradients are views into them.
  const Category bucket_category = config.ddp.gradient_as_bucket_view
                                       ? Category::kGradients
                                       : Category::kDdpBuckets;

  int32_t last_one_time_step = 1;
  // Declared outside the session's try so that what they hold is still live
  // when the session ends.
  std::unique_ptr<TrainableModel> model;
  std::vector<torch::Tensor> params;
  std::unique_ptr<DdpEngine> ddp;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  // Out of memory under --memory-limit (Note [Memory limit]): whatever
  // gradients and optimizer state exist are attributed, then the rank stops
  // training and reports what it measured. Any other error is rethrown.
  auto stopped_by_limit = [&] {
    if (tracker.out_of_memory().seq < 0) return false;
    ResolveOwnership(Gradients(params), Category::kGradients, misses);
    if (optimizer != nullptr) {
      ResolveOwnership(OptimizerStateTensors(*optimizer),
                       Category::kOptimizerState, misses);
    }
    if (ddp != nullptr) {
      report.buckets = static_cast<int64_t>(ddp->bucket_count());
      ddp->Abandon();  // the peers are mid-step
    }
    return true;
  };
  tracker.BeginSession();
  try {
    tracker.SetPhase(Phase::kModelInit, 0);
    torch::manual_seed(config.train.seed);  // same weights on every rank
    model = BuildModel(config);
    params = model->module().parameters();
    ResolveOwnership(params, Category::kWeights, misses);
    ResolveOwnership(model->module().buffers(), Category::kWeights, misses,
                     kFlagBuffer);
    report.parameters = CountElements(params);

    tracker.SetPhase(Phase::kDdpInit, 0);
    ddp = std::make_unique<DdpEngine>(group, config.ddp, params);
    ResolveOwnership(ddp->BucketBuffers(), bucket_category, misses,
                     kFlagBucket);
    optimizer = MakeOptimizer(config.train, params);
    torch::manual_seed(config.train.seed + 1 + group.rank());  // data
    // Step 1 creates gradients and optimizer state; a bucket rebuild is
    // one-time work too. The steady state starts after both.

    for (int32_t step = 1; step <= config.train.steps; ++step) {
      const auto start = std::chrono::steady_clock::now();
      StepRecord record;
      try {
        tracker.SetPhase(Phase::kInputs, step);
        const Batch batch = model->MakeBatch(report.micro_batch);
        ResolveOwnership({batch.input, batch.target}, Category::kInputs,
                         misses);

        const int64_t forward_begin = tracker.SetPhase(Phase::kForward, step);
        if (ddp->PrepareForward()) {
          ResolveOwnership(ddp->BucketBuffers(), bucket_category, misses,
                           kFlagBucket);
          last_one_time_step = step;
        }
        torch::Tensor loss = model->Loss(batch);
        tracker.ResolvePendingSince(forward_begin, Category::kActivations);

        tracker.SetPhase(Phase::kBackward, step);
        ddp->PrepareForBackward();
        loss.backward();  // the Reducer all-reduces bucket by bucket
        ResolveOwnership(Gradients(params), Category::kGradients, misses);

        tracker.SetPhase(Phase::kOptimizer, step);
        optimizer->step();
        ResolveOwnership(OptimizerStateTensors(*optimizer),
                         Category::kOptimizerState, misses);

        tracker.SetPhase(Phase::kZeroGrad, step);
        ZeroGrad(params, config.train.zero_grad_set_to_none);
        record.loss = loss.item<double>();
      } catch (const std::exception&) {
        if (!stopped_by_limit()) throw;
        record.completed = false;
      }  // the batch, the loss and the graph are freed inside the step
      const auto end = std::chrono::steady_clock::now();
      record.seconds = std::chrono::duration<double>(end - start).count();
      record.comm_seconds = ddp->CommSecondsBetween(start, end);
      report.step_records.push_back(record);
      if (!record.completed) break;
    }

    if (tracker.out_of_memory().seq < 0) {
      tracker.SetPhase(Phase::kAudit, 0);
      report.buckets = static_cast<int64_t>(ddp->bucket_count());
      report.redundancy.push_back(
          AuditAcrossRanks(group, Category::kWeights, params));
      report.redundancy.push_back(AuditAcrossRanks(
          group, Category::kOptimizerState, OptimizerStateTensors(*optimizer)));
    }
  } catch (const std::exception&) {
    // Out of memory before the first step (model or DDP set-up) is
    // reported like one inside a step.
    if (!stopped_by_limit()) {
      if (ddp != nullptr) ddp->Abandon();  // peers may hang in teardown
      tracker.SetMemoryLimit(0);
      throw;
    }
  }
  tracker.SetPhase(Phase::kIdle, 0);
  report.capture = tracker.EndSession();
  tracker.SetMemoryLimit(0);
  const Capture& capture = report.capture;
  report.analysis = Analyze(
      capture, 1 + std::max(last_one_time_step, LastBucketFreeStep(capture)));
  if (capture.out_of_memory.seq >= 0) {
    report.out_of_memory_bytes = LiveAt(capture, capture.out_of_memory.seq);
  }
  for (const Lifetime& life : capture.lifetimes) {
    if ((life.flags & kFlagBuffer) && life.free_seq == kLive) {
      report.buffer_bytes += life.bytes;
    }
  }
  report.ownership_not_found = misses.not_found;
  report.ownership_conflicts = misses.conflict;
  return report;
}

}  // namespace memprof
