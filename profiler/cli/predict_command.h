// `memprof predict`: the per-rank prediction of a config, printed as a table
// with the formula behind each figure, or as JSON (memprof.prediction/1.2).
// Builds no model and allocates no tensor.
#pragma once

#include <nlohmann/json.hpp>

#include "profiler/cli/config_cli.h"
#include "profiler/predict/prediction.h"

#include "profiler/base/schema_version.h"

namespace memprof {

nlohmann::ordered_json ToJson(const Prediction& prediction,
                              const RunConfig& config);
std::string FormatPrediction(const Prediction& prediction,
                             const RunConfig& config);

// One line per row: name, kind, shape in the config's terms, dtype, bytes.
std::string FormatSizeTable(const SizeTable& table);

int RunPredictCommand(const PredictArgs& args);

}  // namespace memprof
