#include "profiler/base/effective_config.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace memprof {
namespace {

std::string ValueText(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace

std::vector<ConfigEntry> EffectiveConfig(const RunConfig& config) {
  std::vector<ConfigEntry> entries;
  const auto add = [&](const std::string& key, const nlohmann::json& value) {
    const auto origin = config.origins.find(key);
    entries.push_back(
        ConfigEntry{key, ValueText(value),
                    origin == config.origins.end() ? "" : origin->second});
  };
  const nlohmann::json all = ToJson(config);
  add("model", all["model"]);
  // The lora section only where a lora key differs from its default: a run
  // without adapters lists what it ran, as before adapters existed.
  const LoraConfig no_adapters;
  const bool lora = config.lora.rank != no_adapters.rank ||
                    config.lora.alpha != no_adapters.alpha ||
                    config.lora.dropout != no_adapters.dropout ||
                    config.lora.targets != no_adapters.targets;
  for (const std::string& section :
       {config.model, std::string("train"), std::string("ddp"),
        std::string(lora ? "lora" : "")}) {
    if (section.empty()) continue;
    for (const auto& [key, value] : all[section].items()) {
      add(section + "." + key, value);
    }
  }
  return entries;
}

std::string FormatEffectiveConfig(const RunConfig& config) {
  const std::vector<ConfigEntry> entries = EffectiveConfig(config);
  size_t key_width = 0, value_width = 0;
  for (const ConfigEntry& e : entries) {
    key_width = std::max(key_width, e.key.size());
    value_width = std::max(value_width, e.value.size());
  }
  std::string text = "effective config (" +
                     (config.source.empty() ? std::string("no config file")
                                            : "file " + config.source) +
                     "; each key's value and where it came from):\n";
  for (const ConfigEntry& e : entries) {
    text += "  " + e.key + std::string(key_width - e.key.size() + 2, ' ') +
            e.value + std::string(value_width - e.value.size() + 2, ' ') +
            (e.origin.empty() ? "not recorded" : e.origin) + "\n";
  }
  return text;
}

}  // namespace memprof
