// Mixed precision (train.dtype = bf16-autocast): the region in which ops
// autocast to bfloat16, as Python's `with torch.autocast(device,
// torch.bfloat16):` around the forward. LibTorch's C++ API has the switches
// (at::autocast) but no region object; this is one.
#pragma once

#include <ATen/autocast_mode.h>

namespace memprof {

// The autocast switches of one device type, as a region found them.
struct AutocastState {
  bool enabled = false;
  at::ScalarType dtype = at::kBFloat16;

  static AutocastState Of(c10::DeviceType device) {
    return {at::autocast::is_autocast_enabled(device),
            at::autocast::get_autocast_dtype(device)};
  }
};

// On construction (when `state.enabled`): autocast on for `device` in
// `state.dtype`, one nesting level deeper. On destruction: the switches
// as they were; leaving the outermost region clears the cast cache, as
// the Python context manager does, so the cached lower-precision copies
// of the weights live on only where the autograd graph holds them. A
// disabled state makes a region that does nothing.
class AutocastRegion {
 public:
  AutocastRegion(c10::DeviceType device, AutocastState state)
      : device_(device),
        on_(state.enabled),
        before_(AutocastState::Of(device)) {
    if (!on_) return;
    at::autocast::set_autocast_enabled(device_, true);
    at::autocast::set_autocast_dtype(device_, state.dtype);
    at::autocast::increment_nesting();
  }
  ~AutocastRegion() {
    if (!on_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(device_, before_.enabled);
    at::autocast::set_autocast_dtype(device_, before_.dtype);
  }
  AutocastRegion(const AutocastRegion&) = delete;
  AutocastRegion& operator=(const AutocastRegion&) = delete;

 private:
  c10::DeviceType device_;
  bool on_;
  AutocastState before_;
};

}  // namespace memprof
