// memprof: where does each rank's memory go in a LibTorch training step?
// Commands and exit codes: DESIGN.md "Commands"; README.
#include <iostream>
#include <string>
#include <vector>

#include "profiler/check_command.h"
#include "profiler/config_cli.h"
#include "profiler/cpu_hook.h"
#include "profiler/errors.h"
#include "profiler/predict_command.h"
#include "profiler/profile_command.h"
#include "profiler/rank_env.h"

#include <unistd.h>

namespace {

constexpr const char* kUsage =
    "usage: memprof <command> [options]\n"
    "commands:\n"
    "  profile --config FILE [--out DIR] [--section.key VALUE ...] "
    "[--check BASELINE]\n"
    "  predict --config FILE [--world-size N] [--micro-batch B] [--json]\n"
    "  baseline --run DIR --out FILE\n"
    "  check --baseline FILE --run DIR [--tolerance 1%] [--markdown FILE] "
    "[--strict]\n"
    "run 'memprof <command> --help' for its options\n";

int Main(const std::vector<std::string>& words) {
  if (words.empty() || words[0] == "--help" || words[0] == "-h") {
    std::cout << kUsage;
    return words.empty() ? memprof::kExitBadInput : memprof::kExitOk;
  }
  const std::vector<std::string> rest(words.begin() + 1, words.end());
  if (words[0] == "profile") {
    memprof::ProfileArgs args = memprof::ParseProfileArgs(rest);
    if (args.help) {
      std::cout << args.help_text;
      return memprof::kExitOk;
    }
    return memprof::RunProfileCommand(args);
  }
  if (words[0] == "predict") {
    const memprof::PredictArgs args = memprof::ParsePredictArgs(rest);
    if (args.help) {
      std::cout << args.help_text;
      return memprof::kExitOk;
    }
    return memprof::RunPredictCommand(args);
  }
  if (words[0] == "baseline") {
    const memprof::BaselineArgs args = memprof::ParseBaselineArgs(rest);
    if (args.help) {
      std::cout << args.help_text;
      return memprof::kExitOk;
    }
    return memprof::RunBaselineCommand(args);
  }
  if (words[0] == "check") {
    const memprof::CheckArgs args = memprof::ParseCheckArgs(rest);
    if (args.help) {
      std::cout << args.help_text;
      return memprof::kExitOk;
    }
    return memprof::RunCheckCommand(args);
  }
  throw memprof::InputError(
      "unknown command '" + words[0] +
      "'; known commands: profile, predict, baseline, check");
}

// "rank 1 on host (pid 42): " when this process is one rank of a job.
std::string Origin() {
  try {
    const auto topology = memprof::TopologyFromEnvironment();
    if (!topology) return "";
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    return "rank " + std::to_string(topology->rank) + " on " + host + " (pid " +
           std::to_string(::getpid()) + "): ";
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace

// `memprof profile ... --no-hook` times training without the hook.
bool WithoutHook(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "profile") return false;
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--no-hook") return true;
  }
  return false;
}

int main(int argc, char** argv) {
  // Before anything can make a tensor: every block must be seen.
  if (!WithoutHook(argc, argv)) memprof::InstallCpuHook();
  try {
    return Main(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const memprof::InputError& e) {
    std::cerr << "memprof: " << Origin() << "error: " << e.what() << "\n";
    return memprof::kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "memprof: " << Origin() << "run failed: " << e.what() << "\n";
    return memprof::kExitRunFailed;
  }
}
