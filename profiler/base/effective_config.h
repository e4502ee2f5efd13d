// The effective config: every key of a run with its value and where the
// value came from (the config file and line, a flag, the launcher's
// WORLD_SIZE, or memprof's default), printed at the top of every run and in
// its reports, so that nothing a run used is a silent guess.
#pragma once

#include <string>
#include <vector>

#include "profiler/base/run_config.h"

namespace memprof {

struct ConfigEntry {
  std::string key;     // "mlp.hidden"
  std::string value;   // as ToJson writes it, strings unquoted
  std::string origin;  // RunConfig::origins; "" when not recorded
};

// The keys of ToJson(config) ("source" left out): model, the chosen model's
// keys, then train.*, then ddp.*, each section's keys in alphabetical order.
std::vector<ConfigEntry> EffectiveConfig(const RunConfig& config);

// "effective config (file F; flags; the rest memprof's defaults):" and one
// aligned "  key  value  origin" line per key.
std::string FormatEffectiveConfig(const RunConfig& config);

}  // namespace memprof
