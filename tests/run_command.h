// Runs a shell command for end-to-end tests: exit code and combined output.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace memprof {

struct CommandResult {
  int exit_code = -1;  // -1 when killed by a signal
  std::string output;  // stdout and stderr
};

inline CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) {
    result.output.append(buffer, n);
  }
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The memprof binary under test with `args`.
inline CommandResult RunMemprof(const std::string& args) {
  return RunCommand(std::string(MEMPROF_BINARY) + " " + args);
}

}  // namespace memprof
