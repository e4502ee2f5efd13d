#include "profiler/session/session_impl.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>

#include <ATen/Parallel.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

#include "profiler/base/effective_config.h"
#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"
#include "profiler/base/rank_env.h"
#include "profiler/capture/capture_file.h"
#include "profiler/capture/cpu_hook.h"
#include "profiler/capture/cuda_backend.h"
#include "profiler/capture/cuda_device.h"
#include "profiler/capture/cuda_replay.h"
#include "profiler/capture/memory_snapshot.h"
#include "profiler/session/git_sha.h"  // generated: cmake/memprofGitSha.cmake
#include "profiler/session/group_gather.h"
#include "profiler/session/program_meta.h"
#include "profiler/session/run_outputs.h"

namespace memprof {
namespace {

std::atomic<bool> g_session_exists{false};

// Note [Program ending]: where the live program session's ending goes, for
// the terminate handler; "" when there is none.
struct EndingTarget {
  std::string path;
  int64_t pid = 0;
  int64_t session_start_unix_us = 0;
};
EndingTarget g_ending;
std::terminate_handler g_terminate_before = nullptr;

// An exception's what() to its first line (a LibTorch error's goes on with
// its stack).
std::string FirstLine(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

void OnProgramTerminate() {
  if (!g_ending.path.empty()) {
    std::string why = "std::terminate() with no exception";
    if (const std::exception_ptr e = std::current_exception()) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        why = "an uncaught exception: " + FirstLine(x.what());
      } catch (...) {
        why = "an uncaught exception (not a std::exception)";
      }
    }
    WriteProgramEnding(g_ending.path, g_ending.pid,
                       g_ending.session_start_unix_us, why);
  }
  if (g_terminate_before != nullptr) g_terminate_before();
  std::abort();
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
  c.cpu_threads = run.device == "cpu" ? at::get_num_threads() : 0;
  c.config = run.config;
  return c;
}

std::string OutDirOf(const SessionOptions& options) {
  if (!options.out_dir.empty()) return options.out_dir;
  const char* env = std::getenv("MEMPROF_OUT");
  return env != nullptr && *env != '\0' ? env : "memprof-out";
}

// SessionOptions::memory_limit_bytes, or when it is 0 $MEMPROF_MEMORY_LIMIT
// (unset or empty: none); a value that is no size is the program's input
// error, named.
int64_t MemoryLimitOf(const SessionOptions& options) {
  if (options.memory_limit_bytes != 0) return options.memory_limit_bytes;
  const char* env = std::getenv("MEMPROF_MEMORY_LIMIT");
  if (env == nullptr || *env == '\0') return 0;
  const int64_t bytes = ParseByteSize(env);
  if (bytes < 1) {
    throw UsageError(std::string("memprof::Session: MEMPROF_MEMORY_LIMIT='") +
                     env + "' is not a memory size; set it to a size (" +
                     kByteSizeUnits + "), or unset it for no limit");
  }
  return bytes;
}

// The order of a step's phases (Note [Phase order] in session.h's terms:
// Inputs, Forward, Backward, OptimizerStep, ZeroGrad).
int OrderOf(Phase phase) {
  switch (phase) {
    case Phase::kInputs:
      return 0;
    case Phase::kForward:
      return 1;
    case Phase::kBackward:
      return 2;
    case Phase::kOptimizer:
      return 3;
    case Phase::kZeroGrad:
      return 4;
    default:
      return -1;
  }
}

// The API's name of a phase mark.
std::string MarkName(Phase phase) {
  switch (phase) {
    case Phase::kInputs:
      return "Inputs()";
    case Phase::kForward:
      return "Forward()";
    case Phase::kBackward:
      return "Backward()";
    case Phase::kOptimizer:
      return "OptimizerStep()";
    case Phase::kZeroGrad:
      return "ZeroGrad()";
    case Phase::kDdpInit:
      return "DataParallelSetUp()";
    default:
      return std::string(PhaseName(phase));
  }
}

Dtype RowDtypeOf(const torch::Tensor& t, const std::string& name) {
  switch (t.scalar_type()) {
    case torch::kFloat:
      return Dtype::kFloat32;
    case torch::kBFloat16:
      return Dtype::kBFloat16;
    case torch::kLong:
      return Dtype::kInt64;
    case torch::kBool:
      return Dtype::kBool;
    default:
      throw UsageError("memprof::Session: '" + name + "' is " +
                       std::string(c10::toString(t.scalar_type())) +
                       "; the prediction covers float32, bfloat16, int64 and "
                       "bool tensors: train in float32 or bfloat16");
  }
}

}  // namespace

bool SessionExists() { return g_session_exists.load(); }

SessionImpl::SessionImpl(SessionOptions options, SessionSetup setup)
    : options_(std::move(options)),
      setup_(std::move(setup)),
      tracker_(MemoryTracker::Get()) {
  if (g_session_exists.exchange(true)) {
    throw UsageError(
        "memprof::Session: a session already exists in this process; make "
        "one, first thing in main, and pass it to the code that marks the "
        "loop");
  }
  try {
    int local_rank = 0;
    if (setup_.rank >= 0) {
      run_.rank = setup_.rank;
      run_.world_size = setup_.world_size;
    } else {
      std::optional<RankTopology> topology;
      try {
        topology = TopologyFromEnvironment();
      } catch (const InputError& e) {
        // The launcher's variables are the program's input: its error, in
        // the API's terms.
        throw UsageError(std::string("memprof::Session: ") + e.what());
      }
      if (topology) {
        run_.rank = topology->rank;
        run_.world_size = topology->world_size;
        local_rank = topology->local_rank;
      }
    }
    options_.memory_limit_bytes = MemoryLimitOf(options_);
    if (options_.micro_batch < 0) {
      throw UsageError("memprof::SessionOptions::micro_batch is " +
                       std::to_string(options_.micro_batch) +
                       "; give the samples per rank per step, or 0 to take "
                       "it from the first tensor given to TrackInputs()");
    }
    run_.device = setup_.config ? setup_.config->train.device : options_.device;
    if (run_.device != "cpu" && run_.device != "cuda") {
      throw UsageError("memprof::SessionOptions::device is \"" + run_.device +
                       "\"; use \"cpu\" or \"cuda\"");
    }
    if (run_.device == "cuda" && !setup_.config) {
      const CudaDeviceStatus& cuda = ProbeCudaDevice();
      if (!cuda.available) {
        throw UsageError(
            "memprof::SessionOptions::device is \"cuda\", but there is no "
            "GPU to measure (" +
            cuda.status + "); use \"cpu\"");
      }
      setup_.cuda_device = local_rank % cuda.devices;
    }
    run_.backend = setup_.config ? DdpBackend(*setup_.config) : "gloo";
    if (run_.device == "cuda") {
      if (setup_.hook) {
        cuda_ = std::make_unique<CudaSession>(setup_.cuda_device,
                                              options_.memory_limit_bytes);
      } else {
        SelectCudaDevice(setup_.cuda_device);
      }
      run_.hooked = cuda_ != nullptr;
    } else {
      // Before any tensor of the program: every block must be seen.
      if (setup_.hook) InstallCpuHook();
      tracker_.SetMemoryLimit(options_.memory_limit_bytes);
      run_.hooked = CpuHookInstalled();
    }
    run_.micro_batch =
        setup_.config ? MicroBatch(*setup_.config) : options_.micro_batch;
    run_.config = setup_.config ? *setup_.config : ProgramConfig();
    run_.context = ContextOf(run_);
    if (setup_.config) {
      run_.prediction =
          Predict(*setup_.config, run_.rank, run_.context.cpu_threads);
    }
    CaptureOutputs outputs;
    if (setup_.outputs) {
      outputs = *setup_.outputs;
    } else {
      outputs.out_dir = OutDirOf(options_);
      try {
        std::filesystem::create_directories(outputs.out_dir);
      } catch (const std::filesystem::filesystem_error& e) {
        throw UsageError(
            "memprof::Session: cannot make the reports' directory '" +
            outputs.out_dir + "' (" + e.code().message() + ", from " +
            (options_.out_dir.empty() ? "$MEMPROF_OUT or the default"
                                      : "SessionOptions::out_dir") +
            "); give a directory this process can write");
      }
      setup_.outputs = outputs;
    }
    tracker_.BeginSession(
        outputs.out_dir.empty() ? "" : CapturePath(outputs.out_dir, run_.rank),
        CaptureMeta());
    // Note [Program meta]: none of an earlier session is taken for this
    // one's.
    if (!outputs.out_dir.empty()) {
      std::error_code ignored;
      const std::string capture = CapturePath(outputs.out_dir, run_.rank);
      std::filesystem::remove(ProgramMetaPath(capture), ignored);
      std::filesystem::remove(ProgramEndingPath(capture), ignored);
      if (is_program()) {  // Note [Program ending]
        g_ending = {ProgramEndingPath(capture), run_.context.pid,
                    tracker_.session_begin_unix_us()};
        if (std::get_terminate() != &OnProgramTerminate) {
          g_terminate_before = std::set_terminate(&OnProgramTerminate);
        }
      }
    }
    Mark(Phase::kModelInit);
  } catch (...) {
    g_session_exists = false;
    throw;
  }
}

SessionImpl::~SessionImpl() {
  if (!finished_ && !g_ending.path.empty()) {
    // Note [Program ending]: destroyed by an exception's unwinding (the
    // session finishes itself otherwise).
    WriteProgramEnding(
        g_ending.path, g_ending.pid, g_ending.session_start_unix_us,
        std::string("left by an exception before Finish()") +
            (tracker_.out_of_memory().seq >= 0
                 ? ", after its memory limit refused an allocation"
                 : ""));
  }
  g_ending = {};
  if (!finished_) {
    tracker_.SetMemoryLimit(0);
    // A program's session abandoned by an error: stop recording. memprof's
    // own rank leaves its capture as a killed rank's is (Note [Post-mortem]),
    // for the launcher to recover without delaying the rank's exit.
    if (!setup_.config) {
      try {
        tracker_.EndSession();
      } catch (const std::exception&) {
      }
    }
  }
  g_session_exists = false;
}

bool SessionImpl::is_program() const { return !setup_.config; }

std::string SessionImpl::CaptureMeta() const {
  return nlohmann::ordered_json{{"context", ContextJson(run_.context)},
                                {"micro_batch", run_.micro_batch}}
      .dump();
}

int64_t SessionImpl::Mark(Phase phase) {
  const int64_t seq = tracker_.SetPhase(phase, in_step_ ? step_ : 0);
  if (cuda_ != nullptr) cuda_->Check(phase, in_step_ ? step_ : 0);
  return seq;
}

// Note [Tracked before the session]
// A tensor the program made before the session began was allocated
// without the hook: its bytes are in no figure, and ownership cannot find
// it. For a program that is a mistake with one remedy (make the session
// first), so it is refused by name; memprof's own trainer cannot make it
// and keeps counting misses in the report instead.
void SessionImpl::ResolveOrRefuse(const std::vector<torch::Tensor>& tensors,
                                  const std::vector<std::string>& names,
                                  Category category, uint8_t flags,
                                  const char* what) {
  if (!run_.hooked) return;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const int64_t not_found = misses_.not_found;
    ResolveOwnership({tensors[i]}, category, misses_, flags);
    if (misses_.not_found == not_found || setup_.config) continue;
    throw UsageError(
        std::string("memprof::Session::Track: ") + what + " '" + names[i] +
        "' was allocated before the session began, so its bytes are in no "
        "figure: make it after the session begins (a program's "
        "memprof::Session first thing in main, before any tensor; in a "
        "test, the model inside the MemoryLimit's or LeakCheck's scope)");
  }
}

// Note [Tracked once]
// A tensor reached twice (a tied weight registered under a second name, a
// model tracked twice, a submodule tracked after its model, TrackParameters
// of a parameter already tracked) is tracked once, under the first name it
// was reached by, as PyTorch's named_parameters() counts a shared parameter
// once: otherwise its bytes would be predicted twice and measured once.
bool SessionImpl::FirstSight(const torch::Tensor& tensor) {
  return tracked_.insert(tensor.unsafeGetTensorImpl()).second;
}

void SessionImpl::TrackModule(const torch::nn::Module& model) {
  std::vector<torch::Tensor> params, buffers;
  std::vector<std::string> param_names, buffer_names;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    if (!FirstSight(item.value())) continue;
    param_names.push_back(item.key());
    params.push_back(item.value());
  }
  for (const auto& item : model.named_buffers(/*recurse=*/true)) {
    if (!item.value().defined() || !FirstSight(item.value())) continue;
    buffer_names.push_back(item.key());
    buffers.push_back(item.value());
  }
  ResolveOrRefuse(params, param_names, Category::kWeights, 0, "parameter");
  ResolveOrRefuse(buffers, buffer_names, Category::kWeights, kFlagBuffer,
                  "buffer");
  params_.insert(params_.end(), params.begin(), params.end());
  param_names_.insert(param_names_.end(), param_names.begin(),
                      param_names.end());
  buffers_.insert(buffers_.end(), buffers.begin(), buffers.end());
  buffer_names_.insert(buffer_names_.end(), buffer_names.begin(),
                       buffer_names.end());
  if (cuda_ != nullptr) cuda_->Moment("model");
  meta_changed_ = true;
  KeepProgramMeta();
}

void SessionImpl::TrackParameters(const std::vector<torch::Tensor>& parameters,
                                  const std::string& name_prefix) {
  std::vector<torch::Tensor> params;
  std::vector<std::string> names;
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (!parameters[i].defined()) {
      throw UsageError("memprof::Session::TrackParameters: '" + name_prefix +
                       "." + std::to_string(i) +
                       "' is an undefined tensor; give defined parameters");
    }
    if (!FirstSight(parameters[i])) continue;
    params.push_back(parameters[i]);
    names.push_back(name_prefix + "." + std::to_string(i));
  }
  ResolveOrRefuse(params, names, Category::kWeights, 0, "parameter");
  params_.insert(params_.end(), params.begin(), params.end());
  param_names_.insert(param_names_.end(), names.begin(), names.end());
  meta_changed_ = true;
  KeepProgramMeta();
}

void SessionImpl::TrackOptimizer(torch::optim::Optimizer& optimizer) {
  if (optimizer_ != nullptr) {
    throw UsageError(
        "memprof::Session::Track(optimizer): an optimizer is already "
        "tracked; a session follows one optimizer");
  }
  const auto& options = optimizer.param_groups().at(0).options();
  if (auto* adam = dynamic_cast<const torch::optim::AdamOptions*>(&options)) {
    if (adam->amsgrad()) {
      throw UsageError(
          "memprof::Session::Track(optimizer): Adam with amsgrad keeps a "
          "third buffer per parameter, which the prediction does not "
          "count; track Adam or AdamW without amsgrad");
    }
    optimizer_name_ = "adam";
  } else if (auto* adamw =
                 dynamic_cast<const torch::optim::AdamWOptions*>(&options)) {
    if (adamw->amsgrad()) {
      throw UsageError(
          "memprof::Session::Track(optimizer): AdamW with amsgrad keeps a "
          "third buffer per parameter, which the prediction does not "
          "count; track Adam or AdamW without amsgrad");
    }
    optimizer_name_ = "adamw";
  } else if (auto* sgd =
                 dynamic_cast<const torch::optim::SGDOptions*>(&options)) {
    optimizer_name_ = "sgd";
    momentum_ = sgd->momentum();
  } else {
    throw UsageError(
        "memprof::Session::Track(optimizer): memprof reads the state of "
        "torch::optim::Adam, AdamW and SGD only, and this optimizer is none "
        "of them; use one of those, or leave the optimizer untracked (its "
        "state then counts as unattributed)");
  }
  // Every parameter it steps must be tracked: the prediction of its state
  // comes from the tracked parameters.
  for (const auto& group : optimizer.param_groups()) {
    for (const torch::Tensor& p : group.params()) {
      const bool tracked =
          std::any_of(params_.begin(), params_.end(),
                      [&p](const torch::Tensor& q) { return q.is_same(p); });
      if (!tracked) {
        throw UsageError(
            "memprof::Session::Track(optimizer): it steps a parameter the "
            "session does not track; call Track(model) (or "
            "TrackParameters) for every parameter before "
            "Track(optimizer)");
      }
    }
  }
  optimizer_ = &optimizer;
  lr_ = options.get_lr();
  meta_changed_ = true;
  KeepProgramMeta();
}

void SessionImpl::TrackGroup(
    const c10::intrusive_ptr<c10d::ProcessGroup>& group) {
  if (group->getSize() != run_.world_size || group->getRank() != run_.rank) {
    throw UsageError(
        "memprof::Session::Track(group): the group is rank " +
        std::to_string(group->getRank()) + " of " +
        std::to_string(group->getSize()) +
        ", but the launcher's RANK and "
        "WORLD_SIZE say rank " +
        std::to_string(run_.rank) + " of " + std::to_string(run_.world_size) +
        "; track the group of the whole job, made from those variables");
  }
  group_ = group;
  meta_changed_ = true;
  KeepProgramMeta();
}

void SessionImpl::TrackReducer(c10d::Reducer& reducer,
                               const ReducerOptions& options) {
  reducer_ = &reducer;
  reducer_options_ = options;
  ResolveBuckets();
  meta_changed_ = true;
  KeepProgramMeta();
}

// Note [Rebuilt buckets]
// The Reducer allocates its buckets when it is built and again when it
// rebuilds them in gradient-ready order (in the second step's forward, in
// prepare_for_forward; a new bucket can take a freed one's address). Their
// storages are resolved when tracked and at the end of every forward: a
// bucket newly resolved there is a rebuilt one, and its step is one-time
// work, left out of the steady state like step 1.
void SessionImpl::ResolveBuckets() {
  if (reducer_ == nullptr || !run_.hooked) return;
  const Category category = reducer_options_.gradient_as_bucket_view
                                ? Category::kGradients
                                : Category::kDdpBuckets;
  std::vector<torch::Tensor> buffers;
  for (const c10d::GradBucket& bucket :
       reducer_->get_grad_buckets(/*return_zero_tensors=*/false)) {
    buffers.push_back(bucket.getBuffer());
  }
  const bool rebuilt =
      ResolveOwnership(buffers, category, misses_, kFlagBucket) > 0;
  if (rebuilt && step_ > 0) last_one_time_step_ = step_;
  run_.buckets = static_cast<int64_t>(buffers.size());
}

void SessionImpl::TrackInputs(const std::vector<torch::Tensor>& batch) {
  ResolveOwnership(batch, Category::kInputs, misses_);
  if (run_.micro_batch == 0 && !batch.empty() && batch[0].defined() &&
      batch[0].dim() > 0) {
    run_.micro_batch = batch[0].size(0);
    meta_changed_ = true;
    KeepProgramMeta();
  }
}

void SessionImpl::BeginStep() {
  if (finished_) {
    throw UsageError("memprof::Session::Step(): the session has finished");
  }
  if (in_step_) {
    throw UsageError("memprof::Session::Step(): step " + std::to_string(step_) +
                     "'s scope is still open; end it before the next step "
                     "(keep each step's scope inside the loop's body)");
  }
  if (open_phase_ != Phase::kIdle) {
    throw UsageError("memprof::Session::Step(): " + MarkName(open_phase_) +
                     "'s scope is still open; end it first");
  }
  ++step_;
  KeepProgramMeta();
  in_step_ = true;
  phases_seen_ = 0;
  micro_batches_ = 0;
  loss_ = 0;
  recompute_seconds_ = 0;
  // Memprof's and the allocator's peaks restart with the steady state
  // (one-time work: step 1, and the bucket rebuild in step 2).
  if (cuda_ != nullptr && step_ == 3) cuda_->StartSteadyState();
  step_start_ = std::chrono::steady_clock::now();
}

void SessionImpl::EndStep(bool unwinding) {
  if (finished_) return;  // Finish() after an out-of-memory error inside it
  StepRecord record;
  record.seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - step_start_)
                       .count();
  record.loss = loss_;
  record.recompute_seconds = recompute_seconds_;
  record.micro_batches = std::max(micro_batches_, 1);
  record.completed = !unwinding;
  in_step_ = false;
  run_.step_records.push_back(record);
  if (unwinding) return;
  const bool forward = phases_seen_ & (1u << OrderOf(Phase::kForward));
  const bool backward = phases_seen_ & (1u << OrderOf(Phase::kBackward));
  if (micro_batches_ == 0 || (phases_seen_ != 0 && !forward)) {
    throw UsageError(
        "memprof::Session: step " + std::to_string(step_) +
        (micro_batches_ == 0
             ? std::string(" ended without its Forward() and Backward() marks")
             : " ended with micro-batch " + std::to_string(micro_batches_ + 1) +
                   " begun (Inputs()) but without its Forward() and "
                   "Backward() marks") +
        ", so memprof cannot tell activations from temporaries; open "
        "`auto mark = session.Forward();` around the forward pass and "
        "session.Backward() around loss.backward()");
  }
  if (!backward) {
    throw UsageError(
        MissingBackward("step " + std::to_string(step_) + " ended"));
  }
  if (cuda_ != nullptr && step_ == 1) cuda_->Moment("step_1");
}

void SessionImpl::SetLoss(double loss) { loss_ = loss; }

std::string SessionImpl::MissingBackward(const std::string& what) const {
  return "memprof::Session: " + what + " after micro-batch " +
         std::to_string(micro_batches_) +
         "'s Forward() without its Backward(): every forward pass is "
         "followed by its own Backward() mark around loss.backward(), before "
         "the step's OptimizerStep()";
}

void SessionImpl::BeginPhase(Phase phase) {
  const bool in_loop = OrderOf(phase) >= 0;
  if (finished_) {
    throw UsageError("memprof::Session::" + MarkName(phase) +
                     ": the session has finished");
  }
  if (in_loop && !in_step_) {
    throw UsageError("memprof::Session::" + MarkName(phase) +
                     " outside a step: open `auto step = session.Step();` "
                     "at the top of the loop's body first");
  }
  if (!in_loop && in_step_) {
    throw UsageError("memprof::Session::" + MarkName(phase) + " inside step " +
                     std::to_string(step_) +
                     ": set-up comes before the first step");
  }
  if (open_phase_ != Phase::kIdle) {
    throw UsageError("memprof::Session::" + MarkName(phase) + " while " +
                     MarkName(open_phase_) +
                     "'s scope is still open: phases do not nest; end the "
                     "first scope (close its braces) before opening the next");
  }
  // Note [Micro-batches in a step]
  // Gradient accumulation runs inputs, forward and backward once per
  // micro-batch before the step's one OptimizerStep and ZeroGrad: an
  // Inputs() or Forward() after a Backward() of the same step, before its
  // OptimizerStep(), begins the next micro-batch. Each forward's
  // activations are resolved at its own end by the phase rule, so a
  // micro-batch's activations are its own; the analysis numbers the
  // micro-batches from the same order of marks (Note [Micro-batch index]).
  const uint32_t after_backward = phases_seen_ >> OrderOf(Phase::kBackward);
  const bool next_micro_batch =
      (phase == Phase::kInputs || phase == Phase::kForward) &&
      after_backward == 1;  // Backward seen, OptimizerStep and ZeroGrad not
  if (next_micro_batch) phases_seen_ = 0;
  const bool backward_without_forward =
      phase == Phase::kBackward &&
      (phases_seen_ & (1u << OrderOf(Phase::kForward))) == 0;
  const bool forward_without_backward =
      (phases_seen_ & (1u << OrderOf(Phase::kForward))) != 0 &&
      (phases_seen_ & (1u << OrderOf(Phase::kBackward))) == 0;
  if ((phase == Phase::kOptimizer || phase == Phase::kZeroGrad) &&
      forward_without_backward) {
    throw UsageError(
        MissingBackward(MarkName(phase) + " in step " + std::to_string(step_)));
  }
  if (in_loop &&
      ((phases_seen_ >> OrderOf(phase)) != 0 || backward_without_forward)) {
    throw UsageError("memprof::Session::" + MarkName(phase) + " in step " +
                     std::to_string(step_) +
                     " out of order (after a later phase, twice, or a "
                     "Backward() without its Forward()): a step's phases come "
                     "in the order Inputs, Forward, Backward (these three "
                     "once per micro-batch when gradients are accumulated), "
                     "OptimizerStep, ZeroGrad, each at most once");
  }
  const int64_t seq = Mark(phase);
  if (phase == Phase::kForward) {
    forward_begin_ = seq;
    ++micro_batches_;
  }
  open_phase_ = phase;
  if (in_loop) phases_seen_ |= 1u << OrderOf(phase);
}

void SessionImpl::EndPhase(Phase phase, bool unwinding) {
  if (finished_) return;  // Finish() after an out-of-memory error inside it
  if (open_phase_ != phase) {
    if (unwinding) return;
    throw UsageError("memprof::Session: " + MarkName(phase) +
                     "'s scope ended after " + MarkName(open_phase_) +
                     " began: end the scopes in the order they were opened");
  }
  open_phase_ = Phase::kIdle;
  if (unwinding) return;
  switch (phase) {
    case Phase::kForward:
      // Ownership first (a rebuilt bucket is the Reducer's), then the
      // phase rule: what forward made and still holds is activations.
      ResolveBuckets();
      tracker_.ResolvePendingSince(forward_begin_, Category::kActivations);
      break;
    case Phase::kBackward:
      ResolveOwnership(Gradients(params_), Category::kGradients, misses_);
      break;
    case Phase::kOptimizer:
      if (optimizer_ != nullptr) {
        ResolveOwnership(OptimizerStateTensors(*optimizer_),
                         Category::kOptimizerState, misses_);
        lr_ = optimizer_->param_groups().at(0).options().get_lr();
      }
      break;
    case Phase::kDdpInit:
      ResolveBuckets();
      if (cuda_ != nullptr) cuda_->Moment("process_group");
      break;
    default:
      break;
  }
}

// Note [Recomputed activations]
// With activation checkpointing a block's saved tensors are made twice:
// in forward without autograd (freed at once: temporaries) and in
// backward, when the block reruns its forward just before its own
// backward. What the rerun leaves live is what the block's backward needs,
// the same tensors a plain forward saves: they are activations, resolved
// as the forward's are, by the phase rule from the rerun's first seq; they
// die during the block's backward. The rerun runs on the thread running
// backward (on the CPU, the loop's thread) while the loop waits in
// backward(), so these marks never overlap the loop's own. Its time is the
// step's recompute_seconds.
void SessionImpl::BeginRecompute() {
  if (open_phase_ != Phase::kBackward || in_recompute_) {
    throw UsageError(
        "memprof::Session::Recompute() outside Backward(): a checkpointed "
        "block reruns its forward inside the backward pass; open "
        "Recompute() there, once per rerun");
  }
  in_recompute_ = true;
  recompute_from_seq_ = tracker_.NextSeq();
  recompute_start_ = std::chrono::steady_clock::now();
}

void SessionImpl::EndRecompute(bool unwinding) {
  in_recompute_ = false;
  if (finished_ || unwinding) return;
  tracker_.ResolvePendingSince(recompute_from_seq_, Category::kActivations);
  recompute_seconds_ += std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - recompute_start_)
                            .count();
}

size_t SessionImpl::EnterScope(const std::string& name) {
  if (name.empty()) {
    throw UsageError("memprof::Session::Scope(\"\"): give the scope a name");
  }
  if (finished_) {
    throw UsageError("memprof::Session::Scope(\"" + name +
                     "\"): the session has finished");
  }
  scopes_.push_back(name);
  tracker_.EnterScope(name);
  return scopes_.size();
}

// A scope's end is recorded either way; ending one that is not the
// innermost (a scope object moved out and destroyed early) would charge
// the rest of the outer scope's blocks to the inner one, so it is refused
// unless an exception is unwinding them anyway.
void SessionImpl::ExitScope(size_t depth, bool unwinding) {
  if (finished_ || scopes_.empty()) return;
  if (depth != scopes_.size() && !unwinding) {
    throw UsageError("memprof::Session: Scope(\"" + scopes_[depth - 1] +
                     "\") ended while Scope(\"" + scopes_.back() +
                     "\"), opened inside it, is still open: end named "
                     "scopes innermost first (close the inner one's braces "
                     "first)");
  }
  scopes_.pop_back();
  tracker_.ExitScope();
}

StepRecord& SessionImpl::LastStep() {
  if (run_.step_records.empty()) {
    throw std::logic_error("SessionImpl::LastStep before any step");
  }
  return run_.step_records.back();
}

// After an out-of-memory error (Note [Memory limit]): whatever gradients
// and optimizer state exist are attributed as such.
void SessionImpl::ResolveModelState() {
  ResolveOwnership(Gradients(params_), Category::kGradients, misses_);
  if (optimizer_ != nullptr && !program_objects_gone_) {
    ResolveOwnership(OptimizerStateTensors(*optimizer_),
                     Category::kOptimizerState, misses_);
  }
}

RunConfig SessionImpl::ProgramConfig() const {
  RunConfig c;
  c.model = "program";
  c.program.name = options_.name;
  c.train.micro_batch = run_.micro_batch;
  // Note [Micro-batches in a step]: the most micro-batches a step ran.
  for (const StepRecord& record : run_.step_records) {
    c.train.grad_accum =
        std::max<int64_t>(c.train.grad_accum, record.micro_batches);
  }
  c.train.global_batch =
      run_.micro_batch * run_.world_size * c.train.grad_accum;
  c.train.steps = step_;
  c.train.optimizer = optimizer_name_.empty() ? "none" : optimizer_name_;
  c.train.momentum = momentum_;
  c.train.lr = lr_;
  const bool bf16 =
      !params_.empty() &&
      std::all_of(params_.begin(), params_.end(), [](const torch::Tensor& p) {
        return p.scalar_type() == torch::kBFloat16;
      });
  c.train.dtype = bf16 ? "bfloat16" : "float32";
  c.train.device = run_.device;
  c.ddp.world_size = run_.world_size;
  c.ddp.bucket_cap_mb = static_cast<double>(reducer_options_.bucket_cap_bytes) /
                        (1024.0 * 1024.0);
  c.ddp.gradient_as_bucket_view = reducer_options_.gradient_as_bucket_view;
  c.ddp.backend = run_.backend;
  c.source = "the program's own loop (memprof::Session)";
  // Where each value came from, in the API's terms.
  for (const ConfigEntry& entry : EffectiveConfig(c)) {
    const std::string& k = entry.key;
    std::string from = "not used by a program";
    if (k == "model") {
      from = "memprof::Session (the program's own model)";
    } else if (k == "program.name") {
      from = "SessionOptions::name";
    } else if (k == "train.optimizer" || k == "train.lr" ||
               k == "train.momentum") {
      from =
          optimizer_ != nullptr ? "Track(optimizer)" : "no optimizer tracked";
    } else if (k == "train.dtype") {
      from = "the tracked parameters";
    } else if (k == "train.micro_batch" || k == "train.global_batch") {
      from = options_.micro_batch > 0 ? "SessionOptions::micro_batch"
                                      : "TrackInputs (first dimension)";
    } else if (k == "train.grad_accum") {
      from = "Forward() marks per Step()";
    } else if (k == "train.steps") {
      from = "Step()";
    } else if (k == "train.device") {
      from = "memprof::Session";
    } else if (k == "ddp.world_size") {
      from = run_.world_size > 1 ? "WORLD_SIZE" : "no launcher";
    } else if (k == "ddp.bucket_cap_mb" || k == "ddp.gradient_as_bucket_view") {
      from = reducer_ != nullptr ? "Track(reducer)" : "no Reducer tracked";
    } else if (k == "ddp.backend") {
      from = group_ ? "Track(group)" : "no group tracked";
    }
    c.origins[k] = from;
  }
  return c;
}

// The tracked parameters and buffers, one size-table row each, a parameter
// that does not require grad frozen; PredictProgram predicts from them.
SizeTable SessionImpl::TrackedTable() const {
  SizeTable table;
  table.symbols = "the program's tracked parameters and buffers";
  for (size_t i = 0; i < params_.size(); ++i) {
    table.Add(param_names_[i], RowKind::kParameter, params_[i].sizes().vec(),
              "", RowDtypeOf(params_[i], param_names_[i]));
    // No gradient, optimizer state or bucket space (Note [Frozen
    // parameters]).
    table.rows.back().frozen = !params_[i].requires_grad();
  }
  for (size_t i = 0; i < buffers_.size(); ++i) {
    table.Add(buffer_names_[i], RowKind::kBuffer, buffers_[i].sizes().vec(), "",
              RowDtypeOf(buffers_[i], buffer_names_[i]));
  }
  return table;
}

Prediction SessionImpl::PredictRun() const {
  return PredictProgram(run_.config, TrackedTable(), run_.micro_batch,
                        run_.rank, reducer_ != nullptr);
}

void SessionImpl::KeepProgramMeta() {
  if (!meta_changed_ || step_ == 0 || !is_program() ||
      setup_.outputs->out_dir.empty()) {
    return;
  }
  meta_changed_ = false;
  ProgramMeta meta;
  meta.context = run_.context;
  meta.context.config = ProgramConfig();
  meta.context.session_start_unix_us = tracker_.session_begin_unix_us();
  meta.micro_batch = run_.micro_batch;
  meta.table = TrackedTable();
  meta.reducer = reducer_ != nullptr;
  try {
    WriteProgramMeta(
        meta, ProgramMetaPath(CapturePath(setup_.outputs->out_dir, run_.rank)));
  } catch (const std::runtime_error&) {
    // The capture is still whole: a post-mortem recovers the rank, without
    // its predictions; Finish() writes them in the report.
  }
}

RankRun SessionImpl::FinishRun() {
  if (finished_) {
    throw UsageError("memprof::Session::Finish(): called twice");
  }
  finished_ = true;
  g_ending = {};  // Note [Program ending]: nothing left to explain
  if (tracker_.out_of_memory().seq >= 0) ResolveModelState();
  Mark(Phase::kIdle);
  run_.parameters = 0;
  run_.trained_parameters = 0;
  for (const torch::Tensor& p : params_) {
    run_.parameters += p.numel();
    if (p.requires_grad()) run_.trained_parameters += p.numel();
  }
  if (!setup_.config) {
    run_.config = ProgramConfig();
    run_.context.config = run_.config;
    run_.prediction = PredictRun();
  }
  if (cuda_ != nullptr && step_ > 1)
    cuda_->Moment("step_" + std::to_string(step_));
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
  const CaptureOutputs& outputs = *setup_.outputs;
  if (!outputs.out_dir.empty()) {
    const bool pickle = outputs.snapshot_format == DocumentFormat::kPickle;
    snapshot.emplace(outputs.out_dir + "/snapshot-" +
                         std::to_string(run_.rank) +
                         (pickle ? ".pickle" : ".json"),
                     outputs.snapshot_format, run_.rank, run_.capture.begin_seq,
                     cuda_ != nullptr ? &cuda_segments : nullptr);
    sinks.push_back(&*snapshot);
  }
  // Note [Late bucket frees]: the analysis also waits for the step of the
  // last freed bucket buffer.
  run_.analysis = Analyze(
      run_.capture, AnalysisOptions{last_one_time_step_, outputs.keep}, sinks);
  if (snapshot) snapshot->Finish(run_.analysis.end_seq);
  run_.analysis_seconds = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - analysis_start)
                              .count();
  if (cuda_ == nullptr) run_.cuda_replay = replay.Result();
  run_.ownership_not_found = misses_.not_found;
  run_.ownership_conflicts = misses_.conflict;
  return std::move(run_);
}

Capture SessionImpl::EndCapture() {
  if (finished_) {
    throw UsageError("memprof::Session::Finish(): called twice");
  }
  finished_ = true;
  g_ending = {};  // Note [Program ending]: nothing left to explain
  Mark(Phase::kIdle);
  Capture capture = tracker_.EndSession();
  tracker_.SetMemoryLimit(0);
  return capture;
}

void SessionImpl::Finish() {
  // After the loop; an out-of-memory error caught inside a step leaves
  // its scopes open, and Finish() then reports where it happened.
  if (!finished_ && tracker_.out_of_memory().seq < 0) {
    const std::string where =
        open_phase_ != Phase::kIdle ? MarkName(open_phase_) + "'s scope"
        : in_step_         ? "step " + std::to_string(step_) + "'s scope"
        : !scopes_.empty() ? "Scope(\"" + scopes_.back() + "\")"
                           : "";
    if (!where.empty()) {
      throw UsageError("memprof::Session::Finish() while " + where +
                       " is still open: the step would be reported "
                       "incomplete; end it first (Finish() comes after the "
                       "loop)");
    }
    if (!finished_ && step_ == 0) {
      throw UsageError(
          "memprof::Session::Finish() before any Step(): a run without a "
          "step has nothing to report; mark each training step with "
          "'auto step = session.Step();' and its phases inside it");
    }
  }
  const std::string out_dir = setup_.outputs->out_dir;
  RankRun run = FinishRun();
  RunOutputOptions output;
  output.out_dir = out_dir;
  output.quiet = options_.quiet;
  if (group_) {
    c10::intrusive_ptr<c10d::ProcessGroup> group = group_;
    output.all_gather = [group](const std::string& value) {
      return AllGatherStrings(*group, value);
    };
  }
  try {
    WriteRunOutputs(run, output);
  } catch (const RunFailure& e) {
    // Out of memory: the reports are written and say where; the program
    // has the error it caught.
    if (!run.RanOutOfMemory()) throw;
    std::fprintf(stderr, "memprof: %s\n", e.what());
  }
}

}  // namespace memprof
