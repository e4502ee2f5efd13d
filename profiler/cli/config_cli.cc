#include "profiler/cli/config_cli.h"

#include <cctype>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <utility>
#include <variant>

#include <boost/program_options.hpp>

#include "models/config_validation.h"
#include "profiler/base/config_keys.h"
#include "profiler/base/effective_config.h"
#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"
#include "profiler/base/regular_file.h"
#include "profiler/cli/config_file.h"
#include "profiler/cli/flag_parsing.h"
#include "profiler/cli/hf_config.h"
#include "profiler/predict/cuda_prediction.h"

namespace memprof {
namespace po = boost::program_options;
namespace {

// Every config key, bound to its RunConfig field, with its help, default
// and choices (Note [Config key table]).
po::options_description ConfigKeys(RunConfig& c) {
  po::options_description keys(
      "Config keys (in a file, or as --section.key; each with its default)");
  for (const ConfigKey& key : ConfigKeyTable()) {
    const std::string value_name = ConfigValueName(key);
    const po::value_semantic* value = std::visit(
        [&](auto* field) -> const po::value_semantic* {
          return po::value(field)->value_name(value_name);
        },
        key.field(c));
    std::string help = key.help;
    if (!key.choices.empty()) help += "; choices: " + ConfigChoicesText(key);
    help += "; default: " + ConfigDefaultText(key);
    keys.add_options()(key.name, value, help.c_str());
  }
  return keys;
}

struct Aliases {
  int64_t world_size = 0, micro_batch = 0, global_batch = 0, steps = 0,
          grad_accum = 0;
  std::string freeze;
  int64_t lora_rank = 0;
  double lora_alpha = 0, lora_dropout = 0;
  std::string lora_targets;
};

// --config, --hf-config and the short spellings of common keys.
po::options_description AliasFlags(std::string& config_path, Aliases& a) {
  po::options_description flags("Config");
  flags.add_options()("config", po::value(&config_path), "INI config file")(
      "hf-config", po::value<std::string>(),
      "a Hugging Face config.json: its architecture and sizes as the model "
      "keys (llama: Llama, Mistral, Qwen2; gpt: GPT-2); --config's keys and "
      "flags override them")("world-size", po::value(&a.world_size),
                             "= --ddp.world_size")(
      "micro-batch", po::value(&a.micro_batch), "= --train.micro_batch")(
      "global-batch", po::value(&a.global_batch), "= --train.global_batch")(
      "steps", po::value(&a.steps), "= --train.steps")(
      "grad-accum", po::value(&a.grad_accum)->value_name("K"),
      "= --train.grad_accum")("freeze",
                              po::value(&a.freeze)->value_name("PREFIXES"),
                              "= --train.freeze")(
      "lora-rank", po::value(&a.lora_rank)->value_name("N"), "= --lora.rank")(
      "lora-alpha", po::value(&a.lora_alpha)->value_name("X"),
      "= --lora.alpha")("lora-dropout",
                        po::value(&a.lora_dropout)->value_name("X"),
                        "= --lora.dropout")(
      "lora-targets", po::value(&a.lora_targets)->value_name("MODULES"),
      "= --lora.targets");
  return flags;
}

std::string At(const std::string& path, int line) {
  return line > 0 ? path + ":" + std::to_string(line) : path;
}

// `words` without the flags named in `dropped` and their values: the
// config words to pass on to `memprof profile`. Switches among `dropped`
// take no value.
std::vector<std::string> ProfileWords(const std::vector<std::string>& words,
                                      const std::set<std::string>& dropped) {
  static const std::set<std::string> kSwitches = {"measure"};
  std::vector<std::string> kept;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    const size_t equals = word.find('=');
    const std::string name =
        word.rfind("--", 0) == 0
            ? word.substr(2, equals == std::string::npos ? std::string::npos
                                                         : equals - 2)
            : "";
    if (name.empty() || dropped.count(name) == 0) {
      kept.push_back(word);
    } else if (equals == std::string::npos && kSwitches.count(name) == 0) {
      ++i;  // its value
    }
  }
  return kept;
}

}  // namespace

std::string ReadConfigFile(const std::string& path) {
  return ReadRegularFile(path, "config file", kMaxConfigFileBytes,
                         "pass an INI file to --config");
}

namespace {

// A number in a unit ParseByteSize knows, in bytes before ParseByteSize's
// bounds ("0GiB": 0; "8388608TiB": 9.2e18, past kLargestByteSize); nullopt
// for anything else.
std::optional<double> UnboundedBytes(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text.front()))) {
    return std::nullopt;
  }
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  const int64_t unit = ParseByteSize("1" + std::string(end));
  if (unit < 1) return std::nullopt;
  return number * static_cast<double>(unit);
}

// "0", "0GiB", "0.0 MiB": zero in a unit ParseByteSize knows.
bool IsZeroSize(const std::string& text) {
  const std::optional<double> bytes = UnboundedBytes(text);
  return bytes && *bytes == 0;
}

}  // namespace

int64_t ByteSizeFlag(const std::string& flag, const std::string& text) {
  const int64_t bytes = ParseByteSize(text);
  if (bytes < 1 && UnboundedBytes(text).value_or(0) > kLargestByteSize) {
    throw InputError("--" + flag + " " + text +
                     ": too large; memprof counts sizes up to 9.0e18 bytes "
                     "(about 7.8 EiB): give a smaller size");
  }
  if (bytes < 1 && IsZeroSize(text)) {
    throw InputError("--" + flag + " " + text +
                     ": a size of 0 bytes holds nothing; give a positive size "
                     "such as 80GiB or 512MiB");
  }
  if (bytes < 1) {
    throw InputError("--" + flag + " " + text +
                     ": expected a size such as 80G, 80GiB, 80GB or 512MiB (" +
                     kByteSizeUnits + ")");
  }
  return bytes;
}

int FindKeyLine(const std::string& path, const std::string& key) {
  const ConfigFileText file = ConfigFileTextOf(path, ReadConfigFile(path));
  const auto line = file.key_lines.find(key);
  return line == file.key_lines.end() ? 0 : line->second;
}

namespace {

// Each short flag and the config key it spells.
constexpr std::pair<const char*, const char*> kAliasKeys[] = {
    {"world-size", "ddp.world_size"},
    {"micro-batch", "train.micro_batch"},
    {"global-batch", "train.global_batch"},
    {"steps", "train.steps"},
    {"grad-accum", "train.grad_accum"},
    {"freeze", "train.freeze"},
    {"lora-rank", "lora.rank"},
    {"lora-alpha", "lora.alpha"},
    {"lora-dropout", "lora.dropout"},
    {"lora-targets", "lora.targets"}};

// For a value Boost refused for `option` ("--mlp.hidden", "lora-rank",
// "mlp.hidden"): what its key takes (": mlp.hidden takes a whole number"),
// or "" for a key whose values are text.
std::string WhatKeyTakes(std::string option) {
  if (option.rfind("--", 0) == 0) option.erase(0, 2);
  for (const auto& [flag, key] : kAliasKeys) {
    if (option == flag) option = key;
  }
  const ConfigKey* key = FindConfigKey(option);
  if (key == nullptr) return "";
  RunConfig config;
  const ConfigField field = key->field(config);
  const char* takes = std::holds_alternative<bool*>(field) ? "true or false"
                      : std::holds_alternative<int64_t*>(field)
                          ? "a whole number"
                      : std::holds_alternative<double*>(field) ? "a number"
                                                               : nullptr;
  return takes == nullptr ? ""
                          : std::string(": ") + key->name + " takes " + takes;
}

// Adds the keys of the INI file at `path` to `vm` (the command line's
// values win) and returns its text (Note [Config file text]). InputError
// names the file, and the line where there is one.
ConfigFileText StoreConfigFile(const std::string& path,
                               const po::options_description& keys,
                               const std::string& command,
                               po::variables_map& vm) {
  const ConfigFileText file = ConfigFileTextOf(path, ReadConfigFile(path));
  const auto line_of = [&](const std::string& key) {
    const auto line = file.key_lines.find(key);
    return line == file.key_lines.end() ? 0 : line->second;
  };
  std::istringstream text(file.text);
  try {
    po::store(po::parse_config_file(text, keys), vm);
  } catch (const po::unknown_option& e) {
    const std::string key = e.get_option_name();
    const std::string close = CloseNames(key, keys, "");
    throw InputError(
        At(path, line_of(key)) + ": unknown key '" + key + "'" +
        (close.empty() ? "; see" : "; did you mean " + close + "? See") +
        " 'memprof " + command + " --help' for the keys");
  } catch (const po::invalid_config_file_syntax& e) {
    throw InputError(At(path, LineReadAs(file, e.tokens())) + ": " + e.what() +
                     "; lines are 'key = value' or '[section]'");
  } catch (const po::multiple_occurrences& e) {
    const std::string key = e.get_option_name();
    const auto again = file.repeat_lines.find(key);
    throw InputError(At(path, again == file.repeat_lines.end()
                                  ? line_of(key)
                                  : again->second) +
                     ": " + e.what() + " (first on line " +
                     std::to_string(line_of(key)) + "); keep one of them");
  } catch (const po::invalid_option_value& e) {
    const std::string key = e.get_option_name();
    throw InputError(At(path, line_of(key)) + ": " + e.what() +
                     WhatKeyTakes(key));
  } catch (const po::error_with_option_name& e) {
    const std::string key = e.get_option_name();
    throw InputError(At(path, key.empty() ? 0 : line_of(key)) + ": " +
                     e.what());
  } catch (const po::error& e) {
    throw InputError(path + ": " + e.what());
  }
  return file;
}

// Adds the keys `hf` maps its JSON onto to `vm`, below the command line's
// and the INI file's (Note [Hugging Face config]). InputError naming the
// file and field when a value does not fit its key.
void StoreHfConfig(const HfConfig& hf, const po::options_description& keys,
                   po::variables_map& vm) {
  std::string text;
  for (const HfKey& key : hf.keys) {
    text += key.key + " = " + key.value + "\n";
  }
  std::istringstream stream(text);
  try {
    po::store(po::parse_config_file(stream, keys), vm);
  } catch (const po::error_with_option_name& e) {
    const std::string name = e.get_option_name();
    std::string field;
    for (const HfKey& key : hf.keys) {
      if (key.key == name) field = key.field + ": ";
    }
    throw InputError(hf.path + ": " + field + e.what());
  } catch (const po::error& e) {
    throw InputError(hf.path + ": " + e.what());
  }
}

// Sets each key a short flag on the command line gave; InputError when the
// key was given too.
void ApplyAliases(const Aliases& aliases, const po::variables_map& cli,
                  RunConfig& config) {
  int64_t* fields[] = {&config.ddp.world_size, &config.train.micro_batch,
                       &config.train.global_batch, &config.train.steps,
                       &config.train.grad_accum};
  const int64_t values[] = {aliases.world_size, aliases.micro_batch,
                            aliases.global_batch, aliases.steps,
                            aliases.grad_accum};
  for (const auto& [flag, key] : kAliasKeys) {
    if (cli.count(flag) && cli.count(key)) {
      throw InputError(std::string("--") + flag + " and --" + key +
                       " both given; use one");
    }
  }
  for (int i = 0; i < 5; ++i) {
    if (cli.count(kAliasKeys[i].first)) *fields[i] = values[i];
  }
  if (cli.count("freeze")) config.train.freeze = aliases.freeze;
  if (cli.count("lora-rank")) config.lora.rank = aliases.lora_rank;
  if (cli.count("lora-alpha")) config.lora.alpha = aliases.lora_alpha;
  if (cli.count("lora-dropout")) config.lora.dropout = aliases.lora_dropout;
  if (cli.count("lora-targets")) config.lora.targets = aliases.lora_targets;
}

// Where each key of `config` came from (RunConfig::origins): a flag (its
// short spelling where that was given), the file's line, or the default.
std::map<std::string, std::string> OriginsOf(const RunConfig& config,
                                             const po::variables_map& cli,
                                             const po::variables_map& vm,
                                             const std::string& path,
                                             const ConfigFileText& file,
                                             const HfConfig& hf) {
  std::map<std::string, std::string> from_hf;
  for (const HfKey& key : hf.keys) {
    from_hf[key.key] = hf.path + ": " + key.field;
  }
  std::map<std::string, std::string> origins;
  for (const ConfigEntry& entry : EffectiveConfig(config)) {
    const std::string& key = entry.key;
    std::string origin = "default";
    for (const auto& [flag, aliased] : kAliasKeys) {
      if (key == aliased && cli.count(flag)) origin = std::string("--") + flag;
    }
    if (cli.count(key)) {
      origin = "--" + key;
    } else if (origin == "default" && vm.count(key) && !vm[key].defaulted()) {
      const auto line = file.key_lines.find(key);
      const auto json = from_hf.find(key);
      origin = line == file.key_lines.end() && json != from_hf.end()
                   ? json->second
                   : At(path, line == file.key_lines.end() ? 0 : line->second);
    }
    origins[key] = origin;
  }
  return origins;
}

// "--mlp.hidden", "FILE:LINE: key 'mlp.hidden'" or "default of 'mlp.hidden'":
// where `key`'s value came from, to start a message.
std::string Where(const RunConfig& config, const std::string& key) {
  const auto found = config.origins.find(key);
  const std::string origin =
      found == config.origins.end() ? "default" : found->second;
  if (origin == "default") return "default of '" + key + "'";
  if (origin.rfind("--", 0) == 0) return origin;
  return origin + ": key '" + key + "'";
}

// ValidateRunConfig, with the error naming where the bad value came from:
// the flag, the file and line, or the default; an error of several keys
// together (sizes too large to count) names the config file.
void ValidateWhere(const RunConfig& config) {
  try {
    ValidateRunConfig(config);
  } catch (const ConfigError& e) {
    throw InputError(Where(config, e.key()) + ": " + e.what());
  } catch (const InputError& e) {
    if (config.source.empty()) throw;
    throw InputError(config.source + ": " + e.what());
  }
}

// Note [Accumulation from the batches]
// The global batch and the micro-batch given together set the accumulation:
// train.grad_accum = global / (micro-batch x world size). A micro-batch
// from the config file yields to a --global-batch flag (the flag's global
// batch then decides the micro-batch, as it did before accumulation: what
// `memprof sweep --world-sizes` relies on); both from the file, both
// flags, or the global batch in the file and a --micro-batch flag set the
// accumulation. A global batch that does not divide, or a grad_accum given
// as well that disagrees, is refused naming each value's origin.
void DeriveGradAccum(const po::variables_map& cli, RunConfig& config) {
  const auto given = [&](const std::string& key) {
    return config.origins.at(key) != "default";
  };
  const bool micro_cli =
      cli.count("micro-batch") || cli.count("train.micro_batch");
  const bool global_cli =
      cli.count("global-batch") || cli.count("train.global_batch");
  const int64_t global = config.train.global_batch;
  const int64_t micro = config.train.micro_batch;
  const int64_t ranks = config.ddp.world_size;
  if (global <= 0 || !given("train.global_batch") ||
      !given("train.micro_batch") || (global_cli && !micro_cli)) {
    return;
  }
  if (micro < 1 || ranks < 1) return;  // ValidateWhere names the bad value
  const std::string batches =
      Where(config, "train.global_batch") + " " + std::to_string(global) +
      " with " + Where(config, "train.micro_batch") + " " +
      std::to_string(micro) + " on " + std::to_string(ranks) +
      (ranks == 1 ? " rank" : " ranks");
  if (global % (micro * ranks) != 0) {
    throw InputError(
        batches + ": the accumulation, global / (micro-batch x ranks) = " +
        std::to_string(global) + " / " + std::to_string(micro * ranks) +
        ", is not a whole number; give a global batch that is a multiple of " +
        std::to_string(micro * ranks) +
        ", or a micro-batch that divides the per-rank batch " +
        (global % ranks == 0 ? std::to_string(global / ranks)
                             : "(global / ranks)") +
        ", or leave one of them out");
  }
  const int64_t accumulation = global / (micro * ranks);
  if (given("train.grad_accum") && config.train.grad_accum != accumulation) {
    throw InputError(batches + " make " + std::to_string(accumulation) +
                     (accumulation == 1 ? " micro-batch" : " micro-batches") +
                     " per optimizer step, but " +
                     Where(config, "train.grad_accum") + " is " +
                     std::to_string(config.train.grad_accum) +
                     "; give two of the three, or make them agree");
  }
  config.train.grad_accum = accumulation;
  config.origins["train.grad_accum"] =
      "global / (micro-batch x ranks): " + std::to_string(global) + " / " +
      std::to_string(micro * ranks);
}

// Note [Micro-batch from the global batch]
// Where the global batch decides the micro-batch (a --global-batch flag
// over the file's micro-batch, or the global batch alone), the config
// records the micro-batch the run trains at, G / (N x K), with that
// origin: it used to keep the file's value (8 where the run trained at 4),
// in the effective config, the reports and the gate's comparison of
// configs.
void DeriveMicroBatch(RunConfig& config) {
  if (config.train.global_batch <= 0) return;
  const int64_t micro = MicroBatch(config);
  if (micro == config.train.micro_batch) return;
  config.train.micro_batch = micro;
  config.origins["train.micro_batch"] =
      "global / (ranks x accumulation): " +
      std::to_string(config.train.global_batch) + " / (" +
      std::to_string(config.ddp.world_size) + " x " +
      std::to_string(config.train.grad_accum) + ")";
}

constexpr const char* kModelSections[] = {"mlp", "gpt", "llama", "resnet"};

// Note [Kept detail bound]
// A kept step's detail (its timeline, breakdowns, scopes) takes about 4 KiB
// of rank report per micro-batch: 4,112 B a step for mlp-tiny, 6,325 B a
// step of 2 micro-batches for llama-tiny, measured with --keep-steps all at
// 10 and 30 steps. At most kMaxKeptMicroBatches of them keep their detail,
// so that the report stays well within the 64 MiB its readers take (Note
// [File size caps]): 19,000 mlp-tiny steps with --keep-steps all trained
// for a minute and wrote a 76 MB report that report, check and baseline
// refused.
constexpr int64_t kMaxKeptMicroBatches = 5000;

void RequireReadableKeptDetail(const KeepSteps& keep, const RunConfig& config,
                               const po::variables_map& cli) {
  // Step 1, the steady-state peak's step and the last `keep.last`.
  const int64_t steps =
      keep.all ? config.train.steps
               : std::min<int64_t>(config.train.steps, int64_t{keep.last} + 2);
  const int64_t micro_batches = steps * config.train.grad_accum;
  if (micro_batches <= kMaxKeptMicroBatches) return;
  const std::string flag =
      "--keep-steps " + cli["keep-steps"].as<std::string>();
  throw InputError(
      flag + ": " + std::to_string(steps) + " steps of " +
      std::to_string(config.train.grad_accum) +
      " micro-batch(es) would keep their detail, about 4 KiB of rank report "
      "each, more than the " +
      std::to_string(kMaxKeptMicroBatches) +
      " a report's readers can take: keep fewer (--keep-steps N keeps N "
      "steps and steps 1 and the peak's: (N + 2) x train.grad_accum at most " +
      std::to_string(kMaxKeptMicroBatches) +
      "); every step's peak and time are kept whatever N is");
}

// The sections for any model ([lora] refuses resnet by itself).
constexpr const char* kRunSections[] = {"train", "ddp", "lora"};

// A section, a key in the file or a flag for a model other than the chosen
// one would be ignored: InputError naming it, its line and the remedy.
void RefuseOtherModels(const RunConfig& config, const po::variables_map& cli,
                       const std::string& path, const ConfigFileText& file) {
  bool known_model = false;
  for (const char* name : kModelSections) known_model |= config.model == name;
  if (!known_model) return;  // ValidateWhere names the model
  const std::string model =
      "the model is " + config.model + " (" + config.origins.at("model") + ")";
  for (const auto& [section, line] : file.sections) {
    bool model_section = false;
    for (const char* other : kModelSections) model_section |= section == other;
    bool known = model_section;
    for (const char* other : kRunSections) known |= section == other;
    if (!known) {
      throw InputError(At(path, line) + ": unknown section [" + section +
                       "]; known: mlp, gpt, llama, resnet, train, ddp, lora");
    }
    if (model_section && section != config.model) {
      throw InputError(At(path, line) + ": section [" + section +
                       "] is for model " + section + ", but " + model +
                       "; remove the section, or set model = " + section);
    }
  }
  for (const char* section : kModelSections) {
    if (config.model == section) continue;
    const std::string prefix = std::string(section) + ".";
    for (const auto& [key, value] : cli) {
      if (key.rfind(prefix, 0) == 0) {
        throw InputError("--" + key + ": the model is " + config.model +
                         ", which has no " + section +
                         " keys; drop the flag or choose --model " + section);
      }
    }
    for (const auto& [key, line] : file.key_lines) {
      if (key.rfind(prefix, 0) == 0) {
        throw InputError(At(path, line) + ": key '" + key + "' is for model " +
                         section + ", but " + model + "; remove it, or set " +
                         "model = " + section);
      }
    }
  }
}

// Note [No guessed model]
// What decides a run's memory most, the model, its size keys and the
// micro-batch, has no silent default: each comes from the config file or a
// flag, or the run is refused, naming what is missing (a file with only
// "model = gpt" would otherwise be GPT-2 small at micro-batch 8, and no
// --config at all a built-in MLP). Every other key (steps, optimizer, lr,
// dtype, DDP) has a default, shown with its origin in the effective config
// at the top of every run and in its reports. The size keys are those the
// key table marks so (IsModelSizeKey); gpt.dropout (default 0, no
// dropout), gpt.positions (default gpt.seq_len) and llama's keys that a
// config.json may leave out default, as the Hugging Face classes do.
void RequireModelChoice(const RunConfig& config, const std::string& command,
                        const std::string& path) {
  // `path`: the config file, or the config.json when there is none.
  const auto given = [&](const std::string& key) {
    return config.origins.at(key) != "default";
  };
  const std::string where = path.empty() ? command : path;
  if (!given("model")) {
    throw InputError(
        path.empty()
            ? command +
                  ": no config: pass --config FILE (configs/ has "
                  "default.ini, memprof's default job, and mlp-tiny.ini, "
                  "gpt2-small.ini, ...), or give --model and its keys "
                  "as flags; run 'memprof " +
                  command + " --help' for the keys"
            : path + ": no 'model = ...' line: name the model (" +
                  kKnownModels + ") at the top of the file");
  }
  std::string missing;
  for (const ConfigEntry& entry : EffectiveConfig(config)) {
    if (entry.key.rfind(config.model + ".", 0) == 0 &&
        IsModelSizeKey(*FindConfigKey(entry.key)) && !given(entry.key)) {
      missing += (missing.empty() ? "" : ", ") + entry.key;
    }
  }
  if (!missing.empty()) {
    throw InputError(where + ": the model is " + config.model + " (" +
                     config.origins.at("model") + ") but " + missing +
                     (missing.find(',') == std::string::npos ? " is" : " are") +
                     " not set, and memprof does not guess a model's size; "
                     "set each under [" +
                     config.model + "] or as a flag (--" +
                     missing.substr(0, missing.find(',')) + " N)");
  }
  const bool global_batch =
      given("train.global_batch") && config.train.global_batch > 0;
  if (!given("train.micro_batch") && !global_batch) {
    throw InputError(where +
                     ": the micro-batch is not set, and memprof does not "
                     "guess it; set micro_batch under [train], or give "
                     "--micro-batch B or --global-batch G");
  }
}

// The flags and config file of a command that runs (or predicts) a config:
// `command_flags` plus every config key. Reads --config, applies the short
// aliases, records each key's origin and validates. Returns false for
// --help, with its text in `help`.
bool ParseRunConfigWords(const std::vector<std::string>& words,
                         const po::options_description& command_flags,
                         const std::string& command, const std::string& usage,
                         RunConfig& config, po::variables_map& cli,
                         std::string& help) {
  Aliases aliases;
  po::options_description keys = ConfigKeys(config);
  po::options_description all;
  all.add(command_flags).add(AliasFlags(config.source, aliases)).add(keys);
  try {
    po::store(ParseCommandLine(words, all), cli);
  } catch (const po::unknown_option& e) {
    throw UnknownFlag(e, all, command);
  } catch (const po::invalid_option_value& e) {
    throw InputError(std::string("command line: ") + e.what() +
                     WhatKeyTakes(e.get_option_name()));
  } catch (const po::error& e) {
    throw InputError(std::string("command line: ") + e.what());
  }
  if (HelpRequested(cli, usage, all, help)) return false;

  po::variables_map vm = cli;
  const std::string path =
      cli.count("config") ? cli["config"].as<std::string>() : "";
  ConfigFileText file;
  if (!path.empty()) file = StoreConfigFile(path, keys, command, vm);
  HfConfig hf;
  if (cli.count("hf-config")) {
    hf = ReadHfConfig(cli["hf-config"].as<std::string>());
    StoreHfConfig(hf, keys, vm);
  }
  try {
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError(std::string("command line: ") + e.what());
  }
  config.source = path.empty()      ? hf.path
                  : hf.path.empty() ? path
                                    : path + " over " + hf.path;
  ApplyAliases(aliases, cli, config);
  config.origins = OriginsOf(config, cli, vm, path, file, hf);
  if (!hf.model.empty() && config.model != hf.model) {
    throw InputError(hf.path + ": architectures: " + hf.architecture +
                     " is memprof's model " + hf.model + ", but the model is " +
                     config.model + " (" + config.origins.at("model") +
                     "); drop one of them");
  }
  RefuseOtherModels(config, cli, path, file);
  DeriveGradAccum(cli, config);
  ValidateWhere(config);
  DeriveMicroBatch(config);
  RequireModelChoice(config, command, path.empty() ? hf.path : path);
  if (!hf.path.empty()) {
    for (const std::string& warning : HfConfigWarnings(hf, config)) {
      std::cerr << "warning: " << warning << "\n";
    }
  }
  return true;
}

}  // namespace

ProfileArgs ParseProfileArgs(const std::vector<std::string>& words) {
  ProfileArgs args;
  args.words = words;
  GateWords gate;
  po::options_description flags("Options");
  flags.add_options()("help,h", "print this help")(
      "out", po::value(&args.out_dir), "output directory (default: out)")(
      "check", po::value(&args.check.baseline_path),
      "after the run, gate it on this baseline (as memprof check)")(
      "quiet,q", po::bool_switch(&args.quiet),
      "no progress line on standard error and no list of the ranks' pids; "
      "the effective config, the results, warnings and errors are still "
      "printed")(
      "no-hook", po::bool_switch(&args.no_hook),
      "train without the allocator hook, to time its cost: step times "
      "only, no memory figures (bench/step_overhead_bench)")(
      "memory-limit", po::value<std::string>(),
      "emulate a device of this size per rank (80G, 80GiB, 80GB, 512MiB; "
      "G and GiB are 2^30 bytes, GB 10^9): "
      "an allocation over it fails with LibTorch's out-of-memory error and "
      "the rank reports where its memory was (exit 3)")(
      "skip-memory-check", po::bool_switch(&args.skip_memory_check),
      "start even when the local ranks' predicted peak (or --memory-limit) "
      "is over the memory this machine has available")(
      "snapshot-format", po::value(&args.snapshot_format),
      "json (default: snapshot-<r>.json) or pickle (snapshot-<r>.pickle, "
      "for memory viewers that read pickle only)")(
      "keep-steps", po::value<std::string>()->default_value("2"),
      "the last N steps (and steps 1 and the steady-state peak's) keep "
      "their detail in the timeline, trace and snapshot; all: every step");
  flags.add(GateFlags(args.check, gate));
  po::variables_map cli;
  if (!ParseRunConfigWords(
          words, flags, "profile",
          "usage: memprof profile [--config FILE] [--out DIR] [flags]",
          args.config, cli, args.help_text)) {
    args.help = true;
    return args;
  }
  if (args.no_hook && cli.count("check")) {
    throw InputError(
        "--no-hook measures no memory, so there is nothing to "
        "--check; drop one of them");
  }
  if (cli.count("check") && args.check.baseline_path.empty()) {
    throw InputError("--check needs a baseline file");
  }
  for (const char* flag : {"tolerance", "tolerance-bytes", "markdown", "json",
                           "strict", "only-changed", "allow-config-change"}) {
    if (Given(cli, flag) && !cli.count("check")) {
      throw InputError(std::string("--") + flag +
                       " is a check option: add --check BASELINE");
    }
  }
  ApplyGateWords(gate, cli, args.check);
  if (args.snapshot_format != "json" && args.snapshot_format != "pickle") {
    throw InputError("--snapshot-format " + args.snapshot_format +
                     ": unknown; known: json, pickle");
  }
  if (const std::string keep = cli["keep-steps"].as<std::string>();
      keep == "all") {
    args.keep.all = true;
  } else {
    size_t used = 0;
    int value = -1;
    try {
      value = std::stoi(keep, &used);
    } catch (const std::exception&) {
    }
    if (used != keep.size() || value < 0) {
      throw InputError("--keep-steps " + keep +
                       ": expected a number of steps (0 or more) or all");
    }
    args.keep.last = value;
  }
  RequireReadableKeptDetail(args.keep, args.config, cli);
  if (cli.count("memory-limit")) {
    if (args.no_hook) {
      throw InputError(
          "--memory-limit is enforced by the allocator hook; drop --no-hook");
    }
    args.memory_limit_bytes =
        ByteSizeFlag("memory-limit", cli["memory-limit"].as<std::string>());
  }
  return args;
}

namespace {

// --gpu-outside-allocator SIZE, or the default allowance.
po::options_description OutsideAllocatorFlag(std::string& text) {
  po::options_description flags;
  flags.add_options()(
      "gpu-outside-allocator", po::value(&text),
      "on a GPU, the memory outside the caching allocator (CUDA context, "
      "libraries' workspaces, NCCL's buffers) added to its reserved bytes "
      "(default 1GiB, an allowance; a GPU run's report measures it)");
  return flags;
}

int64_t OutsideAllocatorBytes(const std::string& text) {
  if (text.empty()) return kDefaultOutsideAllocatorBytes;
  if (IsZeroSize(text)) return 0;  // 0, 0GiB: none
  return ByteSizeFlag("gpu-outside-allocator", text);
}

}  // namespace

PredictArgs ParsePredictArgs(const std::vector<std::string>& words) {
  PredictArgs args;
  std::string outside;
  po::options_description flags("Options");
  flags.add(OutsideAllocatorFlag(outside));
  flags.add_options()("help,h", "print this help")(
      "json", po::bool_switch(&args.json),
      "print the prediction as JSON (memprof.prediction/1.4)")(
      "table", po::bool_switch(&args.table),
      "also print the model's size table, one row per tensor");
  po::variables_map cli;
  if (!ParseRunConfigWords(
          words, flags, "predict",
          "usage: memprof predict --config FILE [--world-size N] "
          "[--micro-batch B] [--json]\nthe per-rank prediction from the "
          "model's size table; no tensor is allocated",
          args.config, cli, args.help_text)) {
    args.help = true;
    return args;
  }
  args.outside_allocator_bytes = OutsideAllocatorBytes(outside);
  return args;
}

namespace {

constexpr const char* kFitUsage =
    "usage: memprof fit --config FILE --budget 80GiB [--world-size N] "
    "[--micro-batch B] [--measure]\n"
    "       memprof fit --runs DIR1,DIR2[,...] --budget 80GiB [--micro-batch "
    "B] [--measure --command 'PROGRAM ... {micro_batch} ...']\n"
    "does the run fit a device of this size, and if not, will more "
    "data-parallel ranks help? exit 0: it fits; 1: it does not";

// fit --runs: the flags of a fit from runs, which have their model and
// config in them (Note [Fit from runs]).
po::options_description FitRunsFlags(FitArgs& args, std::string& runs,
                                     std::string& command) {
  po::options_description flags("Fit from runs (a program's own model)");
  flags.add_options()(
      "runs", po::value(&runs),
      "fit from these runs (comma-separated directories of finished runs of "
      "one model at two or more micro-batches: memprof profile --out, or a "
      "program's memprof::Session) instead of --config's size table")(
      "command", po::value(&command),
      "with --runs --measure: the program's command line, run through the "
      "shell with {micro_batch} (and {out}, the run's directory) replaced; "
      "it runs with MEMPROF_OUT and MEMPROF_MEMORY_LIMIT set, its own "
      "launcher (torchrun ...) for several ranks")(
      "command-timeout", po::value(&args.command_timeout_s),
      "with --command: seconds each run may take before it is stopped "
      "(default 600)");
  return flags;
}

// `words` name --runs (alone or as --runs=...).
bool NamesRuns(const std::vector<std::string>& words) {
  for (const std::string& word : words) {
    if (word == "--runs" || word.rfind("--runs=", 0) == 0) return true;
  }
  return false;
}

std::vector<std::string> RunDirs(const std::string& runs) {
  std::vector<std::string> dirs;
  std::stringstream list(runs);
  for (std::string item; std::getline(list, item, ',');) {
    if (item.empty()) {
      throw InputError("--runs " + runs +
                       ": an empty directory name; give DIR1,DIR2,...");
    }
    dirs.push_back(item);
  }
  if (dirs.size() < 2) {
    throw InputError("--runs " + runs +
                     ": one run; a law in the micro-batch needs runs at two "
                     "different micro-batches at least: give DIR1,DIR2");
  }
  return dirs;
}

FitArgs ParseFitRunsArgs(const std::vector<std::string>& words) {
  FitArgs args;
  std::string budget, runs;
  po::options_description flags("Options");
  flags.add(FitRunsFlags(args, runs, args.command));
  flags.add_options()("help,h", "print this help")(
      "budget", po::value(&budget), "memory per rank (device size)")(
      "micro-batch", po::value(&args.micro_batch),
      "the micro-batch per rank asked about (default 1)")(
      "measure", po::bool_switch(&args.measure),
      "run --command at the predicted largest micro-batch and one above it "
      "under a memory limit of BUDGET")(
      "out", po::value(&args.out_dir),
      "with --measure: where the runs write (default: a new temporary "
      "directory)");
  po::variables_map cli;
  try {
    po::store(ParseCommandLine(words, flags), cli);
    po::notify(cli);
  } catch (const po::unknown_option& e) {
    throw InputError(
        "fit --runs: unknown flag '" + e.get_option_name() +
        "': a fit from runs takes the model and its config from the runs; "
        "its flags are --runs, --budget, --micro-batch, --measure, "
        "--command, --command-timeout and --out (run 'memprof fit --help')");
  } catch (const po::error& e) {
    throw InputError(std::string("fit --runs: ") + e.what());
  }
  if (HelpRequested(cli, kFitUsage, flags, args.help_text)) {
    args.help = true;
    return args;
  }
  args.run_dirs = RunDirs(runs);
  if (budget.empty()) {
    throw InputError(
        "fit: --budget SIZE is required (e.g. --budget 80GiB); "
        "run 'memprof fit --help'");
  }
  args.budget_bytes = ByteSizeFlag("budget", budget);
  if (args.micro_batch < 1) {
    throw InputError("--micro-batch " + std::to_string(args.micro_batch) +
                     ": expected a micro-batch per rank of 1 or more");
  }
  if (args.measure != !args.command.empty()) {
    throw InputError(
        args.measure
            ? "fit --runs --measure runs your program: give it as --command "
              "'PROGRAM ... {micro_batch} ...'"
            : "--command is what fit --runs --measure runs: add --measure");
  }
  if (args.measure && args.command.find("{micro_batch}") == std::string::npos) {
    throw InputError("--command '" + args.command +
                     "' has no {micro_batch}: write it where the program "
                     "takes its micro-batch (--micro-batch {micro_batch})");
  }
  // A day, as ddp.timeout_s: longer is a hang, and now + it must fit the
  // clock.
  if (args.command_timeout_s < 1 || args.command_timeout_s > 86400) {
    throw InputError("--command-timeout " +
                     std::to_string(args.command_timeout_s) +
                     ": expected seconds, from 1 to 86400 (a day)");
  }
  if (!args.out_dir.empty() && !args.measure) {
    throw InputError("--out is where --measure's runs write: add --measure");
  }
  return args;
}

}  // namespace

FitArgs ParseFitArgs(const std::vector<std::string>& words) {
  if (NamesRuns(words)) return ParseFitRunsArgs(words);
  FitArgs args;
  std::string budget, outside, runs, command;
  po::options_description flags("Options");
  flags.add(OutsideAllocatorFlag(outside));
  flags.add_options()("help,h", "print this help")(
      "budget", po::value(&budget),
      "memory per rank (device size): 80G, 80GiB, 80GB, 512MiB or bytes; "
      "G and GiB are 2^30 bytes, GB 10^9")(
      "measure", po::bool_switch(&args.measure),
      "also run micro-batches of one rank under --memory-limit BUDGET: "
      "micro-batch 1, then the largest that runs to completion")(
      "out", po::value(&args.out_dir),
      "with --measure: where the runs write (default: a new temporary "
      "directory)");
  flags.add(FitRunsFlags(args, runs, command));
  po::variables_map cli;
  if (!ParseRunConfigWords(words, flags, "fit", kFitUsage, args.config, cli,
                           args.help_text)) {
    args.help = true;
    return args;
  }
  for (const char* flag : {"command", "command-timeout"}) {
    if (cli.count(flag)) {
      throw InputError(std::string("--") + flag +
                       " runs a program of your own: it goes with --runs "
                       "(fit --config --measure runs memprof profile)");
    }
  }
  if (budget.empty()) {
    throw InputError(
        "fit: --budget SIZE is required (e.g. --budget 80GiB); "
        "run 'memprof fit --help'");
  }
  args.budget_bytes = ByteSizeFlag("budget", budget);
  args.outside_allocator_bytes = OutsideAllocatorBytes(outside);
  if (!args.out_dir.empty() && !args.measure) {
    throw InputError("--out is where --measure's runs write: add --measure");
  }
  args.profile_words = ProfileWords(
      words, {"budget", "measure", "out", "gpu-outside-allocator", "world-size",
              "ddp.world_size", "micro-batch", "train.micro_batch",
              "global-batch", "train.global_batch"});
  return args;
}

namespace {

// Note [Sweep's accumulation list]
// `memprof sweep --grad-accum 1,2,4` takes a list, where every other
// command's --grad-accum is one train.grad_accum: the list and its flag are
// taken out of the words before the config's flags are parsed, and each
// point passes its own --grad-accum to its run. Returns the words without
// them; `list` gets the flag's value ("" when not given).
std::vector<std::string> TakeGradAccumList(
    const std::vector<std::string>& words, std::string& list) {
  std::vector<std::string> kept;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word == "--grad-accum") {
      if (i + 1 == words.size()) {
        throw InputError("--grad-accum needs a list: --grad-accum 1,2,4,8");
      }
      list = words[++i];
    } else if (word.rfind("--grad-accum=", 0) == 0) {
      list = word.substr(std::string("--grad-accum=").size());
    } else {
      kept.push_back(word);
    }
  }
  return kept;
}

// "1,2,4" -> {1, 2, 4}: each in [1, kMaxGradAccum], none twice.
std::vector<int64_t> GradAccumList(const std::string& list) {
  std::vector<int64_t> values;
  std::stringstream items(list);
  for (std::string item; std::getline(items, item, ',');) {
    char* end = nullptr;
    const long long k = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || k < 1 || k > kMaxGradAccum) {
      throw InputError("--grad-accum " + list + ": '" + item +
                       "' is not a number of micro-batches per optimizer "
                       "step in [1, " +
                       std::to_string(kMaxGradAccum) + "]");
    }
    if (std::find(values.begin(), values.end(), k) != values.end()) {
      throw InputError("--grad-accum " + list + ": " + std::to_string(k) +
                       " is given twice; give each accumulation once");
    }
    values.push_back(k);
  }
  if (values.empty()) {
    throw InputError("--grad-accum needs a list: --grad-accum 1,2,4,8");
  }
  return values;
}

}  // namespace

SweepArgs ParseSweepArgs(const std::vector<std::string>& all_words) {
  SweepArgs args;
  std::string accums;  // Note [Sweep's accumulation list]
  const std::vector<std::string> words = TakeGradAccumList(all_words, accums);
  if (!accums.empty()) args.grad_accums = GradAccumList(accums);
  std::string sizes, stages;
  po::options_description flags("Options");
  flags.add_options()("help,h", "print this help")(
      "world-sizes", po::value(&sizes),
      "the numbers of ranks to run, comma-separated: 1,2,4")(
      "zero-stages", po::value(&stages),
      "ddp.zero_stage values to run at each world size, comma-separated: "
      "0,1 (default: the config's)")(
      "out", po::value(&args.out_dir),
      "output directory: one run per world size and the sweep's table and "
      "charts (default: out/sweep)");
  po::variables_map cli;
  if (!ParseRunConfigWords(
          words, flags, "sweep",
          "usage: memprof sweep --config FILE --world-sizes 1,2,4 "
          "--global-batch G [--zero-stages 0,1] [--grad-accum 1,2,4,8] "
          "[--out DIR]\nruns each world size N (and ZeRO stage, and "
          "accumulation K: --grad-accum's list of micro-batches per optimizer "
          "step; --world-sizes then defaults to the config's) at micro-batch "
          "G/(N K): per-rank bytes by category and step time (compute, "
          "all-reduce, parameter exchange) against N and K",
          args.config, cli, args.help_text)) {
    args.help = true;
    return args;
  }
  if (sizes.empty() && !args.grad_accums.empty()) {
    sizes = std::to_string(args.config.ddp.world_size);
  }
  if (sizes.empty()) {
    throw InputError(
        "sweep: --world-sizes N,N,... is required (e.g. 1,2,4), or "
        "--grad-accum K,K,... at the config's world size");
  }
  std::stringstream list(sizes);
  for (std::string item; std::getline(list, item, ',');) {
    char* end = nullptr;
    const long long n = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || n < 1 || n > 4096) {
      throw InputError("--world-sizes " + sizes + ": '" + item +
                       "' is not a number of ranks in [1, 4096]");
    }
    if (std::find(args.world_sizes.begin(), args.world_sizes.end(), n) !=
        args.world_sizes.end()) {
      throw InputError("--world-sizes " + sizes + ": " + std::to_string(n) +
                       " is given twice; give each world size once");
    }
    args.world_sizes.push_back(n);
  }
  std::stringstream stage_list(stages);
  for (std::string item;
       !stages.empty() && std::getline(stage_list, item, ',');) {
    if (item != "0" && item != "1") {
      throw InputError("--zero-stages " + stages + ": '" + item +
                       "' is not a ZeRO stage memprof runs (0 or 1)");
    }
    if (std::find(args.zero_stages.begin(), args.zero_stages.end(),
                  item == "1") != args.zero_stages.end()) {
      throw InputError("--zero-stages " + stages + ": " + item +
                       " is given twice; give each stage once");
    }
    args.zero_stages.push_back(item == "1");
  }
  args.global_batch = args.config.train.global_batch;
  if (args.global_batch < 1) {
    throw InputError(
        "sweep: --global-batch G is required: each world size N "
        "runs at micro-batch G/N");
  }
  // Each point's micro-batch follows from G, N and K: a --micro-batch
  // would be dropped (it used to be, while the console named it).
  if (cli.count("micro-batch") || cli.count("train.micro_batch")) {
    throw InputError(
        std::string("sweep: ") +
        (cli.count("micro-batch") ? "--micro-batch" : "--train.micro_batch") +
        " is not a sweep flag: each world size N runs at micro-batch "
        "G/(N K) of --global-batch G (K: --grad-accum, 1 unless given); drop "
        "it, and give --grad-accum K to accumulate");
  }
  for (int64_t n : args.world_sizes) {
    if (args.global_batch % n != 0) {
      throw InputError("--global-batch " + std::to_string(args.global_batch) +
                       " is not divisible by world size " + std::to_string(n) +
                       " (from --world-sizes " + sizes + ")");
    }
    for (int64_t k : args.grad_accums) {
      if (args.global_batch % (n * k) != 0) {
        throw InputError("--global-batch " + std::to_string(args.global_batch) +
                         " is not divisible by world size " +
                         std::to_string(n) + " x accumulation " +
                         std::to_string(k) + " (from --grad-accum " + accums +
                         "): give a global batch that is a multiple of " +
                         std::to_string(n * k));
      }
    }
  }
  args.profile_words =
      ProfileWords(words, {"world-sizes", "zero-stages", "out", "world-size",
                           "ddp.world_size", "micro-batch", "train.micro_batch",
                           "global-batch", "train.global_batch"});
  if (!args.grad_accums.empty()) {
    args.profile_words = ProfileWords(args.profile_words, {"train.grad_accum"});
  }
  if (!args.zero_stages.empty()) {
    args.profile_words = ProfileWords(args.profile_words, {"ddp.zero_stage"});
  }
  return args;
}

}  // namespace memprof
