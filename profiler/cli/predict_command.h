// `memprof predict`: the per-rank prediction of a config (its busiest rank,
// which differs from the others only under ZeRO-1), printed as a table with
// the formula behind each figure, or as JSON (memprof.prediction/1.4).
// Builds no model and allocates no tensor.
#pragma once

#include <nlohmann/json.hpp>

#include "profiler/cli/config_cli.h"
#include "profiler/predict/cuda_prediction.h"
#include "profiler/predict/prediction.h"

#include "profiler/base/schema_version.h"

namespace memprof {

// `outside_allocator_bytes`: what a GPU holds outside the caching allocator
// (Note [Outside-allocator allowance]), added to the predicted reserved.
nlohmann::ordered_json ToJson(
    const Prediction& prediction, const RunConfig& config,
    int64_t outside_allocator_bytes = kDefaultOutsideAllocatorBytes);
std::string FormatPrediction(
    const Prediction& prediction, const RunConfig& config,
    int64_t outside_allocator_bytes = kDefaultOutsideAllocatorBytes);

// One line per row: name, kind, shape in the config's terms, dtype, bytes.
std::string FormatSizeTable(const SizeTable& table);

int RunPredictCommand(const PredictArgs& args);

}  // namespace memprof
