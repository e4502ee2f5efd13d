// memprof-profile: `memprof profile` itself, the one executable that links
// LibTorch. `memprof` hands `profile` to it (so predict, baseline and check
// start without loading LibTorch), and the launcher starts every local rank
// as another copy of it. Usage: memprof-profile profile [options].
#include <iostream>
#include <string>
#include <vector>

#include "profiler/base/errors.h"
#include "profiler/capture/cpu_hook.h"
#include "profiler/cli/command_main.h"
#include "profiler/cli/config_cli.h"
#include "profiler/cli/profile_command.h"

int main(int argc, char** argv) {
  const std::vector<std::string> words(argv + 1, argv + argc);
  return memprof::RunWithExitCodes([&] {
    if (words.empty() || words[0] != "profile") {
      throw memprof::InputError(
          "memprof-profile runs 'profile' only; use memprof for the other "
          "commands");
    }
    memprof::ProfileArgs args = memprof::ParseProfileArgs(
        std::vector<std::string>(words.begin() + 1, words.end()));
    if (args.help) {
      std::cout << args.help_text;
      return memprof::kExitOk;
    }
    // Before anything can make a tensor: every block must be seen. A run
    // on a GPU measures through the CUDA allocator's trace instead
    // (--no-hook: neither).
    if (!args.no_hook && args.config.train.device == "cpu") {
      memprof::InstallCpuHook();
    }
    return memprof::RunProfileCommand(args);
  });
}
