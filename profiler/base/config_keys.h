// Every config key once (Note [Config key table]).
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "profiler/base/run_config.h"

namespace memprof {

// Note [Config key table]
// ConfigKeyTable() names every config key once: the RunConfig field it
// sets, its choices, a line of help and, where the field's default is not
// what a run gets, what it gets instead. The command line binds each key
// to its field from it; every command's --help prints each key with its
// default (the field's value in a default RunConfig) and its choices from
// it; ValidateRunConfig refuses a value outside its choices from it. So
// the parser, the help and the validation cannot drift apart, and a test
// holds every command's --help to this table.

// The field a key sets, in a given RunConfig.
using ConfigField = std::variant<int64_t*, double*, std::string*, bool*>;

struct ConfigChoice {
  const char* value;    // "bf16-autocast"
  const char* meaning;  // "" when the value says it
};

struct ConfigKey {
  const char* name;  // "train.dtype"
  ConfigField (*field)(RunConfig&);
  // The values the key accepts; empty: any value of its type (within the
  // bounds ValidateRunConfig states).
  std::vector<ConfigChoice> choices;
  const char* help;
  // "": the default is the field's value in a default RunConfig. Else what
  // a run gets when the key is not given ("required", "nccl on cuda, gloo
  // on cpu").
  const char* default_text = "";
};

// In the order the effective config lists them (model, mlp, gpt, resnet,
// train, lora, ddp).
const std::vector<ConfigKey>& ConfigKeyTable();

// The key named `name`; nullptr when there is none.
const ConfigKey* FindConfigKey(const std::string& name);

// The key's value in `config` as a config file writes it ("float32",
// "0.001", "true").
std::string ConfigValueText(const ConfigKey& key, const RunConfig& config);

// A size of the model that a run must give when its model is the key's
// section (gpt.layers; not gpt.dropout or gpt.positions, which default).
bool IsModelSizeKey(const ConfigKey& key);

// What a run gets when the key is not given: default_text, or the value
// in a default RunConfig.
std::string ConfigDefaultText(const ConfigKey& key);

// "float32, bf16-autocast (float32 weights, ...), bfloat16 (...)".
std::string ConfigChoicesText(const ConfigKey& key);

// "N", "X", "TEXT", "BOOL" or "CHOICE": the value's placeholder in --help.
std::string ConfigValueName(const ConfigKey& key);

// Throws ConfigError "unknown KEY 'VALUE'; known: CHOICES" unless the key's
// value in `config` is one of its choices (or it has none).
void RequireConfigChoice(const ConfigKey& key, const RunConfig& config);

}  // namespace memprof
