#include "profiler/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <memprof/memprof.h>
#include <torch/torch.h>
#include <valgrind/callgrind.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

#include "models/autocast_region.h"
#include "models/checkpoint.h"
#include "models/model.h"
#include "models/scope_observer.h"
#include "profiler/base/zero_partition.h"
#include "profiler/capture/memory_tracker.h"
#include "profiler/session/attribution.h"
#include "profiler/session/session_impl.h"
#include "profiler/train/redundancy.h"
#include "profiler/train/weight_casts.h"

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

// One rank's run, phase by phase, marked through memprof::Session as a
// program would mark its own loop. The objects that hold memory are
// members so that what they hold is still live when the session ends.
class RankTrainer final : public RecomputeObserver, public ScopeObserver {
 public:
  RankTrainer(const RunConfig& config, ProcessGroup& group, Session& session,
              int cuda_device)
      : config_(config),
        group_(group),
        session_(session),
        device_(config.train.device == "cuda"
                    ? torch::Device(torch::kCUDA,
                                    static_cast<c10::DeviceIndex>(cuda_device))
                    : torch::Device(torch::kCPU)),
        autocast_{config.train.dtype == "bf16-autocast", torch::kBFloat16} {
    SetRecomputeObserver(this);
    SetScopeObserver(this);
  }
  ~RankTrainer() override {
    SetRecomputeObserver(nullptr);
    SetScopeObserver(nullptr);
  }
  RankTrainer(const RankTrainer&) = delete;
  RankTrainer& operator=(const RankTrainer&) = delete;

  // A checkpointed block's rerun inside backward (Note [Recomputed
  // activations] in profiler/session/session_impl.cc).
  void BeginRecompute() override { recompute_.emplace(session_.Recompute()); }
  void EndRecompute() override { recompute_.reset(); }

  // The models' block scopes (Note [Named scopes]), as a program opens its
  // own: session.Scope(name).
  void EnterScope(const std::string& name) override {
    scopes_.push_back(session_.Scope(name));
  }
  void ExitScope() override { scopes_.pop_back(); }

  // Model, DDP and optimizer (phases model_init, ddp_init).
  void SetUp() {
    torch::manual_seed(config_.train.seed);  // same weights on every rank
    model_ = BuildModel(config_);
    if (device_.is_cuda()) model_->module().to(device_);
    params_ = model_->module().parameters();
    // The ones the optimizer, the Reducer and ZeRO-1 see (Note [Frozen
    // parameters]).
    for (const torch::Tensor& p : params_) {
      if (p.requires_grad()) trained_.push_back(p);
    }
    session_.Track(model_->module());
    if (autocast_.enabled) {
      weight_casts_ = std::make_unique<WeightCastObserver>(params_);
    }
    {
      auto mark = session_.DataParallelSetUp();
      ddp_ = std::make_unique<DdpEngine>(group_, config_.ddp, params_);
      session_.Track(group_.c10d_group());
      ReducerOptions reducer;
      reducer.bucket_cap_bytes =
          static_cast<int64_t>(config_.ddp.bucket_cap_mb * 1024 * 1024);
      reducer.gradient_as_bucket_view = config_.ddp.gradient_as_bucket_view;
      session_.Track(ddp_->reducer(), reducer);
    }
    optimizer_ = MakeOptimizer(config_.train, OptimizedParameters());
    session_.Track(*optimizer_);
    torch::manual_seed(config_.train.seed + 1 + group_.rank());  // data
  }

  // Step 1 creates gradients and optimizer state; a bucket rebuild is
  // one-time work too. The steady state starts after both. Returns false
  // when the step was cut short by the memory limit.
  bool Step(int32_t step) {
    const auto start = std::chrono::steady_clock::now();
    bool completed = true;
    try {
      auto mark = session_.Step();
      mark.Loss(Train());
    } catch (const std::exception&) {
      if (!StoppedByLimit()) throw;
      completed = false;
    }  // the batch, the loss and the graph are freed inside the step
    const auto end = std::chrono::steady_clock::now();
    StepRecord& record = session_.impl().LastStep();
    record.comm_seconds = ddp_->CommSecondsBetween(start, end);
    record.exchange_seconds = exchange_seconds_;
    exchange_seconds_ = 0;
    return completed;
  }

  // After the last step: are weights and optimizer state bit-identical on
  // every rank? Collective.
  void Audit() {
    session_.impl().Mark(Phase::kAudit);
    RankRun& run = session_.impl().run();
    run.buckets = static_cast<int64_t>(ddp_->bucket_count());
    run.redundancy.push_back(
        AuditAcrossRanks(group_, Category::kWeights, params_));
    run.redundancy.push_back(AuditAcrossRanks(
        group_, Category::kOptimizerState, OptimizerStateTensors(*optimizer_)));
    if (!run.zero_owners.empty()) run.zero_covered_once = ShardsCoverOnce();
    // The audit's gathers leave their output tensors to Gloo's thread, which
    // could free them after the session ends: unattributed bytes, from run
    // to run (Note [Settled collectives]).
    group_.Settle();
  }

  // ZeRO-1: the trained parameters whose optimizer state this rank keeps
  // (Note [ZeRO-1 partition]); every trained parameter at stage 0.
  std::vector<torch::Tensor> OptimizedParameters() {
    if (config_.ddp.zero_stage != 1) return trained_;
    RankRun& run = session_.impl().run();
    std::vector<int64_t> bytes;
    for (const torch::Tensor& p : trained_) bytes.push_back(p.nbytes());
    run.zero_owners = PartitionParameters(bytes, group_.size());
    std::vector<int64_t> elements;
    for (const torch::Tensor& p : trained_) elements.push_back(p.numel());
    run.zero_partition = OwnedBytes(elements, run.zero_owners, group_.size());
    std::vector<torch::Tensor> owned;
    for (size_t i = 0; i < trained_.size(); ++i) {
      if (run.zero_owners[i] == group_.rank()) owned.push_back(trained_[i]);
    }
    return owned;
  }

  // Collective: the parameters each rank's optimizer really holds state
  // for (by position among the trained parameters), gathered; true when
  // together they are every trained parameter exactly once.
  bool ShardsCoverOnce() {
    std::string mine;
    for (const torch::Tensor& held : OptimizerStateOwners()) {
      for (size_t i = 0; i < trained_.size(); ++i) {
        if (trained_[i].is_same(held)) mine += std::to_string(i) + ",";
      }
    }
    std::vector<int> times(trained_.size(), 0);
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

  // Out of memory under --memory-limit (Note [Memory limit]): the rank
  // stops training and reports what it measured (the session attributes
  // whatever gradients and optimizer state exist when it finishes). False
  // for any other error.
  bool StoppedByLimit() {
    if (MemoryTracker::Get().out_of_memory().seq < 0) return false;
    if (ddp_ != nullptr) {
      session_.impl().run().buckets =
          static_cast<int64_t>(ddp_->bucket_count());
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
  RankRun Finish() {
    RankRun run = session_.impl().FinishRun();
    if (weight_casts_ != nullptr) {
      run.ownership_not_found += weight_casts_->missed();
      weight_casts_.reset();
    }
    return run;
  }

 private:
  // Note [Gradient accumulation]
  // train.grad_accum = K: each optimizer step runs K micro-batches (inputs,
  // forward, backward), then the optimizer and zero_grad once. Each
  // micro-batch's loss is divided by K, so the summed gradients are those
  // of the mean loss over the K micro-batches: for equal micro-batches, the
  // gradients of one pass over all their samples. Only the last backward
  // all-reduces (Note [No-sync micro-batches]); the ones before accumulate
  // into the gradients in place. Each micro-batch's batch, graph and
  // activations are freed before the next begins, so activations follow
  // the micro-batch and model state does not change with K. The step's
  // loss is the mean of the micro-batches' (unscaled) losses.
  double Train() {
    const int64_t micro_batches = config_.train.grad_accum;
    double loss_sum = 0;
    // The last micro-batch's batch and loss live on through the optimizer
    // step and zero_grad, as a step without accumulation keeps them; each
    // earlier one is freed before the next micro-batch begins.
    Batch batch;
    torch::Tensor loss;
    for (int64_t m = 1; m <= micro_batches; ++m) {
      batch = Batch{};
      loss = torch::Tensor();
      loss_sum += TrainMicroBatch(/*sync=*/m == micro_batches, batch, loss);
    }
    {
      auto mark = session_.OptimizerStep();
      optimizer_->step();
      const std::vector<int>& owners = session_.impl().run().zero_owners;
      if (!owners.empty()) {
        exchange_seconds_ = ddp_->ExchangeParameters(trained_, owners);
      }
    }
    {
      auto mark = session_.ZeroGrad();
      ZeroGrad(params_, config_.train.zero_grad_set_to_none);
    }
    return loss_sum / static_cast<double>(micro_batches);
  }

  // One micro-batch's inputs, forward and backward (with the Reducer's
  // all-reduces when `sync`) into the caller's `batch` and `loss`; returns
  // its loss, unscaled.
  double TrainMicroBatch(bool sync, Batch& batch, torch::Tensor& loss) {
    const int64_t micro_batches = config_.train.grad_accum;
    {
      auto mark = session_.Inputs();
      batch = model_->MakeBatch(session_.impl().run().micro_batch);
      if (device_.is_cuda()) {
        batch = {batch.input.to(device_), batch.target.to(device_)};
      }
      session_.TrackInputs({batch.input, batch.target});
    }
    double loss_value = 0;
    {
      auto mark = session_.Forward();
      ddp_->PrepareForward(sync);  // may rebuild the buckets (step 2)
      AutocastRegion region(device_.type(), autocast_);  // Note [Weight casts]
      loss = model_->Loss(batch);
      loss_value = loss.item<double>();
      if (micro_batches > 1) loss = loss / static_cast<double>(micro_batches);
    }
    {
      auto mark = session_.Backward();
      if (sync) ddp_->PrepareForBackward();
      loss.backward();  // when `sync`, the Reducer all-reduces each bucket
    }
    return loss_value;
  }

  const RunConfig& config_;
  ProcessGroup& group_;
  Session& session_;
  const torch::Device device_;
  // bf16-autocast: the forward's autocast switches (Note [Weight casts]).
  const AutocastState autocast_;
  double exchange_seconds_ = 0;  // this step's (Note [Parameter exchange])
  std::optional<Session::PhaseScope> recompute_;
  std::vector<Session::NamedScope> scopes_;  // open, innermost last
  std::unique_ptr<TrainableModel> model_;
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> trained_;  // params_ that require grad
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
                int64_t memory_limit_bytes, int cuda_device, bool hook,
                const CaptureOutputs& outputs) {
  SessionOptions options;
  options.name = config.model;
  options.memory_limit_bytes = memory_limit_bytes;
  SessionSetup setup;
  setup.config = config;
  setup.outputs = outputs;
  setup.rank = group.rank();
  setup.world_size = group.size();
  setup.cuda_device = cuda_device;
  setup.hook = hook;
  Session session(std::make_unique<SessionImpl>(options, setup));
  RankTrainer trainer(config, group, session, cuda_device);
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
    if (MemoryTracker::Get().out_of_memory().seq < 0) trainer.Audit();
  } catch (const std::exception&) {
    // Out of memory before the first step (model or DDP set-up) is
    // reported like one inside a step.
    if (!trainer.StoppedByLimit()) {
      trainer.Abandon();
      throw;
    }
  }
  return trainer.Finish();
}

}  // namespace memprof
