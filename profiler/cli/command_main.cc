#include "profiler/cli/command_main.h"

#include <unistd.h>

#include <cstdio>
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

// The message with control bytes (from a binary file read as a config, say)
// written as \xNN, so the terminal shows them instead of obeying them.
std::string Printable(const std::string& message) {
  std::string out;
  for (const unsigned char c : message) {
    if (c < 0x20 && c != '\n' && c != '\t') {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    } else if (c == 0x7f) {
      out += "\\x7f";
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

int RunWithExitCodes(const std::function<int()>& command) {
  try {
    return command();
  } catch (const InputError& e) {
    std::cerr << "memprof: " << Origin() << "error: " << Printable(e.what())
              << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "memprof: " << Origin()
              << "run failed: " << Printable(e.what()) << "\n";
    return kExitRunFailed;
  }
}

}  // namespace memprof
