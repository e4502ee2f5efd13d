#include "models/checkpoint.h"

#include "models/autocast_region.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>

#include <atomic>
#include <mutex>
#include <utility>

namespace memprof {
namespace {

// Note [Checkpointed blocks]
// Forward (autograd off, as a custom function's forward always runs): the
// device's default generator is cloned, the block runs, and only its input
// is saved. Backward: the input is detached into a fresh leaf that requires
// grad; the generator's state at that moment is cloned, the forward's clone
// is put back, the block reruns with autograd on (recomputing = true), the
// backward-time state is put back, and autograd::backward runs through the
// rerun with the incoming gradient. That backward accumulates the block's
// parameter gradients (the Reducer's hooks fire as in a plain run) and the
// leaf's gradient, which is the block's input gradient. This is PyTorch's
// reentrant checkpoint, as torch.utils.checkpoint(use_reentrant=True).
//
// The generator state is copied object to object, never through
// get_state()/set_state(), which would allocate a byte tensor (a tracked
// allocation of its own): the CPU generator's Mersenne Twister engine and
// its cached normal samples; a GPU generator's Philox seed and offset.
// Without dropout the copy is harmless and cheap (2.5 KB on the CPU).
//
// The rerun also runs under the autocast switches the forward saw (as
// PyTorch's checkpoint does): under bf16-autocast the rerun makes the same
// bfloat16 tensors the forward made, in a region of its own whose end
// clears the cast cache (models/autocast_region.h).

std::atomic<RecomputeObserver*> g_observer{nullptr};

class SavedRandomState {
 public:
  explicit SavedRandomState(const torch::Device& device)
      : generator_(at::globalContext().defaultGenerator(device)) {
    std::lock_guard<std::mutex> lock(generator_.mutex());
    saved_ = generator_.clone();
  }
  // Makes the device's generator continue from the saved state.
  void Restore() {
    std::lock_guard<std::mutex> lock(generator_.mutex());
    if (generator_.device().is_cpu()) {
      auto* to = at::check_generator<at::CPUGeneratorImpl>(generator_);
      auto* from = at::check_generator<at::CPUGeneratorImpl>(saved_);
      to->set_engine(from->engine());
      to->set_next_float_normal_sample(from->next_float_normal_sample());
      to->set_next_double_normal_sample(from->next_double_normal_sample());
    } else {
      generator_.set_current_seed(saved_.current_seed());
      generator_.set_offset(saved_.get_offset());
    }
  }

 private:
  at::Generator generator_;
  at::Generator saved_;
};

struct Block : torch::CustomClassHolder {
  Block(BlockForward f, const torch::Device& device)
      : forward(std::move(f)),
        random(device),
        autocast(AutocastState::Of(device.type())) {}
  BlockForward forward;
  SavedRandomState random;  // as the forward found it
  AutocastState autocast;   // as the forward found it
};

class CheckpointFunction
    : public torch::autograd::Function<CheckpointFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               const torch::Tensor& x,
                               c10::intrusive_ptr<Block> block) {
    torch::Tensor y = block->forward(x, /*recomputing=*/false);
    ctx->save_for_backward({x});
    ctx->saved_data["block"] = c10::IValue::make_capsule(std::move(block));
    return y;
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grad_outputs) {
    auto block = c10::static_intrusive_pointer_cast<Block>(
        ctx->saved_data["block"].toCapsule());
    // Dropped from the graph now: what the block's forward holds (Llama's
    // rotary cos and sin) would otherwise live until the graph is freed,
    // through the optimizer's step.
    ctx->saved_data.erase("block");
    const torch::Tensor x = ctx->get_saved_variables()[0];
    const torch::Tensor leaf = x.detach().requires_grad_(true);
    RecomputeObserver* observer = g_observer.load();
    if (observer != nullptr) observer->BeginRecompute();
    SavedRandomState now(x.device());
    block->random.Restore();
    torch::Tensor y;
    {
      torch::AutoGradMode enable(true);
      AutocastRegion region(x.device().type(), block->autocast);
      y = block->forward(leaf, /*recomputing=*/true);
    }
    now.Restore();
    if (observer != nullptr) observer->EndRecompute();
    torch::autograd::backward({y}, {grad_outputs[0]});
    return {leaf.grad(), torch::Tensor()};
  }
};

}  // namespace

void SetRecomputeObserver(RecomputeObserver* observer) {
  g_observer.store(observer);
}

torch::Tensor Checkpoint(BlockForward block, const torch::Tensor& x) {
  TORCH_CHECK(x.requires_grad(),
              "a checkpointed block's input must require grad");
  return CheckpointFunction::apply(
      x, c10::make_intrusive<Block>(std::move(block), x.device()));
}

}  // namespace memprof
