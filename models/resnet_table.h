// ResNet's shape arithmetic, shared by the size table, the module
// (models/resnet.h) and config validation. Pure arithmetic: no tensors.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

namespace memprof {

struct ResnetStages {
  bool bottleneck = false;  // 1x1-3x3-1x1 blocks (expansion 4), else 3x3-3x3
  std::array<int64_t, 4> blocks{};  // blocks per stage
  int64_t expansion() const { return bottleneck ? 4 : 1; }
};

// The torchvision layouts of depth 18, 34, 50, 101 and 152; nullopt for any
// other depth.
std::optional<ResnetStages> ResnetStagesOf(int64_t depth);

// Output side of a k x k convolution (or pooling) with stride and padding.
inline int64_t ConvOutput(int64_t in, int64_t k, int64_t stride,
                          int64_t padding) {
  return (in + 2 * padding - k) / stride + 1;
}

// Side of the feature maps: after the 7x7/2 stem convolution, after the 3x3/2
// max-pool, and at the output of each stage (stages 2-4 halve it).
struct ResnetResolutions {
  int64_t stem = 0;
  int64_t pooled = 0;
  std::array<int64_t, 4> stage{};
};
ResnetResolutions ResnetResolutionsOf(int64_t resolution);

}  // namespace memprof
