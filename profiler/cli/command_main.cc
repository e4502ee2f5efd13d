#include "profiler/cli/command_main.h"

#include <unistd.h>

#include <iostream>
#include <string>

#include "profiler/base/errors.h"
#include "profiler/base/rank_env.h"

namespace memprof {
namespace {

// "rank 1 on host (pid 42): " when this process is one rank of a job.
std::string Origin() {
  try {
    const auto topology = TopologyFromEnvironment();
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

int RunWithExitCodes(const std::function<int()>& command) {
  try {
    return command();
  } catch (const InputError& e) {
    std::cerr << "memprof: " << Origin() << "error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "memprof: " << Origin() << "run failed: " << e.what() << "\n";
    return kExitRunFailed;
  }
}

}  // namespace memprof
