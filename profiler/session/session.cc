// memprof::Session, the public API (<memprof/memprof.h>): thin scopes over
// SessionImpl. Note [Scopes while unwinding]: a scope left by an exception
// (an out-of-memory error, say) records its end but checks and resolves
// nothing, and never throws: the exception goes on to the program, and
// Finish() writes what was measured up to it.
#include <cstdio>
#include <exception>

#include <memprof/memprof.h>

#include "profiler/session/session_impl.h"

namespace memprof {
namespace {

// The scope's end was reached by an exception's unwinding.
bool Unwinding() { return std::uncaught_exceptions() > 0; }

}  // namespace

Session::Session(SessionOptions options)
    : impl_(std::make_unique<SessionImpl>(std::move(options), SessionSetup{})) {
}

Session::Session(std::unique_ptr<SessionImpl> impl) : impl_(std::move(impl)) {}

Session::~Session() {
  if (impl_ == nullptr || impl_->finished()) return;
  if (Unwinding()) {
    if (!impl_->is_program()) return;
    std::fprintf(stderr,
                 "memprof: the session was left by an exception: no reports "
                 "written (catch it and call Finish() to write them, or "
                 "recover them from the capture with `memprof report --run "
                 "DIR`)\n");
    return;
  }
  try {
    impl_->ForgetProgramObjects();
    impl_->Finish();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memprof: %s\n", e.what());
  }
}

int Session::rank() const { return impl_->rank(); }
int Session::world_size() const { return impl_->world_size(); }

void Session::Track(const torch::nn::Module& model) {
  impl_->TrackModule(model);
}
void Session::TrackParameters(const std::vector<torch::Tensor>& parameters,
                              const std::string& name_prefix) {
  impl_->TrackParameters(parameters, name_prefix);
}
void Session::Track(torch::optim::Optimizer& optimizer) {
  impl_->TrackOptimizer(optimizer);
}
void Session::Track(const c10::intrusive_ptr<c10d::ProcessGroup>& group) {
  impl_->TrackGroup(group);
}
void Session::Track(c10d::Reducer& reducer, ReducerOptions options) {
  impl_->TrackReducer(reducer, options);
}
void Session::TrackInputs(const std::vector<torch::Tensor>& batch) {
  impl_->TrackInputs(batch);
}

Session::PhaseScope Session::DataParallelSetUp() {
  impl_->BeginPhase(Phase::kDdpInit);
  return PhaseScope(impl_.get(), static_cast<int>(Phase::kDdpInit));
}
Session::StepScope Session::Step() {
  impl_->BeginStep();
  return StepScope(impl_.get());
}
Session::PhaseScope Session::Inputs() {
  impl_->BeginPhase(Phase::kInputs);
  return PhaseScope(impl_.get(), static_cast<int>(Phase::kInputs));
}
Session::PhaseScope Session::Forward() {
  impl_->BeginPhase(Phase::kForward);
  return PhaseScope(impl_.get(), static_cast<int>(Phase::kForward));
}
Session::PhaseScope Session::Backward() {
  impl_->BeginPhase(Phase::kBackward);
  return PhaseScope(impl_.get(), static_cast<int>(Phase::kBackward));
}
Session::PhaseScope Session::OptimizerStep() {
  impl_->BeginPhase(Phase::kOptimizer);
  return PhaseScope(impl_.get(), static_cast<int>(Phase::kOptimizer));
}
Session::PhaseScope Session::ZeroGrad() {
  impl_->BeginPhase(Phase::kZeroGrad);
  return PhaseScope(impl_.get(), static_cast<int>(Phase::kZeroGrad));
}
// Recompute is no phase of the tracker's: -1 stands for it.
Session::PhaseScope Session::Recompute() {
  impl_->BeginRecompute();
  return PhaseScope(impl_.get(), -1);
}
Session::NamedScope Session::Scope(const std::string& name) {
  const size_t depth = impl_->EnterScope(name);
  return NamedScope(impl_.get(), depth);
}

void Session::Finish() { impl_->Finish(); }

SessionImpl& Session::impl() { return *impl_; }

Session::StepScope::StepScope(StepScope&& other) noexcept : impl_(other.impl_) {
  other.impl_ = nullptr;
}
Session::StepScope::~StepScope() noexcept(false) {
  if (impl_ != nullptr) impl_->EndStep(Unwinding());
}
void Session::StepScope::Loss(double loss) { impl_->SetLoss(loss); }

Session::PhaseScope::PhaseScope(PhaseScope&& other) noexcept
    : impl_(other.impl_), phase_(other.phase_) {
  other.impl_ = nullptr;
}
Session::PhaseScope::~PhaseScope() noexcept(false) {
  if (impl_ == nullptr) return;
  if (phase_ < 0) {
    impl_->EndRecompute(Unwinding());
  } else {
    impl_->EndPhase(static_cast<Phase>(phase_), Unwinding());
  }
}

Session::NamedScope::NamedScope(NamedScope&& other) noexcept
    : impl_(other.impl_), depth_(other.depth_) {
  other.impl_ = nullptr;
}
Session::NamedScope::~NamedScope() noexcept(false) {
  if (impl_ != nullptr) impl_->ExitScope(depth_, Unwinding());
}

}  // namespace memprof
