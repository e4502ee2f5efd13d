#include "profiler/base/category.h"

namespace memprof {
namespace {

constexpr std::array<std::string_view, kNumCategorySlots> kCategoryNames = {
    "weights",      "gradients",   "optimizer_state", "weight_casts",
    "activations",  "ddp_buckets", "inputs",          "temporaries",
    "unattributed", "pending"};

constexpr std::array<std::string_view, kNumPhases> kPhaseNames = {
    "idle",     "model_init", "ddp_init",  "inputs", "forward",
    "backward", "optimizer",  "zero_grad", "audit"};

}  // namespace

std::string_view CategoryName(Category c) {
  return kCategoryNames[static_cast<size_t>(c)];
}

std::string_view PhaseName(Phase p) {
  return kPhaseNames[static_cast<size_t>(p)];
}

std::optional<Category> CategoryFromName(std::string_view name) {
  for (Category c : kAllCategories) {
    if (CategoryName(c) == name) return c;
  }
  return std::nullopt;
}

std::optional<Phase> PhaseFromName(std::string_view name) {
  for (int i = 0; i < kNumPhases; ++i) {
    if (kPhaseNames[i] == name) return static_cast<Phase>(i);
  }
  return std::nullopt;
}

std::vector<Category> CategoriesOf(std::string_view dtype) {
  std::vector<Category> out;
  for (Category c : kAllCategories) {
    if (c != Category::kWeightCasts || dtype == "bf16-autocast") {
      out.push_back(c);
    }
  }
  return out;
}

int64_t ModelStateBytes(const Breakdown& bytes) {
  int64_t total = 0;
  for (Category c : kAllCategories) {
    if (IsModelState(c)) total += bytes[Index(c)];
  }
  return total;
}

}  // namespace memprof
