// A committed config (configs/<preset>.ini) with extra flags, parsed as
// `memprof profile` (PresetConfig) or `memprof predict` (PredictPreset)
// parses its words.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "profiler/cli/config_cli.h"
#include "profiler/cli/predict_command.h"

namespace memprof {

// The words of `--config configs/<preset>.ini` followed by `extra`.
inline std::vector<std::string> PresetWords(const std::string& preset,
                                            std::vector<std::string> extra) {
  std::vector<std::string> words = {
      "--config", MEMPROF_SOURCE_DIR "/configs/" + preset + ".ini"};
  words.insert(words.end(), extra.begin(), extra.end());
  return words;
}

inline RunConfig PresetConfig(const std::string& preset,
                              std::vector<std::string> extra = {}) {
  return ParseProfileArgs(PresetWords(preset, std::move(extra))).config;
}

inline RunConfig PredictPreset(const std::string& preset,
                               std::vector<std::string> extra = {}) {
  return ParsePredictArgs(PresetWords(preset, std::move(extra))).config;
}

}  // namespace memprof
