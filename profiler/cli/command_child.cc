#include "profiler/cli/command_child.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

// Note [Command log cap]
// The command's output goes through a pipe into OUT_DIR.log: its first
// kLogHeadBytes, then a line saying how much was left out, then its last
// kLogTailBytes (where its error is: LastErrorOf reads the log's end). A
// program that prints without end ('yes {micro_batch}' wrote 4.3 GB in
// 5 s) cannot fill the disk.
constexpr int64_t kLogHeadBytes = int64_t{16} << 20;
constexpr size_t kLogTailBytes = size_t{64} << 10;

class CappedLog {
 public:
  explicit CappedLog(int fd) : fd_(fd) {}
  ~CappedLog() { ::close(fd_); }

  void Add(const char* data, size_t size) {
    const size_t head = static_cast<size_t>(
        std::min<int64_t>(static_cast<int64_t>(size), kLogHeadBytes - head_));
    if (head > 0) {
      Write(data, head);
      head_ += static_cast<int64_t>(head);
    }
    tail_.append(data + head, size - head);
    if (tail_.size() > 2 * kLogTailBytes) Trim();
  }
  // The tail, after a line naming what was left out.
  void Finish() {
    Trim();
    if (left_out_ > 0) {
      const std::string line = "\n[memprof: " + std::to_string(left_out_) +
                               " bytes of the command's output left out; its "
                               "last " +
                               std::to_string(tail_.size()) + " follow]\n";
      Write(line.data(), line.size());
    }
    Write(tail_.data(), tail_.size());
    tail_.clear();
  }

 private:
  void Trim() {
    if (tail_.size() <= kLogTailBytes) return;
    const size_t drop = tail_.size() - kLogTailBytes;
    tail_.erase(0, drop);
    left_out_ += static_cast<int64_t>(drop);
  }
  void Write(const char* data, size_t size) {
    while (size > 0) {
      const ssize_t n = ::write(fd_, data, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // a full disk: the log is a courtesy
      data += n;
      size -= static_cast<size_t>(n);
    }
  }

  int fd_;
  int64_t head_ = 0;
  int64_t left_out_ = 0;
  std::string tail_;
};

// What the pipe holds now into `log`, waiting at most `wait_ms` for it;
// false at its end (every writer gone).
bool Drain(int pipe, CappedLog& log, int wait_ms) {
  pollfd ready{pipe, POLLIN, 0};
  if (::poll(&ready, 1, wait_ms) <= 0) return true;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(pipe, buffer, sizeof buffer);
    if (n > 0) {
      log.Add(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0;  // 0: the end; EAGAIN: drained for now
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
  const int log = ::open(run.log_path.c_str(),
                         O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log < 0) {
    throw RunFailure("cannot write " + run.log_path + ": " +
                     std::strerror(errno));
  }
  int pipe_ends[2];
  if (::pipe2(pipe_ends, O_CLOEXEC) != 0) {
    ::close(log);
    throw RunFailure(std::string("pipe: ") + std::strerror(errno));
  }
  ::fcntl(pipe_ends[0], F_SETFL, O_NONBLOCK);
  const StopSignals stop_signals;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    ::dup2(pipe_ends[1], STDOUT_FILENO);
    ::dup2(pipe_ends[1], STDERR_FILENO);
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
  ::close(pipe_ends[1]);
  if (pid < 0) {
    ::close(pipe_ends[0]);
    ::close(log);
    throw RunFailure(std::string("fork: ") + std::strerror(errno));
  }
  CappedLog capped(log);  // Note [Command log cap]
  const int output = pipe_ends[0];
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
    Drain(output, capped, 20);
  }
  ::kill(-pid, SIGKILL);  // what the command left running in its group
  // What the group wrote before it ended; the killed ones' ends close.
  const auto drained = std::chrono::steady_clock::now() + kStopGrace;
  while (Drain(output, capped, 20) &&
         std::chrono::steady_clock::now() < drained) {
  }
  ::close(output);
  capped.Finish();
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
