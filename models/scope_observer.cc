#include "models/scope_observer.h"

#include <atomic>

namespace memprof {
namespace {

std::atomic<ScopeObserver*> g_observer{nullptr};

}  // namespace

void SetScopeObserver(ScopeObserver* observer) { g_observer.store(observer); }

ModelScope::ModelScope(const std::string& name) : observer_(g_observer.load()) {
  if (observer_ != nullptr) observer_->EnterScope(name);
}

ModelScope::~ModelScope() {
  if (observer_ != nullptr) observer_->ExitScope();
}

}  // namespace memprof
