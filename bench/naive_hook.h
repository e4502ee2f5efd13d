// The straightforward allocator hook the hook's cost is measured against
// (bench/hook_alloc_bench, bench/instruction_bench): one std::mutex, a
// node-based std::unordered_map, a heap-allocated deleter context per block.
#pragma once

#include <c10/core/Allocator.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace memprof {

class NaiveHook final : public c10::Allocator {
 public:
  explicit NaiveHook(c10::Allocator* base) : base_(base) {}
  c10::DataPtr allocate(size_t bytes) override {
    c10::DataPtr block = base_->allocate(bytes);
    void* data = block.get();
    auto* context =
        new Context{this, data, block.get_context(), block.get_deleter()};
    block.release_context();
    {
      std::lock_guard<std::mutex> guard(mutex_);
      blocks_[data] = Block{static_cast<int64_t>(bytes), seq_++};
      current_ += static_cast<int64_t>(bytes);
    }
    return c10::DataPtr(data, context, &Delete, block.device());
  }
  void copy_data(void* dest, const void* src,
                 std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

 private:
  struct Block {
    int64_t bytes, seq;
  };
  struct Context {
    const NaiveHook* hook;
    void* data;
    void* ctx;
    c10::DeleterFnPtr deleter;
  };
  static void Delete(void* raw) {
    auto* context = static_cast<Context*>(raw);
    {
      std::lock_guard<std::mutex> guard(context->hook->mutex_);
      auto it = context->hook->blocks_.find(context->data);
      context->hook->current_ -= it->second.bytes;
      context->hook->blocks_.erase(it);
      ++context->hook->seq_;
    }
    context->deleter(context->ctx);
    delete context;
  }
  c10::Allocator* base_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<void*, Block> blocks_;
  mutable int64_t seq_ = 0, current_ = 0;
};

}  // namespace memprof
