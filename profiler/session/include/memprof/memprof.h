// memprof's public API: profile your own LibTorch training loop.
//
//   #include <memprof/memprof.h>
//
//   int main() {
//     memprof::Session session;           // first: before any tensor
//     Net net;                            // your model, your optimizer
//     torch::optim::AdamW optimizer(net->parameters(), 1e-3);
//     session.Track(*net);                // weights (parameters, buffers)
//     session.Track(optimizer);           // optimizer state
//     for (int i = 0; i < 5; ++i) {
//       auto step = session.Step();
//       torch::Tensor x, y, loss;
//       { auto mark = session.Inputs();   // the batch: `inputs`
//         std::tie(x, y) = NextBatch();
//         session.TrackInputs({x, y}); }
//       { auto mark = session.Forward();  // `activations`
//         loss = torch::nll_loss(net->forward(x), y); }
//       { auto mark = session.Backward(); loss.backward(); }
//       { auto mark = session.OptimizerStep(); optimizer.step(); }
//       { auto mark = session.ZeroGrad(); optimizer.zero_grad(); }
//     }
//     session.Finish();                   // the reports, as `memprof profile`
//   }
//
// One session per process, created before the program makes its first
// tensor: on the CPU it installs the allocator hook (blocks allocated
// before are not seen). It reads the launcher's RANK, WORLD_SIZE and
// LOCAL_RANK (torchrun, srun and mpirun set them; none: a job of one).
//
// What the session attributes: every block the program allocates while the
// session is open ends in one category. Ownership beats phase: the storage
// of a tracked parameter or buffer is `weights`, of a parameter's .grad
// `gradients`, of the optimizer's buffers `optimizer_state`, of the
// Reducer's buckets `ddp_buckets`, of the tensors given to Inputs()
// `inputs`. The rest follows the phase rule: allocated in forward and still
// live when backward begins, `activations`; otherwise `temporaries`.
// Anything else (a block allocated in no phase and still live at the end,
// owned by nothing tracked) is `unattributed`, shown so that it can be
// fixed: track what owns it.
//
// The marks are RAII scopes and cost nothing per allocation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <c10/util/intrusive_ptr.h>
#include <torch/torch.h>

namespace c10d {
class ProcessGroup;
class Reducer;
}  // namespace c10d

namespace memprof {

class SessionImpl;

// Misuse of the API: the message names what was wrong and the remedy.
class UsageError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

struct SessionOptions {
  // Where the reports go: rank-<r>.json on every rank, and on rank 0
  // summary.json, report.md, report.html, trace.json and the snapshot.
  // Ranks of one machine share it. "" (the default): $MEMPROF_OUT, or
  // "memprof-out" when that is not set.
  std::string out_dir;
  // The program's name in the reports (the `model` of `memprof profile`).
  std::string name = "program";
  // Samples per rank per step (the micro-batch), for the reports and
  // `memprof fit`; 0: the first dimension of the first tensor given to
  // TrackInputs().
  int64_t micro_batch = 0;
  // Emulates a device of this many bytes on the CPU (0: none): an
  // allocation that would go over it throws c10::OutOfMemoryError, as a
  // GPU's allocator would, and the reports say where it happened. 0 (the
  // default): $MEMPROF_MEMORY_LIMIT, a size ("2GiB", "512MiB", "80GB" or
  // bytes), when it is set (`memprof fit --measure` sets it, and
  // $MEMPROF_OUT, for the runs it makes); a value that is no size:
  // UsageError naming it.
  int64_t memory_limit_bytes = 0;
  // "cpu", or "cuda": the program trains on this rank's GPU (LOCAL_RANK's,
  // round-robin over the GPUs), and memprof measures through the CUDA
  // caching allocator's trace (attached here, before any CUDA tensor).
  std::string device = "cpu";
  // No tables on standard output.
  bool quiet = false;
};

// Which DDP settings the Reducer was built with (for the prediction of the
// buckets and the report): the cap of PyTorch's DDP in bytes, and whether
// the gradients are views into the buckets.
struct ReducerOptions {
  int64_t bucket_cap_bytes = 25 * 1024 * 1024;
  bool gradient_as_bucket_view = false;
};

class Session {
 public:
  explicit Session(SessionOptions options = {});
  // memprof's own trainer: a session with what it adds (session_impl.h).
  explicit Session(std::unique_ptr<SessionImpl> impl);
  // Finishes the session if Finish() was not called, writing the reports
  // (an error doing so is printed to standard error, not thrown). Left by
  // an exception, it writes no report: catch the exception
  // (c10::OutOfMemoryError, say) and call Finish() to have the reports say
  // where it happened, or recover them afterwards from the capture it
  // leaves with `memprof report --run DIR`.
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  int rank() const;
  int world_size() const;

  // --- What the program owns. Track it after making it. ---

  // Every parameter and buffer of `model` (recursively): `weights`, and
  // their .grad `gradients`. Named as named_parameters() names them. A
  // tensor already tracked (a tied weight, a module tracked twice) is
  // counted once, under its first name. One made before the session:
  // UsageError.
  void Track(const torch::nn::Module& model);
  // Parameters that are no module's; `name_prefix` names them "prefix.0"...
  void TrackParameters(const std::vector<torch::Tensor>& parameters,
                       const std::string& name_prefix = "param");
  // torch::optim::Adam, AdamW (without amsgrad) or SGD (with or without
  // momentum), after every parameter it steps is tracked: its buffers are
  // `optimizer_state`. Any other optimizer: UsageError.
  void Track(torch::optim::Optimizer& optimizer);
  // The program's own process group (DDP): rank 0 gathers every rank's
  // report through it. Without one, a job of several ranks writes each
  // rank's report and leaves the summary to `memprof report DIR`.
  void Track(const c10::intrusive_ptr<c10d::ProcessGroup>& group);
  // The program's c10d::Reducer: its bucket buffers `ddp_buckets` (the
  // gradients, with gradient_as_bucket_view).
  void Track(c10d::Reducer& reducer, ReducerOptions options = {});

  // Optional, before the first step: building the process group and the
  // Reducer (the report's ddp_init phase; otherwise model_init).
  class [[nodiscard]] PhaseScope;
  PhaseScope DataParallelSetUp();

  // --- The loop. ---

  class [[nodiscard]] StepScope;
  class [[nodiscard]] NamedScope;

  // One training step (one optimizer step): from here until the returned
  // scope ends. Inside, the phases in this order, each at most once:
  // Inputs, Forward, Backward, OptimizerStep, ZeroGrad (a step may leave
  // some out, but not Forward and Backward). Gradient accumulation repeats
  // Inputs, Forward and Backward once per micro-batch before the step's
  // OptimizerStep: an Inputs() or Forward() after a Backward() begins the
  // next micro-batch, and the reports number them (with DDP, arm the
  // Reducer, prepare_for_backward, for the last micro-batch's backward
  // only, as DistributedDataParallel.no_sync does).
  StepScope Step();
  // Making the batch; the tensors given to TrackInputs() are `inputs`.
  PhaseScope Inputs();
  void TrackInputs(const std::vector<torch::Tensor>& batch);
  // The forward pass and the loss. What it allocates and is still live
  // when the scope ends is `activations`.
  PhaseScope Forward();
  // loss.backward(): the tracked parameters' .grad are `gradients` when it
  // ends.
  PhaseScope Backward();
  // optimizer.step(): the optimizer's buffers are `optimizer_state` when it
  // ends.
  PhaseScope OptimizerStep();
  PhaseScope ZeroGrad();
  // Activation checkpointing: a block's forward rerun inside backward. What
  // it leaves live when the scope ends is `activations`.
  PhaseScope Recompute();
  // A named part of the model (for example "block.3"): the activations and
  // temporaries allocated inside are also counted to it, in the reports'
  // "By scope" tables. Scopes nest ("encoder" then "encoder.block.3") and
  // end innermost first (UsageError otherwise).
  NamedScope Scope(const std::string& name);

  // Ends the session and writes the reports (collective when a process
  // group is tracked: every rank calls it). Once only, after the loop:
  // inside a step, a phase or a named scope, or before any Step(), it is a
  // UsageError, unless an out-of-memory error was caught there.
  void Finish();

  // memprof's own layers (its trainer, <memprof/gtest.h>); not for programs.
  SessionImpl& impl();

 private:
  std::unique_ptr<SessionImpl> impl_;
};

class Session::StepScope {
 public:
  StepScope(StepScope&& other) noexcept;
  ~StepScope() noexcept(false);
  StepScope(const StepScope&) = delete;
  StepScope& operator=(const StepScope&) = delete;
  StepScope& operator=(StepScope&&) = delete;
  // The loss of this step, for the reports (optional).
  void Loss(double loss);

 private:
  friend class Session;
  explicit StepScope(SessionImpl* impl) : impl_(impl) {}
  SessionImpl* impl_;
};

class Session::PhaseScope {
 public:
  PhaseScope(PhaseScope&& other) noexcept;
  ~PhaseScope() noexcept(false);
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;
  PhaseScope& operator=(PhaseScope&&) = delete;

 private:
  friend class Session;
  PhaseScope(SessionImpl* impl, int phase) : impl_(impl), phase_(phase) {}
  SessionImpl* impl_;
  int phase_;
};

class Session::NamedScope {
 public:
  NamedScope(NamedScope&& other) noexcept;
  ~NamedScope() noexcept(false);
  NamedScope(const NamedScope&) = delete;
  NamedScope& operator=(const NamedScope&) = delete;
  NamedScope& operator=(NamedScope&&) = delete;

 private:
  friend class Session;
  NamedScope(SessionImpl* impl, size_t depth) : impl_(impl), depth_(depth) {}
  SessionImpl* impl_;
  size_t depth_;  // 1: the outermost open scope
};

}  // namespace memprof
