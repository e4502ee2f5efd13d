// Categories and phases: the vocabulary every memprof figure is written in.
// See DESIGN.md "Categories" and docs/reading-reports.md "What each category
// means".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace memprof {

// Where a byte goes. Every recorded block ends in exactly one of these.
enum class Category : uint8_t {
  kWeights = 0,
  kGradients,
  kOptimizerState,
  // bf16-autocast: the autocast cache's lower-precision copies of the
  // weights (Note [Weight casts] in profiler/train/weight_casts.h).
  kWeightCasts,
  kActivations,
  kDdpBuckets,
  kInputs,
  kTemporaries,
  kUnattributed,
  // Internal: a block whose category is not known yet (Note [Block
  // lifetimes] in profiler/capture/memory_tracker.h). Resolved by ownership
  // (MemoryTracker::Resolve), by the phase rule
  // (MemoryTracker::ResolvePendingSince: activations, when backward begins
  // or at an out-of-memory refusal in forward), at its free (temporaries)
  // or at the end of the session (unattributed). Never reported.
  kPending,
};

inline constexpr int kNumCategories = 9;  // reported categories
inline constexpr int kNumCategorySlots = kNumCategories + 1;  // + kPending

inline constexpr std::array<Category, kNumCategories> kAllCategories = {
    Category::kWeights,     Category::kGradients,   Category::kOptimizerState,
    Category::kWeightCasts, Category::kActivations, Category::kDdpBuckets,
    Category::kInputs,      Category::kTemporaries, Category::kUnattributed};

// What the training loop is doing. Global (not per thread): allocations made
// on autograd, intra-op or communication threads belong to the phase the
// loop is in.
enum class Phase : uint8_t {
  kIdle = 0,
  kModelInit,
  kDdpInit,
  kInputs,
  kForward,
  kBackward,
  kOptimizer,
  kZeroGrad,
  kAudit,
};
inline constexpr int kNumPhases = 9;

// Block flags: sub-figures inside a category.
inline constexpr uint8_t kFlagBuffer = 1;  // a module buffer (inside weights)
inline constexpr uint8_t kFlagBucket = 2;  // a DDP Reducer bucket buffer

std::string_view CategoryName(Category c);  // "weights", "optimizer_state"...
std::string_view PhaseName(Phase p);        // "forward", "model_init"...
std::optional<Category> CategoryFromName(std::string_view name);
std::optional<Phase> PhaseFromName(std::string_view name);

inline int Index(Category c) { return static_cast<int>(c); }

using Breakdown = std::array<int64_t, kNumCategories>;  // bytes by category

inline int64_t Sum(const Breakdown& b) {
  int64_t total = 0;
  for (int64_t v : b) total += v;
  return total;
}

// Model state: what every data-parallel replica holds in full whatever its
// micro-batch (weights, gradients, optimizer state, DDP buckets).
inline bool IsModelState(Category c) {
  return c == Category::kWeights || c == Category::kGradients ||
         c == Category::kOptimizerState || c == Category::kDdpBuckets;
}

// A category added in a later minor version of the files that carry
// categories (weight_casts: rank schema 1.6): a reader takes it as 0 bytes
// throughout when a file leaves it out.
inline bool IsLaterCategory(Category c) { return c == Category::kWeightCasts; }

// The categories that can hold bytes in a run of train.dtype `dtype`, in
// category order: weight_casts under bf16-autocast only. The
// human-readable tables and the trace's counters show these; the JSON
// files carry every category.
std::vector<Category> CategoriesOf(std::string_view dtype);

// The model-state categories of `bytes`, summed.
int64_t ModelStateBytes(const Breakdown& bytes);

}  // namespace memprof
