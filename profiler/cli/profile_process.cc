#include "profiler/cli/profile_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "profiler/base/errors.h"

namespace memprof {

std::string ProfileExecutable() {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  const std::string path =
      n > 0 ? std::string(self, static_cast<size_t>(n)) : "";
  return path.substr(0, path.rfind('/') + 1) + "memprof-profile";
}

int RunProfileProcess(const std::vector<std::string>& args,
                      const std::string& log_path) {
  const std::string exe = ProfileExecutable();
  std::vector<std::string> words = {"memprof", "profile"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (log < 0) {
    throw RunFailure("cannot write " + log_path + ": " + std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
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

}  // namespace memprof
