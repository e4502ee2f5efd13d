#include "profiler/cli/config_cli.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include <boost/program_options.hpp>

#include "models/config_validation.h"
#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"
#include "profiler/cli/flag_parsing.h"
#include "profiler/predict/cuda_prediction.h"

namespace memprof {
namespace po = boost::program_options;
namespace {

// Every config key, bound to its RunConfig field.
po::options_description ConfigKeys(RunConfig& c) {
  po::options_description keys("Config keys (in a file, or as --section.key)");
  keys.add_options()("model", po::value(&c.model),
                     "model family: mlp | gpt | resnet")(
      "mlp.input", po::value(&c.mlp.input), "input features")(
      "mlp.hidden", po::value(&c.mlp.hidden), "hidden width")(
      "mlp.depth", po::value(&c.mlp.depth), "number of hidden layers")(
      "mlp.output", po::value(&c.mlp.output), "output classes")(
      "gpt.layers", po::value(&c.gpt.layers), "transformer blocks")(
      "gpt.d_model", po::value(&c.gpt.d_model), "model width")(
      "gpt.heads", po::value(&c.gpt.heads), "attention heads (divide d_model)")(
      "gpt.seq_len", po::value(&c.gpt.seq_len), "tokens per sample")(
      "gpt.vocab", po::value(&c.gpt.vocab), "vocabulary size")(
      "gpt.dropout", po::value(&c.gpt.dropout), "dropout probability")(
      "resnet.depth", po::value(&c.resnet.depth), "18 | 34 | 50 | 101 | 152")(
      "resnet.width", po::value(&c.resnet.width),
      "channels of the first stage (64 in the published models)")(
      "resnet.resolution", po::value(&c.resnet.resolution),
      "input images are resolution x resolution")(
      "resnet.classes", po::value(&c.resnet.classes), "output classes")(
      "train.micro_batch", po::value(&c.train.micro_batch),
      "samples per rank per step")(
      "train.global_batch", po::value(&c.train.global_batch),
      "samples per step over all ranks (0: unset)")(
      "train.steps", po::value(&c.train.steps), "training steps")(
      "train.optimizer", po::value(&c.train.optimizer), "adam | adamw | sgd")(
      "train.momentum", po::value(&c.train.momentum),
      "sgd's momentum, in [0, 1) (default 0: no momentum buffer)")(
      "train.lr", po::value(&c.train.lr), "learning rate")(
      "train.dtype", po::value(&c.train.dtype), "float32")(
      "train.activation_checkpointing",
      po::value(&c.train.activation_checkpointing),
      "none | blocks (each GPT or ResNet block recomputed in backward)")(
      "train.zero_grad_set_to_none", po::value(&c.train.zero_grad_set_to_none),
      "free gradients after each step instead of zeroing them")(
      "train.seed", po::value(&c.train.seed), "random seed")(
      "train.device", po::value(&c.train.device),
      "cpu | cuda (local rank r trains on GPU r)")(
      "ddp.world_size", po::value(&c.ddp.world_size), "number of ranks")(
      "ddp.bucket_cap_mb", po::value(&c.ddp.bucket_cap_mb),
      "DDP bucket size in MiB")("ddp.gradient_as_bucket_view",
                                po::value(&c.ddp.gradient_as_bucket_view),
                                "gradients are views into the DDP buckets")(
      "ddp.timeout_s", po::value(&c.ddp.timeout_s),
      "collective timeout in seconds")(
      "ddp.backend", po::value(&c.ddp.backend),
      "gloo | nccl (default: nccl on cuda, gloo on cpu)")(
      "ddp.zero_stage", po::value(&c.ddp.zero_stage),
      "0: replicated optimizer state; 1: sharded across ranks (ZeRO-1)");
  return keys;
}

struct Aliases {
  int64_t world_size = 0, micro_batch = 0, global_batch = 0, steps = 0;
};

// --config and the short spellings of common keys.
po::options_description AliasFlags(std::string& config_path, Aliases& a) {
  po::options_description flags("Config");
  flags.add_options()("config", po::value(&config_path), "INI config file")(
      "world-size", po::value(&a.world_size), "= --ddp.world_size")(
      "micro-batch", po::value(&a.micro_batch), "= --train.micro_batch")(
      "global-batch", po::value(&a.global_batch), "= --train.global_batch")(
      "steps", po::value(&a.steps), "= --train.steps");
  return flags;
}

std::string At(const std::string& path, int line) {
  return line > 0 ? path + ":" + std::to_string(line) : path;
}

// Where a key's value came from, for error messages.
std::string SourceOf(const std::string& key, const po::variables_map& cli,
                     const std::string& path) {
  if (cli.count(key)) return "--" + key;
  if (!path.empty())
    return At(path, FindKeyLine(path, key)) + ": key '" + key + "'";
  return "default of '" + key + "'";
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

int64_t ByteSizeFlag(const std::string& flag, const std::string& text) {
  const int64_t bytes = ParseByteSize(text);
  if (bytes < 1) {
    throw InputError("--" + flag + " " + text +
                     ": expected a size such as 2GiB, 512MiB, 80GB or a "
                     "number of bytes");
  }
  return bytes;
}

int FindKeyLine(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line, section;
  for (int number = 1; std::getline(in, line); ++number) {
    const size_t begin = line.find_first_not_of(" \t");
    if (begin == std::string::npos || line[begin] == '#' || line[begin] == ';')
      continue;
    if (line[begin] == '[') {
      const size_t end = line.find(']', begin);
      section = line.substr(begin + 1, end - begin - 1);
      continue;
    }
    std::string name = line.substr(begin, line.find('=') - begin);
    name.erase(name.find_last_not_of(" \t") + 1);
    if ((section.empty() ? name : section + "." + name) == key) return number;
  }
  return 0;
}

namespace {

// Each short flag and the config key it spells.
constexpr std::pair<const char*, const char*> kAliasKeys[] = {
    {"world-size", "ddp.world_size"},
    {"micro-batch", "train.micro_batch"},
    {"global-batch", "train.global_batch"},
    {"steps", "train.steps"}};

// Adds the keys of the INI file at `path` to `vm` (the command line's
// values win). InputError names the file, and the line where there is one.
void StoreConfigFile(const std::string& path,
                     const po::options_description& keys,
                     const std::string& command, po::variables_map& vm) {
  std::ifstream file(path);
  if (!file || std::filesystem::is_directory(path)) {
    const std::string reason =
        file ? "it is a directory" : std::strerror(errno);
    throw InputError("cannot read config file '" + path + "': " + reason +
                     "; pass an existing file to --config");
  }
  try {
    po::store(po::parse_config_file(file, keys), vm);
  } catch (const po::unknown_option& e) {
    const std::string key = e.get_option_name();
    throw InputError(At(path, FindKeyLine(path, key)) + ": unknown key '" +
                     key + "'; see 'memprof " + command +
                     " --help' for the keys");
  } catch (const po::invalid_config_file_syntax& e) {
    throw InputError(path + ": " + e.what() +
                     "; lines are 'key = value' or '[section]'");
  } catch (const po::error_with_option_name& e) {
    const std::string key = e.get_option_name();
    throw InputError(At(path, key.empty() ? 0 : FindKeyLine(path, key)) + ": " +
                     e.what());
  } catch (const po::error& e) {
    throw InputError(path + ": " + e.what());
  }
}

// Sets each key a short flag on the command line gave; InputError when the
// key was given too.
void ApplyAliases(const Aliases& aliases, const po::variables_map& cli,
                  RunConfig& config) {
  int64_t* fields[] = {&config.ddp.world_size, &config.train.micro_batch,
                       &config.train.global_batch, &config.train.steps};
  const int64_t values[] = {aliases.world_size, aliases.micro_batch,
                            aliases.global_batch, aliases.steps};
  for (int i = 0; i < 4; ++i) {
    const auto [flag, key] = kAliasKeys[i];
    if (!cli.count(flag)) continue;
    if (cli.count(key)) {
      throw InputError(std::string("--") + flag + " and --" + key +
                       " both given; use one");
    }
    *fields[i] = values[i];
  }
}

// ValidateRunConfig, with the error naming where the bad value came from:
// the flag, the file and line, or the default.
void ValidateWhere(const RunConfig& config, const po::variables_map& cli,
                   const std::string& path) {
  try {
    ValidateRunConfig(config);
  } catch (const ConfigError& e) {
    const std::string& key = e.key();
    for (const auto& [flag, aliased] : kAliasKeys) {
      if (key == aliased && cli.count(flag)) {
        throw InputError(std::string("--") + flag + ": " + e.what());
      }
    }
    throw InputError(SourceOf(key, cli, path) + ": " + e.what());
  }
}

// The flags and config file of a command that runs (or predicts) a config:
// `command_flags` plus every config key. Reads --config, applies the short
// aliases and validates. Returns false for --help, with its text in `help`.
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
    const po::parsed_options parsed =
        po::command_line_parser(words).options(all).run();
    for (const po::option& option : parsed.options) {
      if (option.position_key >= 0) {  // a word that is no flag's value
        throw InputError("unexpected argument '" +
                         (option.value.empty() ? "" : option.value.front()) +
                         "': every argument of 'memprof " + command +
                         "' is a --flag (run 'memprof " + command +
                         " --help' for the list)");
      }
    }
    po::store(parsed, cli);
  } catch (const po::unknown_option& e) {
    throw InputError("unknown flag '" + e.get_option_name() +
                     "'; run 'memprof " + command + " --help' for the list");
  } catch (const po::error& e) {
    throw InputError(std::string("command line: ") + e.what());
  }
  if (HelpRequested(cli, usage, all, help)) return false;

  po::variables_map vm = cli;
  const std::string path =
      cli.count("config") ? cli["config"].as<std::string>() : "";
  if (!path.empty()) StoreConfigFile(path, keys, command, vm);
  try {
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError(std::string("command line: ") + e.what());
  }
  config.source = path;
  ApplyAliases(aliases, cli, config);
  // A model key for another model would be ignored: say so instead.
  for (const char* section : {"mlp", "gpt", "resnet"}) {
    if (config.model == section) continue;
    for (const auto& [key, value] : cli) {
      if (key.rfind(std::string(section) + ".", 0) == 0) {
        throw InputError("--" + key + ": the model is " + config.model +
                         ", which has no " + section +
                         " keys; drop the flag or choose --model " + section);
      }
    }
  }
  // Both on the command line, the global batch would silently win.
  const bool micro = cli.count("micro-batch") || cli.count("train.micro_batch");
  const bool global =
      cli.count("global-batch") || cli.count("train.global_batch");
  if (micro && global && config.train.global_batch > 0) {
    throw InputError(
        "--micro-batch and --global-batch both given: the global batch "
        "decides the micro-batch (global / world size); give one of them");
  }
  ValidateWhere(config, cli, path);
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
      "no-hook", po::bool_switch(&args.no_hook),
      "train without the allocator hook, to time its cost: step times "
      "only, no memory figures (bench/step_overhead_bench)")(
      "memory-limit", po::value<std::string>(),
      "emulate a device of this size per rank (2GiB, 512MiB, 80GB, bytes): "
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
                           "strict", "allow-config-change"}) {
    if (Given(cli, flag) && !cli.count("check")) {
      throw InputError(std::string("--") + flag +
                       " is a check option: add --check BASELINE");
    }
  }
  ApplyGateWords(gate, cli, args.check.tolerances);
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
  if (text == "0") return 0;
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
      "print the prediction as JSON (memprof.prediction/1.3)")(
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

FitArgs ParseFitArgs(const std::vector<std::string>& words) {
  FitArgs args;
  std::string budget, outside;
  po::options_description flags("Options");
  flags.add(OutsideAllocatorFlag(outside));
  flags.add_options()("help,h", "print this help")(
      "budget", po::value(&budget),
      "memory per rank (device size): 80GiB, 512MiB, 80GB or bytes")(
      "measure", po::bool_switch(&args.measure),
      "also run micro-batches of one rank under --memory-limit BUDGET: "
      "micro-batch 1, then the largest that runs to completion")(
      "out", po::value(&args.out_dir),
      "with --measure: where the runs write (default: a new temporary "
      "directory)");
  po::variables_map cli;
  if (!ParseRunConfigWords(
          words, flags, "fit",
          "usage: memprof fit --config FILE --budget 80GiB [--world-size N] "
          "[--micro-batch B] [--measure]\ndoes the run fit a device of this "
          "size, and if not, will more data-parallel ranks help? exit 0: it "
          "fits; 1: it does not",
          args.config, cli, args.help_text)) {
    args.help = true;
    return args;
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

SweepArgs ParseSweepArgs(const std::vector<std::string>& words) {
  SweepArgs args;
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
          "--global-batch G [--zero-stages 0,1] [--out DIR]\nruns each world "
          "size N (and ZeRO stage) at micro-batch G/N: per-rank bytes by "
          "category and step time (compute, all-reduce, parameter exchange) "
          "against N",
          args.config, cli, args.help_text)) {
    args.help = true;
    return args;
  }
  if (sizes.empty()) {
    throw InputError("sweep: --world-sizes N,N,... is required (e.g. 1,2,4)");
  }
  std::stringstream list(sizes);
  for (std::string item; std::getline(list, item, ',');) {
    char* end = nullptr;
    const long long n = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || n < 1 || n > 4096) {
      throw InputError("--world-sizes " + sizes + ": '" + item +
                       "' is not a number of ranks in [1, 4096]");
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
    args.zero_stages.push_back(item == "1");
  }
  args.global_batch = args.config.train.global_batch;
  if (args.global_batch < 1) {
    throw InputError(
        "sweep: --global-batch G is required: each world size N "
        "runs at micro-batch G/N");
  }
  for (int64_t n : args.world_sizes) {
    if (args.global_batch % n != 0) {
      throw InputError("--global-batch " + std::to_string(args.global_batch) +
                       " is not divisible by world size " + std::to_string(n) +
                       " (from --world-sizes " + sizes + ")");
    }
  }
  args.profile_words =
      ProfileWords(words, {"world-sizes", "zero-stages", "out", "world-size",
                           "ddp.world_size", "micro-batch", "train.micro_batch",
                           "global-batch", "train.global_batch"});
  if (!args.zero_stages.empty()) {
    args.profile_words = ProfileWords(args.profile_words, {"ddp.zero_stage"});
  }
  return args;
}

}  // namespace memprof
