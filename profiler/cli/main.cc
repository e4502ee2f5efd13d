// memprof: where does each rank's memory go in a LibTorch training step?
// Commands and exit codes: DESIGN.md "Commands"; docs/reference.md. This
// executable does not load LibTorch: `profile` runs in memprof-profile.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "profiler/base/errors.h"
#include "profiler/cli/check_command.h"
#include "profiler/cli/command_main.h"
#include "profiler/cli/config_cli.h"
#include "profiler/cli/fit_command.h"
#include "profiler/cli/fit_runs_command.h"
#include "profiler/cli/predict_command.h"
#include "profiler/cli/profile_child.h"
#include "profiler/cli/report_command.h"
#include "profiler/cli/sweep_command.h"
#include "profiler/session/git_sha.h"  // generated: cmake/memprofGitSha.cmake

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
    "  report --run DIR\n"
    "  fit --config FILE --budget 80G [--world-size N] [--measure]\n"
    "  fit --runs DIR1,DIR2 --budget 80G [--measure --command CMD]\n"
    "  sweep --config FILE --world-sizes 1,2,4 --global-batch G [--out DIR]\n"
    "  help [COMMAND]\n"
    "  --version\n"
    "run 'memprof help COMMAND' (or 'memprof COMMAND --help') for its "
    "options, each with its default and choices\n";

constexpr const char* kKnownCommands =
    "profile, predict, baseline, check, report, fit, sweep, help";

// Parses a command's words, prints its --help or runs it.
template <typename Args>
int Dispatch(const std::vector<std::string>& words,
             Args (*parse)(const std::vector<std::string>&),
             int (*run)(const Args&)) {
  const Args args = parse(words);
  if (args.help) {
    std::cout << args.help_text;
    return memprof::kExitOk;
  }
  return run(args);
}

// `memprof fit`: from --config's size table, or from --runs.
int RunFit(const memprof::FitArgs& args) {
  return args.run_dirs.empty() ? memprof::RunFitCommand(args)
                               : memprof::RunFitRunsCommand(args);
}

// Runs `command` with `rest`; `memprof help COMMAND` runs it with --help.
int RunCommand(const std::string& command,
               const std::vector<std::string>& rest) {
  using namespace memprof;
  if (command == "profile") {  // here for `help profile` only
    std::cout << ParseProfileArgs(rest).help_text;
    return kExitOk;
  }
  if (command == "predict") {
    return Dispatch(rest, &ParsePredictArgs, &RunPredictCommand);
  }
  if (command == "baseline") {
    return Dispatch(rest, &ParseBaselineArgs, &RunBaselineCommand);
  }
  if (command == "check")
    return Dispatch(rest, &ParseCheckArgs, &RunCheckCommand);
  if (command == "report") {
    return Dispatch(rest, &ParseReportArgs, &RunReportCommand);
  }
  if (command == "fit") return Dispatch(rest, &ParseFitArgs, &RunFit);
  if (command == "sweep")
    return Dispatch(rest, &ParseSweepArgs, &RunSweepCommand);
  throw memprof::InputError("unknown command '" + command +
                            "'; known commands: " + kKnownCommands +
                            " (run 'memprof help')");
}

int Main(const std::vector<std::string>& words) {
  using namespace memprof;
  if (words.empty() || words[0] == "--help" || words[0] == "-h") {
    std::cout << kUsage;
    return words.empty() ? kExitBadInput : kExitOk;
  }
  if (words.size() == 1 && (words[0] == "--version" || words[0] == "version")) {
    std::cout << "memprof " << MEMPROF_VERSION << " (git " << MEMPROF_GIT_SHA
              << ")\n";
    return kExitOk;
  }
  if (words[0] == "help") {
    if (words.size() == 1 || (words.size() == 2 && words[1] == "help")) {
      std::cout << kUsage;
      return kExitOk;
    }
    if (words.size() > 2) {
      throw InputError(
          "usage: memprof help [COMMAND], with one of the commands: " +
          std::string(kKnownCommands));
    }
    return RunCommand(words[1], {"--help"});
  }
  return RunCommand(words[0],
                    std::vector<std::string>(words.begin() + 1, words.end()));
}

// `profile` runs in memprof-profile, next to this executable, with the
// same arguments (the environment, and so any rank variables, carry over).
[[noreturn]] void ExecProfile(char** argv) {
  const std::string path = memprof::ProfileExecutable();
  ::execv(path.c_str(), argv);
  throw memprof::RunFailure("cannot start " + path + ": " +
                            std::strerror(errno) +
                            "; build the memprof-profile target next to "
                            "memprof");
}

}  // namespace

int main(int argc, char** argv) {
  return memprof::RunWithExitCodes([&] {
    if (argc >= 2 && std::string(argv[1]) == "profile") ExecProfile(argv);
    return Main(std::vector<std::string>(argv + 1, argv + argc));
  });
}
