// The public API's implementation (<memprof/memprof.h>): one rank's
// session under the hook. It owns the tracker's session, resolves what the
// program tracked at the phase marks (Note [Block lifetimes]), keeps the
// step records, builds the prediction (from a size table for memprof's own
// models, from the tracked parameters for a program's) and ends in a
// RankRun, which run_outputs.h writes as `memprof profile` does.
//
// memprof's own trainer (profiler/train/trainer.cc) is its first client: it
// drives the same marks through memprof::Session and reads the same
// RankRun. What it adds is stated in SessionSetup: its model's config (the
// size table the prediction comes from) and the capture's outputs.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <memprof/memprof.h>
#include <torch/torch.h>

#include "profiler/base/category.h"
#include "profiler/base/document_writer.h"
#include "profiler/base/keep_steps.h"
#include "profiler/base/run_config.h"
#include "profiler/capture/memory_tracker.h"
#include "profiler/session/attribution.h"
#include "profiler/session/cuda_session.h"
#include "profiler/session/rank_run.h"

namespace memprof {

// Where the rank's capture file and snapshot go, and what they keep.
struct CaptureOutputs {
  // DIR/capture-<r>.bin and DIR/snapshot-<r>.json|pickle; "": an unnamed
  // temporary capture and no snapshot.
  std::string out_dir;
  DocumentFormat snapshot_format = DocumentFormat::kJson;
  KeepSteps keep;
};

// What memprof's own trainer tells a session beyond SessionOptions.
struct SessionSetup {
  // A built-in model's config: the prediction comes from its size table,
  // and it is the report's config. nullopt: a program's own model.
  std::optional<RunConfig> config;
  // nullopt: the capture and snapshot go to SessionOptions' directory.
  std::optional<CaptureOutputs> outputs;
  int rank = -1;  // -1: from the launcher's variables
  int world_size = -1;
  // train.device cuda: the GPU.
  int cuda_device = 0;
  // false (profile --no-hook): nothing measured, only the step times.
  bool hook = true;
};

class SessionImpl {
 public:
  SessionImpl(SessionOptions options, SessionSetup setup);
  ~SessionImpl();
  SessionImpl(const SessionImpl&) = delete;
  SessionImpl& operator=(const SessionImpl&) = delete;

  int rank() const { return run_.rank; }
  int world_size() const { return run_.world_size; }
  const SessionOptions& options() const { return options_; }

  void TrackModule(const torch::nn::Module& model);
  void TrackParameters(const std::vector<torch::Tensor>& parameters,
                       const std::string& name_prefix);
  void TrackOptimizer(torch::optim::Optimizer& optimizer);
  void TrackGroup(const c10::intrusive_ptr<c10d::ProcessGroup>& group);
  void TrackReducer(c10d::Reducer& reducer, const ReducerOptions& options);
  void TrackInputs(const std::vector<torch::Tensor>& batch);

  // The marks (session.h's scopes call them; `unwinding`: an exception is
  // leaving the scope, so nothing is checked or resolved).
  void BeginStep();
  void EndStep(bool unwinding);
  void SetLoss(double loss);
  void BeginPhase(Phase phase);
  void EndPhase(Phase phase, bool unwinding);
  void BeginRecompute();
  void EndRecompute(bool unwinding);
  // EnterScope returns the scope's depth (1: outermost), which ExitScope
  // checks: scopes end innermost first.
  size_t EnterScope(const std::string& name);
  void ExitScope(size_t depth, bool unwinding);

  // A phase with no scope: memprof's set-up marks (model_init, ddp_init,
  // audit); returns the seq it begins at.
  int64_t Mark(Phase phase);

  // The trainer's own figures for the step that just ended.
  StepRecord& LastStep();
  RankRun& run() { return run_; }
  // The tracked parameters, in tracking order.
  const std::vector<torch::Tensor>& parameters() const { return params_; }
  CudaSession* cuda() { return cuda_.get(); }
  bool finished() const { return finished_; }
  // The program's optimizer and Reducer may be gone: the session will not
  // touch them again (~Session, which runs after the program's objects
  // declared after it).
  void ForgetProgramObjects() { program_objects_gone_ = true; }
  // A program's session (not memprof's own trainer's).
  bool is_program() const;

  // Ends the session, analyses its capture and returns the rank's run
  // (after an out-of-memory error too: what was allocated by then is
  // attributed). Once only.
  RankRun FinishRun();
  // FinishRun, then the reports (run_outputs.h): collective through the
  // tracked group.
  void Finish();
  // Ends the session without a run or reports, handing its capture to the
  // caller (memprof::testing's checked scopes, <memprof/gtest.h>). Touches
  // nothing the program tracked, which may be gone by then. Once only, as
  // FinishRun.
  Capture EndCapture();

 private:
  struct Tracked;
  bool FirstSight(const torch::Tensor& tensor);  // Note [Tracked once]
  // The refusal of a micro-batch's Forward() left without its Backward().
  std::string MissingBackward(const std::string& what) const;
  void ResolveOrRefuse(const std::vector<torch::Tensor>& tensors,
                       const std::vector<std::string>& names, Category category,
                       uint8_t flags, const char* what);
  void ResolveBuckets();
  void ResolveModelState();
  RunConfig ProgramConfig() const;
  SizeTable TrackedTable() const;
  Prediction PredictRun() const;
  std::string CaptureMeta() const;
  // Note [Program meta]: a program's tracking, beside its capture, when it
  // changed (meta_changed_) and the loop has begun.
  void KeepProgramMeta();

  SessionOptions options_;
  SessionSetup setup_;
  MemoryTracker& tracker_;
  std::unique_ptr<CudaSession> cuda_;
  RankRun run_;
  OwnershipMisses misses_;
  bool finished_ = false;
  bool program_objects_gone_ = false;

  // What the program tracked.
  std::unordered_set<const c10::TensorImpl*> tracked_;
  std::vector<torch::Tensor> params_;
  std::vector<std::string> param_names_;
  std::vector<torch::Tensor> buffers_;
  std::vector<std::string> buffer_names_;
  torch::optim::Optimizer* optimizer_ = nullptr;
  std::string optimizer_name_;  // adam | adamw | sgd
  double momentum_ = 0;
  double lr_ = 0;  // the first group's, when tracked and after each step
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  c10d::Reducer* reducer_ = nullptr;
  ReducerOptions reducer_options_;
  bool meta_changed_ = true;

  // Where the loop is.
  int32_t step_ = 0;
  bool in_step_ = false;
  Phase open_phase_ = Phase::kIdle;  // kIdle: none open
  uint32_t phases_seen_ = 0;         // bits of Phase in this micro-batch
  int micro_batches_ = 0;            // Forward() marks in this step
  int64_t forward_begin_ = 0;
  bool in_recompute_ = false;
  int64_t recompute_from_seq_ = 0;
  std::chrono::steady_clock::time_point recompute_start_;
  double recompute_seconds_ = 0;
  std::chrono::steady_clock::time_point step_start_;
  double loss_ = 0;
  int32_t last_one_time_step_ = 1;
  std::vector<std::string> scopes_;  // open, innermost last
};

// Process-wide: true while a session exists (one per process).
bool SessionExists();

}  // namespace memprof
