#include "profiler/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <unistd.h>

#include <torch/torch.h>
#include <torch/version.h>
#include <valgrind/callgrind.h>

#include "models/autocast_region.h"
#include "models/checkpoint.h"
#include "models/model.h"
#include "models/scope_observer.h"
#include "profiler/base/errors.h"
#include "profiler/base/zero_partition.h"
#include "profiler/capture/cpu_hook.h"
#include "profiler/capture/cuda_backend.h"
#include "profiler/capture/cuda_device.h"
#include "profiler/capture/cuda_replay.h"
#include "profiler/capture/memory_snapshot.h"
#include "profiler/capture/memory_tracker.h"
#include "profiler/train/attribution.h"
#include "profiler/train/cuda_session.h"
#include "profiler/train/redundancy.h"
#include "profiler/train/weight_casts.h"

#ifndef MEMPROF_GIT_SHA
#define MEMPROF_GIT_SHA "unknown"
#endif

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
      params, torch::optim::SGDOptions(train.lr).momentum(train.momentum));
}

// Zeroes the gradients in place, or drops them (set_to_none). LibTorch's
// Optimizer::zero_grad() would detach_() them first, which fails on gradients
// that are views into DDP buckets (gradient_as_bucket_view).
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

std::string Hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// The process's side of the report's context.
ReportContext ContextOf(const RankRun& run) {
  ReportContext c;
  c.rank = run.rank;
  c.world_size = run.world_size;
  c.device = run.device;
  c.backend = run.backend;
  c.libtorch_version = TORCH_VERSION;
  const CudaDeviceStatus& cuda = ProbeCudaDevice();
  c.cuda = {cuda.compiled, cuda.available, cuda.devices, cuda.status};
  c.git_sha = MEMPROF_GIT_SHA;
  c.hostname = Hostname();
  c.pid = static_cast<int64_t>(::getpid());
  c.config = run.config;
  return c;
}

int64_t CountElements(const std::vector<torch::Tensor>& tensors) {
  int64_t n = 0;
  for (const torch::Tensor& t : tensors) n += t.numel();
  return n;
}

// The models' block scopes, recorded by the tracker (Note [Named scopes]).
class TrackerScopes final : public ScopeObserver {
 public:
  void EnterScope(const std::string& name) override {
    MemoryTracker::Get().EnterScope(name);
  }
  void ExitScope() override { MemoryTracker::Get().ExitScope(); }
};

// One rank's run, phase by phase. The objects that hold memory are members
// so that what they hold is still live when the session ends.
class RankTrainer final : public RecomputeObserver {
 public:
  RankTrainer(const RunConfig& config, ProcessGroup& group, CudaSession* cuda,
              int cuda_device)
      : config_(config),
        group_(group),
        tracker_(MemoryTracker::Get()),
        cuda_(cuda),
        device_(config.train.device == "cuda"
                    ? torch::Device(torch::kCUDA,
                                    static_cast<c10::DeviceIndex>(cuda_device))
                    : torch::Device(torch::kCPU)),
        // Bucket buffers: DDP buckets, or the gradients themselves when the
        // gradients are views into them.
        bucket_category_(config.ddp.gradient_as_bucket_view
                             ? Category::kGradients
                             : Category::kDdpBuckets),
        autocast_{config.train.dtype == "bf16-autocast", torch::kBFloat16} {
    run_.rank = group.rank();
    run_.world_size = group.size();
    run_.device = config.train.device;
    run_.backend = DdpBackend(config);
    run_.hooked = device_.is_cuda() ? cuda != nullptr : CpuHookInstalled();
    run_.config = config;
    run_.micro_batch = MicroBatch(config);
    run_.prediction = Predict(config, group.rank());
    run_.context = ContextOf(run_);
    SetRecomputeObserver(this);
    SetScopeObserver(&scopes_);
  }

  // What a post-mortem needs to know of this rank (Note [Post-mortem]).
  std::string CaptureMeta() const {
    return nlohmann::ordered_json{{"context", ContextJson(run_.context)},
                                  {"micro_batch", run_.micro_batch}}
        .dump();
  }
  ~RankTrainer() override {
    SetRecomputeObserver(nullptr);
    SetScopeObserver(nullptr);
  }
  RankTrainer(const RankTrainer&) = delete;
  RankTrainer& operator=(const RankTrainer&) = delete;

  // Note [Recomputed activations]
  // With activation checkpointing a block's saved tensors are made twice:
  // in forward without autograd (freed at once: temporaries) and in
  // backward, when the block reruns its forward just before its own
  // backward (models/checkpoint.h). What the rerun leaves live is what the
  // block's backward needs, the same tensors a plain forward saves: they
  // are activations, resolved as the forward's are, by the phase rule from
  // the rerun's first seq; they die during the block's backward. The rerun
  // runs on the thread running backward (on the CPU, the loop's thread)
  // while the loop waits in backward(), so these calls never overlap the
  // loop's own marks. Its time is the step's recompute_seconds.
  void BeginRecompute() override {
    recompute_from_seq_ = tracker_.NextSeq();
    recompute_start_ = std::chrono::steady_clock::now();
  }
  void EndRecompute() override {
    tracker_.ResolvePendingSince(recompute_from_seq_, Category::kActivations);
    recompute_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                      recompute_start_)
            .count();
  }

  // Model, DDP and optimizer (phases model_init, ddp_init).
  void SetUp() {
    Mark(Phase::kModelInit, 0);
    torch::manual_seed(config_.train.seed);  // same weights on every rank
    model_ = BuildModel(config_);
    if (device_.is_cuda()) model_->module().to(device_);
    params_ = model_->module().parameters();
    ResolveOwnership(params_, Category::kWeights, misses_);
    ResolveOwnership(model_->module().buffers(), Category::kWeights, misses_,
                     kFlagBuffer);
    run_.parameters = CountElements(params_);
    if (cuda_ != nullptr) cuda_->Moment("model");
    if (autocast_.enabled) {
      weight_casts_ = std::make_unique<WeightCastObserver>(params_);
    }

    Mark(Phase::kDdpInit, 0);
    ddp_ = std::make_unique<DdpEngine>(group_, config_.ddp, params_);
    ResolveOwnership(ddp_->BucketBuffers(), bucket_category_, misses_,
                     kFlagBucket);
    if (cuda_ != nullptr) cuda_->Moment("process_group");
    optimizer_ = MakeOptimizer(config_.train, OptimizedParameters());
    torch::manual_seed(config_.train.seed + 1 + group_.rank());  // data
  }

  // Step 1 creates gradients and optimizer state; a bucket rebuild is
  // one-time work too. The steady state starts after both. Returns false
  // when the step was cut short by the memory limit.
  bool Step(int32_t step) {
    // Memprof's and the allocator's peaks restart with the steady state
    // (one-time work: step 1, and the bucket rebuild in step 2).
    if (cuda_ != nullptr && step == 3) cuda_->StartSteadyState();
    const auto start = std::chrono::steady_clock::now();
    StepRecord record;
    try {
      record.loss = Train(step);
    } catch (const std::exception&) {
      if (!StoppedByLimit()) throw;
      record.completed = false;
    }  // the batch, the loss and the graph are freed inside the step
    const auto end = std::chrono::steady_clock::now();
    record.seconds = std::chrono::duration<double>(end - start).count();
    record.comm_seconds = ddp_->CommSecondsBetween(start, end);
    record.exchange_seconds = exchange_seconds_;
    exchange_seconds_ = 0;
    record.recompute_seconds = recompute_seconds_;
    recompute_seconds_ = 0;
    run_.step_records.push_back(record);
    if (cuda_ != nullptr && record.completed &&
        (step == 1 || step == config_.train.steps)) {
      cuda_->Moment("step_" + std::to_string(step));
    }
    return record.completed;
  }

  // After the last step: are weights and optimizer state bit-identical on
  // every rank? Collective.
  void Audit() {
    Mark(Phase::kAudit, 0);
    run_.buckets = static_cast<int64_t>(ddp_->bucket_count());
    run_.redundancy.push_back(
        AuditAcrossRanks(group_, Category::kWeights, params_));
    run_.redundancy.push_back(AuditAcrossRanks(
        group_, Category::kOptimizerState, OptimizerStateTensors(*optimizer_)));
    if (!run_.zero_owners.empty()) run_.zero_covered_once = ShardsCoverOnce();
    // The audit's gathers leave their output tensors to Gloo's thread, which
    // could free them after the session ends: unattributed bytes, from run
    // to run (Note [Settled collectives]).
    group_.Settle();
  }

  // ZeRO-1: the parameters whose optimizer state this rank keeps (Note
  // [ZeRO-1 partition]); every parameter at stage 0.
  std::vector<torch::Tensor> OptimizedParameters() {
    if (config_.ddp.zero_stage != 1) return params_;
    std::vector<int64_t> bytes;
    for (const torch::Tensor& p : params_) bytes.push_back(p.nbytes());
    run_.zero_owners = PartitionParameters(bytes, group_.size());
    std::vector<int64_t> elements;
    for (const torch::Tensor& p : params_) elements.push_back(p.numel());
    run_.zero_partition = OwnedBytes(elements, run_.zero_owners, group_.size());
    std::vector<torch::Tensor> owned;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (run_.zero_owners[i] == group_.rank()) owned.push_back(params_[i]);
    }
    return owned;
  }

  // Collective: the parameters each rank's optimizer really holds state
  // for (by position in parameters()), gathered; true when together they
  // are every parameter exactly once.
  bool ShardsCoverOnce() {
    std::string mine;
    for (const torch::Tensor& held : OptimizerStateOwners()) {
      for (size_t i = 0; i < params_.size(); ++i) {
        if (params_[i].is_same(held)) mine += std::to_string(i) + ",";
      }
    }
    std::vector<int> times(params_.size(), 0);
    for (const std::string& list : group_.AllGather(mine)) {
      size_t from = 0;
      for (size_t comma; (comma = list.find(',', from)) != std::string::npos;
           from = comma + 1) {
        ++times[std::stoul(list.substr(from, comma - from))];
      }
    }
    return std::all_of(times.begin(), times.end(),
                       [](int n) { return n == 1; });
  }

  // The parameters the optimizer steps, as its parameter groups hold them.
  std::vector<torch::Tensor> OptimizerStateOwners() const {
    std::vector<torch::Tensor> held;
    for (const auto& group : optimizer_->param_groups()) {
      for (const torch::Tensor& p : group.params()) held.push_back(p);
    }
    return held;
  }

  // Out of memory under --memory-limit (Note [Memory limit]): whatever
  // gradients and optimizer state exist are attributed, then the rank stops
  // training and reports what it measured. False for any other error.
  bool StoppedByLimit() {
    if (tracker_.out_of_memory().seq < 0) return false;
    ResolveOwnership(Gradients(params_), Category::kGradients, misses_);
    if (optimizer_ != nullptr) {
      ResolveOwnership(OptimizerStateTensors(*optimizer_),
                       Category::kOptimizerState, misses_);
    }
    if (ddp_ != nullptr) {
      run_.buckets = static_cast<int64_t>(ddp_->bucket_count());
      ddp_->Abandon();  // the peers are mid-step
    }
    return true;
  }

  // Any other failure: peers may hang in teardown.
  void Abandon() {
    if (ddp_ != nullptr) ddp_->Abandon();
  }

  // Ends the session and computes the figures from its capture file; the
  // snapshot is written on the way (Note [Snapshot window]).
  RankRun Finish(const CaptureOutputs& outputs) {
    Mark(Phase::kIdle, 0);
    std::vector<CudaSegmentView> cuda_segments;
    if (cuda_ != nullptr) {
      run_.cuda = cuda_->Finish();
      cuda_segments = cuda_->Segments();
    }
    run_.capture = tracker_.EndSession();
    tracker_.SetMemoryLimit(0);
    const auto analysis_start = std::chrono::steady_clock::now();
    std::vector<CaptureSink*> sinks;
    CudaReplaySink replay;
    if (cuda_ == nullptr) sinks.push_back(&replay);
    std::optional<SnapshotWriter> snapshot;
    if (!outputs.out_dir.empty()) {
      const bool pickle = outputs.snapshot_format == DocumentFormat::kPickle;
      snapshot.emplace(
          outputs.out_dir + "/snapshot-" + std::to_string(group_.rank()) +
              (pickle ? ".pickle" : ".json"),
          outputs.snapshot_format, group_.rank(), run_.capture.begin_seq,
          cuda_ != nullptr ? &cuda_segments : nullptr);
      sinks.push_back(&*snapshot);
    }
    // Note [Late bucket frees]: the analysis also waits for the step of the
    // last freed bucket buffer.
    run_.analysis =
        Analyze(run_.capture,
                AnalysisOptions{last_one_time_step_, outputs.keep}, sinks);
    if (snapshot) snapshot->Finish(run_.analysis.end_seq);
    run_.analysis_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                      analysis_start)
            .count();
    if (cuda_ == nullptr) run_.cuda_replay = replay.Result();
    if (weight_casts_ != nullptr) {
      misses_.not_found += weight_casts_->missed();
      weight_casts_.reset();
    }
    run_.ownership_not_found = misses_.not_found;
    run_.ownership_conflicts = misses_.conflict;
    return std::move(run_);
  }

 private:
  // inputs, forward, backward (with the Reducer's all-reduces), optimizer,
  // zero_grad; returns the loss.
  double Train(int32_t step) {
    Mark(Phase::kInputs, step);
    Batch batch = model_->MakeBatch(run_.micro_batch);
    if (device_.is_cuda()) {
      batch = {batch.input.to(device_), batch.target.to(device_)};
    }
    ResolveOwnership({batch.input, batch.target}, Category::kInputs, misses_);

    const int64_t forward_begin = Mark(Phase::kForward, step);
    if (ddp_->PrepareForward()) {
      ResolveOwnership(ddp_->BucketBuffers(), bucket_category_, misses_,
                       kFlagBucket);
      last_one_time_step_ = step;
    }
    torch::Tensor loss;
    {
      AutocastRegion region(device_.type(), autocast_);  // Note [Weight casts]
      loss = model_->Loss(batch);
    }
    tracker_.ResolvePendingSince(forward_begin, Category::kActivations);

    Mark(Phase::kBackward, step);
    ddp_->PrepareForBackward();
    loss.backward();  // the Reducer all-reduces bucket by bucket
    ResolveOwnership(Gradients(params_), Category::kGradients, misses_);

    Mark(Phase::kOptimizer, step);
    optimizer_->step();
    ResolveOwnership(OptimizerStateTensors(*optimizer_),
                     Category::kOptimizerState, misses_);
    if (!run_.zero_owners.empty()) {
      exchange_seconds_ = ddp_->ExchangeParameters(params_, run_.zero_owners);
    }

    Mark(Phase::kZeroGrad, step);
    ZeroGrad(params_, config_.train.zero_grad_set_to_none);
    return loss.item<double>();
  }

  // The phase mark, and on a GPU the self-check there.
  int64_t Mark(Phase phase, int32_t step) {
    const int64_t seq = tracker_.SetPhase(phase, step);
    if (cuda_ != nullptr) cuda_->Check(phase, step);
    return seq;
  }

  const RunConfig& config_;
  ProcessGroup& group_;
  MemoryTracker& tracker_;
  CudaSession* cuda_;  // null: a cpu run, or cuda without the hook
  const torch::Device device_;
  const Category bucket_category_;
  // bf16-autocast: the forward's autocast switches (Note [Weight casts]).
  const AutocastState autocast_;
  RankRun run_;
  TrackerScopes scopes_;
  OwnershipMisses misses_;
  int32_t last_one_time_step_ = 1;
  double exchange_seconds_ = 0;  // this step's (Note [Parameter exchange])
  // Note [Recomputed activations]
  int64_t recompute_from_seq_ = 0;
  std::chrono::steady_clock::time_point recompute_start_;
  double recompute_seconds_ = 0;  // this step's
  std::unique_ptr<TrainableModel> model_;
  std::vector<torch::Tensor> params_;
  std::unique_ptr<DdpEngine> ddp_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<WeightCastObserver> weight_casts_;  // bf16-autocast only
};

// Note [Instruction counts]
// Under callgrind (bench/instructions.sh) the rank's steps from the third
// on (or from the last, when there are fewer) are one region: its counters
// are zeroed before that step and dumped as "steps <n>" after the last, so
// the dump holds the steps' instructions alone, on every thread, without
// start-up or report writing. Steps 1 and 2 are left out as one-time work
// (gradients and optimizer state created, the buckets rebuilt). Outside
// valgrind each request is a few instructions that do nothing.

}  // namespace

RankRun RunRank(const RunConfig& config, ProcessGroup& group,
                int64_t memory_limit_bytes, int cuda_device, bool cuda_hook,
                const CaptureOutputs& outputs) {
  MemoryTracker& tracker = MemoryTracker::Get();
  std::unique_ptr<CudaSession> cuda;
  if (config.train.device == "cuda") {
    // The device enforces the limit; the tracker records its refusal.
    if (cuda_hook) {
      cuda = std::make_unique<CudaSession>(cuda_device, memory_limit_bytes);
    } else {
      SelectCudaDevice(cuda_device);
    }
  } else {
    tracker.SetMemoryLimit(memory_limit_bytes);
  }
  RankTrainer trainer(config, group, cuda.get(), cuda_device);
  tracker.BeginSession(
      outputs.out_dir.empty() ? "" : CapturePath(outputs.out_dir, group.rank()),
      trainer.CaptureMeta());
  try {
    trainer.SetUp();
    bool completed = true;
    // Note [Instruction counts]
    const int64_t first_counted = std::min<int64_t>(3, config.train.steps);
    for (int32_t step = 1; completed && step <= config.train.steps; ++step) {
      if (step == first_counted) CALLGRIND_ZERO_STATS;
      completed = trainer.Step(step);
    }
    if (RUNNING_ON_VALGRIND) {
      const std::string label =
          "steps " + std::to_string(config.train.steps - first_counted + 1);
      CALLGRIND_DUMP_STATS_AT(label.c_str());
    }
    if (tracker.out_of_memory().seq < 0) trainer.Audit();
  } catch (const std::exception&) {
    // Out of memory before the first step (model or DDP set-up) is
    // reported like one inside a step.
    if (!trainer.StoppedByLimit()) {
      trainer.Abandon();
      tracker.SetMemoryLimit(0);
      throw;
    }
  }
  return trainer.Finish(outputs);
}

}  // namespace memprof
