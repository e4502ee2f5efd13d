// Compatibility header for LibTorch builds that ship c10d's reducer.hpp but
// not the distributed-autograd header it includes (Debian's libtorch-dev
// 1.13). CMake adds this directory to the include path only when the real
// header is absent.
//
// reducer.hpp needs exactly two names from it: DistAutogradContext's
// GradCallback (checked there by a static_assert to be
// std::function<bool(at::Tensor&)>) and ContextPtr, which the Reducer holds
// only as a std::shared_ptr. Declaring the class without members therefore
// leaves every Reducer layout and symbol unchanged; nothing here is defined
// or called.
#pragma once

#include <functional>
#include <memory>

#include <ATen/core/Tensor.h>

namespace torch {
namespace distributed {
namespace autograd {

class DistAutogradContext {
 public:
  using GradCallback = std::function<bool(at::Tensor&)>;
};

using ContextPtr = std::shared_ptr<DistAutogradContext>;

}  // namespace autograd
}  // namespace distributed
}  // namespace torch
