// A committed config (configs/<preset>.ini) with extra flags, parsed as
// `memprof profile` (PresetConfig) or `memprof predict` (PredictPreset)
// parses its words.
#pragma once

#include <string>
#include <vector>

#include "profiler/cli/config_cli.h"
#include "profiler/cli/predict_command.h"

namespace memprof {

inline RunConfig PresetConfig(const std::string& preset,
                              std::vector<std::string> extra = {}) {
  std::vector<std::string> words = {
      "--config", MEMPROF_SOURCE_DIR "/configs/" + preset + ".ini"};
  words.insert(words.end(), extra.begin(), extra.end());
  return ParseProfileArgs(words).config;
}

inline RunConfig PredictPreset(const std::string& preset,
                               std::vector<std::string> extra = {}) {
  std::vector<std::string> words = {
      "--config", MEMPROF_SOURCE_DIR "/configs/" + preset + ".ini"};
  words.insert(words.end(), extra.begin(), extra.end());
  return ParsePredictArgs(words).config;
}

}  // namespace memprof
