#include "profiler/cli/profile_child.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "profiler/base/errors.h"

namespace memprof {
namespace {

std::vector<std::string> ProfileWords(const ProfileChildRequest& request) {
  std::vector<std::string> words = {"memprof", "profile"};
  words.insert(words.end(), request.config_words.begin(),
               request.config_words.end());
  const auto flag = [&words](const char* name, const std::string& value) {
    words.emplace_back(name);
    words.push_back(value);
  };
  flag("--world-size", std::to_string(request.world_size));
  if (request.micro_batch > 0) {
    flag("--micro-batch", std::to_string(request.micro_batch));
  }
  flag("--global-batch", std::to_string(request.global_batch));
  if (request.zero_stage >= 0) {
    flag("--ddp.zero_stage", std::to_string(request.zero_stage));
  }
  if (request.grad_accum > 0) {
    flag("--grad-accum", std::to_string(request.grad_accum));
  }
  if (request.memory_limit_bytes > 0) {
    flag("--memory-limit", std::to_string(request.memory_limit_bytes));
  }
  flag("--out", request.out_dir);
  return words;
}

// Runs memprof-profile with `words` as its argv, its stdout and stderr to
// `log_path`, and waits for it. Returns its exit code, or 128 + the signal
// that killed it.
int RunProcess(std::vector<std::string> words, const std::string& log_path) {
  const std::string exe = ProfileExecutable();
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (log < 0) {
    throw RunFailure("cannot write " + log_path + ": " + std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Stopped with its parent: a sweep or fit --measure killed or
    // interrupted must not leave its run training (and writing into the
    // directory a rerun will use). SIGTERM, so that the run's launcher
    // stops its ranks; the same if the parent died before this line.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(128 + SIGTERM);
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(log);
  if (pid < 0) throw RunFailure(std::string("fork: ") + std::strerror(errno));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      throw RunFailure(std::string("waitpid: ") + std::strerror(errno));
    }
  }
  if (WIFEXITED(status)) {
    if (WEXITSTATUS(status) == 127) {
      throw RunFailure("cannot start " + exe +
                       "; build the memprof-profile target next to memprof");
    }
    return WEXITSTATUS(status);
  }
  return 128 + WTERMSIG(status);
}

}  // namespace

std::string ProfileExecutable() {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  const std::string path =
      n > 0 ? std::string(self, static_cast<size_t>(n)) : "";
  return path.substr(0, path.rfind('/') + 1) + "memprof-profile";
}

ProfileChildResult RunProfileChild(const ProfileChildRequest& request) {
  ProfileChildResult result;
  result.log_path = request.out_dir + ".log";
  result.exit_code = RunProcess(ProfileWords(request), result.log_path);
  for (int rank = 0; rank < request.world_size; ++rank) {
    const std::string path = RankReportPath(request.out_dir, rank);
    if (!std::filesystem::exists(path)) continue;
    try {
      result.reports.push_back(ReadRankReport(path));
    } catch (const InputError& e) {
      throw RunFailure(std::string(e.what()) + "; see " + result.log_path);
    }
  }
  return result;
}

}  // namespace memprof
