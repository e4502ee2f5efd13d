#include "profiler/cli/command_child.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "profiler/base/atomic_file.h"
#include "profiler/base/errors.h"
#include "profiler/cli/stop_signals.h"

namespace memprof {
namespace fs = std::filesystem;
namespace {

// After the timeout (or a stop signal): SIGTERM, then SIGKILL after this.
constexpr auto kStopGrace = std::chrono::seconds(5);

std::string ShellQuoted(const std::string& text) {
  std::string quoted = "'";
  for (char c : text)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

void ReplaceAll(std::string& text, const std::string& from,
                const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// SIGTERM to the group, SIGKILL after the grace period; reaps `pid`.
int StopGroup(pid_t pid) {
  ::kill(-pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + kStopGrace;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status;
}

}  // namespace

std::string CommandLineAt(const std::string& command, int64_t micro_batch,
                          const std::string& out_dir) {
  std::string line = command;
  ReplaceAll(line, "{micro_batch}", std::to_string(micro_batch));
  ReplaceAll(line, "{out}", ShellQuoted(out_dir));
  return line;
}

CommandRun RunCommandChild(const std::string& command_line,
                           const std::string& out_dir,
                           int64_t memory_limit_bytes, int64_t timeout_s) {
  CommandRun run;
  run.log_path = out_dir + ".log";
  const int log =
      ::open(run.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (log < 0) {
    throw RunFailure("cannot write " + run.log_path + ": " +
                     std::strerror(errno));
  }
  const StopSignals stop_signals;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    ::setenv("MEMPROF_OUT", out_dir.c_str(), 1);
    if (memory_limit_bytes > 0) {
      ::setenv("MEMPROF_MEMORY_LIMIT",
               std::to_string(memory_limit_bytes).c_str(), 1);
    } else {
      ::unsetenv("MEMPROF_MEMORY_LIMIT");
    }
    ::execl("/bin/sh", "sh", "-c", command_line.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(log);
  if (pid < 0) throw RunFailure(std::string("fork: ") + std::strerror(errno));
  ::setpgid(pid, pid);  // as the child does: whichever runs first
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      throw RunFailure(std::string("waitpid: ") + std::strerror(errno));
    }
    if (StopSignals::Received() != 0) {
      const int sig = StopSignals::Received();
      StopGroup(pid);
      std::signal(sig, SIG_DFL);
      std::raise(sig);
      std::_Exit(128 + sig);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      run.timed_out = true;
      status = StopGroup(pid);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pid, SIGKILL);  // what the command left running in its group
  run.exit_code =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

std::string MeasuredRunsDir(const std::string& out_dir) {
  if (!out_dir.empty()) {
    // Each run writes in a directory of its own inside.
    CreateOutputDirectory("--out", out_dir, 2 * kLongestOutputName);
    return out_dir;
  }
  std::string pattern =
      (fs::temp_directory_path() / "memprof-fit-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw RunFailure("cannot create a temporary directory for --measure");
  }
  return pattern;
}

}  // namespace memprof
