// The command line: the only place that parses flags and config files
// (Boost.Program_options). A section name prefixes its keys ("[mlp] hidden"
// is "mlp.hidden"); every key is also a flag ("--mlp.hidden 64") and flags
// win over the file. Errors are InputError naming the file and line, or the
// flag, and the remedy.
#pragma once

#include <string>
#include <vector>

#include "profiler/run_config.h"

namespace memprof {

struct ProfileArgs {
  RunConfig config;
  std::string out_dir = "out";
  std::vector<std::string> words;  // as given, for launched ranks
  bool help = false;
  std::string help_text;
};

// `args` are the words after the command name ("profile").
ProfileArgs ParseProfileArgs(const std::vector<std::string>& args);

// 1-based line of `key` ("mlp.hidden") in an INI file; 0 when absent.
int FindKeyLine(const std::string& path, const std::string& key);

}  // namespace memprof
