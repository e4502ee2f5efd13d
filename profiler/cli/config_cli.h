// The command line: the only place that parses flags and config files
// (Boost.Program_options). A section name prefixes its keys ("[mlp] hidden"
// is "mlp.hidden"); every key is also a flag ("--mlp.hidden 64") and flags
// win over the file. Errors are InputError naming the file and line, or the
// flag, and the remedy.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "profiler/base/keep_steps.h"
#include "profiler/base/run_config.h"
#include "profiler/gate/gate_run.h"
#include "profiler/gate/tolerance.h"

namespace memprof {

struct ProfileArgs {
  RunConfig config;
  std::string out_dir = "out";
  CheckOptions check;
  std::vector<std::string> words;  // as given, for launched ranks
  bool no_hook = false;  // --no-hook: step times only (main() reads it too)
  // --quiet: no progress line, no list of the local ranks' pids (Note
  // [Progress line] in profiler/cli/progress_line.h).
  bool quiet = false;
  int64_t memory_limit_bytes = 0;  // --memory-limit; 0: none
  // --skip-memory-check: start even when the local ranks' predicted memory
  // is over what this machine has available (Note [Local memory]).
  bool skip_memory_check = false;
  // --snapshot-format: json (snapshot-<r>.json) or pickle (.pickle, for
  // viewers that read pickle only; Note [Pickle writer]).
  std::string snapshot_format = "json";
  // --keep-steps N | all: the steps whose detail the timeline, the trace
  // and the snapshot keep besides step 1 (Note [Kept steps]).
  KeepSteps keep;
  bool help = false;
  std::string help_text;
};

// `args` are the words after the command name ("profile").
ProfileArgs ParseProfileArgs(const std::vector<std::string>& args);

struct PredictArgs {
  RunConfig config;
  // --gpu-outside-allocator: the GPU memory outside the caching allocator
  // (Note [Outside-allocator allowance]).
  int64_t outside_allocator_bytes = 0;
  bool json = false;
  bool table = false;  // also print the size table, row by row
  bool help = false;
  std::string help_text;
};

// `args` are the words after "predict".
PredictArgs ParsePredictArgs(const std::vector<std::string>& args);

struct FitArgs {
  RunConfig config;
  int64_t budget_bytes = 0;
  int64_t outside_allocator_bytes = 0;  // as PredictArgs'
  bool measure = false;  // also run micro-batches under --memory-limit
  std::string out_dir;   // --measure's runs; "" : a temporary directory
  // The config words to pass on to `memprof profile` (the config file and
  // its --section.key flags, without the batch, world-size and fit flags).
  std::vector<std::string> profile_words;
  // --runs DIR1,DIR2,...: fit from these runs instead of --config's size
  // table (Note [Fit from runs]); `config` is then unset.
  std::vector<std::string> run_dirs;
  int64_t micro_batch = 1;  // with --runs: the micro-batch asked about
  // With --runs --measure: the program's command line, {micro_batch} (and
  // {out}) in it replaced for each run, and how long each may take.
  std::string command;
  int64_t command_timeout_s = 600;
  bool help = false;
  std::string help_text;
};

// `args` are the words after "fit".
FitArgs ParseFitArgs(const std::vector<std::string>& args);

struct SweepArgs {
  RunConfig config;
  std::vector<int64_t> world_sizes;  // --world-sizes 1,2,4
  // --zero-stages 0,1 (ddp.zero_stage each); empty: the config's stage.
  std::vector<int64_t> zero_stages;
  // --grad-accum 1,2,4 (train.grad_accum each, at the same global batch);
  // empty: the config's.
  std::vector<int64_t> grad_accums;
  int64_t global_batch = 0;
  std::string out_dir = "out/sweep";
  std::vector<std::string> profile_words;  // as FitArgs::profile_words
  bool help = false;
  std::string help_text;
};

// `args` are the words after "sweep".
SweepArgs ParseSweepArgs(const std::vector<std::string>& args);

struct CheckArgs {
  std::string run_dir;
  CheckOptions check;
  bool help = false;
  std::string help_text;
};

struct BaselineArgs {
  std::string run_dir;
  std::string out_path;
  std::map<std::string, Tolerance> tolerances;  // --tolerance KEY=VALUE
  bool help = false;
  std::string help_text;
};

struct ReportArgs {
  std::string run_dir;
  bool help = false;
  std::string help_text;
};

// `args` are the words after "check" / "baseline" / "report".
CheckArgs ParseCheckArgs(const std::vector<std::string>& args);
BaselineArgs ParseBaselineArgs(const std::vector<std::string>& args);
ReportArgs ParseReportArgs(const std::vector<std::string>& args);

// The bytes of a size flag ("--budget 80GiB"); InputError naming the flag.
int64_t ByteSizeFlag(const std::string& flag, const std::string& text);

// 1-based line of `key` ("mlp.hidden") in an INI file; 0 when absent.
int FindKeyLine(const std::string& path, const std::string& key);

// The largest config file memprof reads (Note [File size caps] in
// profiler/base/regular_file.h).
inline constexpr int64_t kMaxConfigFileBytes = int64_t{1} << 20;

// The text of the config file at `path`; InputError "cannot read config
// file 'PATH': REASON; pass an INI file to --config" when it cannot be
// read, is not a regular file (a FIFO, /dev/zero) or is over
// kMaxConfigFileBytes.
std::string ReadConfigFile(const std::string& path);

}  // namespace memprof
