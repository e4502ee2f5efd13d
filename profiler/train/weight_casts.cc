#include "profiler/train/weight_casts.h"

#include <ATen/record_function.h>

#include <atomic>
#include <cstring>
#include <stdexcept>
#include <unordered_set>

#include "profiler/base/category.h"
#include "profiler/capture/memory_tracker.h"

namespace memprof {
namespace {

// The observed parameters' storages; read by the callbacks on any thread,
// written only while no observer is installed.
std::unordered_set<const void*> g_storages;
std::atomic<int64_t> g_missed{0};
std::atomic<bool> g_installed{false};

struct CastOfParameter : at::ObserverContext {};

bool SharesParameterStorage(const c10::IValue& value) {
  if (!value.isTensor()) return false;
  const at::Tensor& t = value.toTensor();
  return t.defined() && t.has_storage() &&
         g_storages.count(t.storage().data()) > 0;
}

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction& fn) {
  if (std::strcmp(fn.name(), "aten::_to_copy") != 0) return nullptr;
  const c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
  if (inputs.empty() || !SharesParameterStorage(inputs[0])) return nullptr;
  return std::make_unique<CastOfParameter>();
}

void OnEnd(const at::RecordFunction& fn, at::ObserverContext* context) {
  if (context == nullptr || fn.outputs().empty()) return;
  const c10::IValue& out = fn.outputs()[0];
  if (!out.isTensor()) return;
  const at::Tensor& copy = out.toTensor();
  if (!copy.defined() || !c10::isReducedFloatingType(copy.scalar_type())) {
    return;
  }
  if (MemoryTracker::Get().Resolve(copy.storage().data(),
                                   Category::kWeightCasts) !=
      ResolveResult::kResolved) {
    g_missed.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace

WeightCastObserver::WeightCastObserver(
    const std::vector<torch::Tensor>& params) {
  if (g_installed.exchange(true)) {
    throw std::logic_error("one WeightCastObserver at a time");
  }
  g_storages.clear();
  for (const torch::Tensor& p : params) g_storages.insert(p.storage().data());
  g_missed = 0;
  handle_ = at::addGlobalCallback(at::RecordFunctionCallback(OnStart, OnEnd)
                                      .needsInputs(true)
                                      .needsOutputs(true)
                                      .scopes({at::RecordScope::FUNCTION}));
}

WeightCastObserver::~WeightCastObserver() {
  at::removeCallback(handle_);
  g_installed = false;
}

int64_t WeightCastObserver::missed() const { return g_missed.load(); }

}  // namespace memprof
