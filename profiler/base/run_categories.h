// The categories a run's config can fill: the rows the human-readable
// tables show (the JSON files carry every category).
//
// Note [Categories a run can fill]
// A category is left out of a run's tables when its config cannot put a
// byte in it:
// - weight_casts: only under train.dtype bf16-autocast;
// - ddp_buckets: not with ddp.gradient_as_bucket_view (the gradients are
//   the buckets); at one rank the Reducer still builds its buckets, so
//   they stay;
// - optimizer_state: not for SGD without momentum (no state).
// Every other category can fill in any run; unattributed is always shown,
// as the check that it is 0. A table over measured figures also shows any
// category that holds bytes all the same, so a misattribution is never
// hidden (CategoriesToShow).
#pragma once

#include <functional>
#include <vector>

#include "profiler/base/category.h"
#include "profiler/base/run_config.h"

namespace memprof {

// In category order (Note [Categories a run can fill]).
std::vector<Category> CategoriesOf(const RunConfig& config);

// CategoriesOf(config), and any other category for which `holds_bytes` is
// true, in category order.
std::vector<Category> CategoriesToShow(
    const RunConfig& config, const std::function<bool(Category)>& holds_bytes);

}  // namespace memprof
