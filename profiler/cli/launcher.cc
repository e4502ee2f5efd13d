#include "profiler/cli/launcher.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

#include <ATen/Parallel.h>

#include "profiler/base/cpu_threads.h"
#include "profiler/base/errors.h"
#include "profiler/base/rank_env.h"
#include "profiler/cli/post_mortem.h"
#include "profiler/cli/stop_signals.h"
#include "profiler/report/rank_report.h"
#include "profiler/report/report_text.h"
#include "profiler/report/run_reports.h"
#include "profiler/train/store_socket.h"

namespace memprof {
namespace {

// After a failure, the other ranks get SIGTERM, then SIGKILL after this.
constexpr auto kStopGrace = std::chrono::seconds(5);
// Before that, this long to fail on their own: a rank's death resets its
// peers' connections, and they exit at once with their own message, which
// their recovered reports then name ("exited with code 3").
constexpr auto kPeerGrace = std::chrono::seconds(1);

struct Child {
  pid_t pid = -1;
  bool running = false;
  // Since when a signal has held it stopped (Note [Stopped ranks]).
  std::optional<std::chrono::steady_clock::time_point> stopped_since;
  int stop_signal = 0;
  // How it ended, as a recovered report names it (post_mortem.killed_by):
  // "signal 9 (Killed)", "exited with code 3", "stopped by the launcher".
  std::string ending;
};

// Note [Launcher signals]
// SIGINT or SIGTERM sent to the launcher alone (not to its process group)
// used to end it and leave its ranks training, re-parented to init, to
// write a whole report set later. The launcher now catches both while it
// waits: it stops every rank (SIGTERM, SIGKILL after the grace period),
// reaps them and exits 128 + the signal (130, 143). A rank killed that way
// writes nothing (its files are renamed into place whole, or not at all).
// Sent to the whole process group (Ctrl-C in a terminal, `timeout`, a CI
// cancel), the signal ends the ranks too, and the launcher may reap one of
// them before it sees the signal: that rank is marked ended first, so that
// stopping the others never waits for a pid already reaped (it used to,
// for ever).
// If the launcher itself is SIGKILLed, which cannot be caught, each rank
// gets SIGKILL from the kernel (PR_SET_PDEATHSIG), so none outlives it to
// write a report that looks complete.

pid_t SpawnRank(int rank, int world_size, const StoreSocket& store,
                const std::vector<std::string>& words) {
  const pid_t launcher = ::getpid();
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  // Child: dies with the launcher (Note [Launcher signals]), even if the
  // launcher died before this line.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != launcher) ::_exit(128 + SIGKILL);
  // The launcher's handlers are not the rank's.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  // Child: the same binary, as one rank.
  ::setenv("RANK", std::to_string(rank).c_str(), 1);
  ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("WORLD_SIZE", std::to_string(world_size).c_str(), 1);
  ::setenv("LOCAL_WORLD_SIZE", std::to_string(world_size).c_str(), 1);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("MASTER_PORT", std::to_string(store.port).c_str(), 1);
  ::setenv("MEMPROF_LAUNCHED", "1", 1);
  // Rank 0 serves the store on the socket the launcher opened.
  if (rank == 0) {
    ::setenv("MEMPROF_STORE_FD", std::to_string(store.fd).c_str(), 1);
  } else {
    ::close(store.fd);
  }
  // Share the cores between the local ranks unless told otherwise, as
  // many threads as LibTorch grants (at most its default, the physical
  // cores, which at::get_num_threads reports here where more are asked
  // for): the rank's prediction sizes its kernels' per-thread buffers by
  // what it reads here.
  ::setenv("OMP_NUM_THREADS",
           std::to_string(
               std::min(CpuThreadsPerRank(world_size), at::get_num_threads()))
               .c_str(),
           1);
  std::vector<std::string> args = {"memprof", "profile"};
  args.insert(args.end(), words.begin(), words.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  ::execv("/proc/self/exe", argv.data());
  std::cerr << "memprof: cannot start rank " << rank << ": "
            << std::strerror(errno) << "\n";
  ::_exit(127);
}

// "ran out of memory: ..." when rank-<rank>.json in `out_dir`, written by
// process `pid`, says so.
std::optional<std::string> OutOfMemoryOf(const std::string& out_dir, int rank,
                                         pid_t pid) {
  try {
    const RankReport report = ReadRankReport(RankReportPath(out_dir, rank));
    if (!report.out_of_memory || report.context.pid != pid) {
      return std::nullopt;
    }
    return "ran out of memory: " + OutOfMemorySentence(*report.out_of_memory);
  } catch (const InputError&) {
    return std::nullopt;  // missing, or from an earlier run half-read: no claim
  }
}

std::string SignalName(int sig) {
  return "signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
}

std::string Describe(int status) {
  if (WIFEXITED(status)) {
    return "exited with code " + std::to_string(WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "was killed by signal " + std::to_string(sig) + " (" +
           ::strsignal(sig) + ")";
  }
  return "stopped (status " + std::to_string(status) + ")";
}

int RankOf(const std::vector<Child>& children, pid_t pid) {
  for (size_t r = 0; r < children.size(); ++r) {
    if (children[r].pid == pid) return static_cast<int>(r);
  }
  return -1;
}

// How a rank reaped with `status` ended; `stopped`: the launcher sent it
// SIGTERM (and SIGKILL after the grace period).
std::string HowItEnded(int status, bool stopped) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (stopped && (sig == SIGTERM || sig == SIGKILL)) {
      return "stopped by the launcher";
    }
    return SignalName(sig);
  }
  return Describe(status);
}

// Reaps the ranks that have exited, each ending named as stopped by the
// launcher or not; true while any still runs.
bool ReapExited(std::vector<Child>& children, bool stopped) {
  bool any = false;
  for (Child& child : children) {
    if (!child.running) continue;
    int status = 0;
    const pid_t reaped = ::waitpid(child.pid, &status, WNOHANG);
    if (reaped == child.pid) {
      child.running = false;
      child.ending = HowItEnded(status, stopped);
    } else if (reaped < 0 && errno == ECHILD) {
      // Reaped already (by the loop's waitpid(-1)): no longer a child to
      // wait for, whatever else happens.
      child.running = false;
    } else {
      any = true;
    }
  }
  return any;
}

// Reaps the ranks that exit on their own within kPeerGrace.
void AwaitPeers(std::vector<Child>& children) {
  const auto deadline = std::chrono::steady_clock::now() + kPeerGrace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!ReapExited(children, /*stopped=*/false)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// SIGTERM every running rank, SIGKILL what is left after the grace period,
// and reap them all.
void StopAll(std::vector<Child>& children) {
  for (const Child& child : children) {
    if (!child.running) continue;
    ::kill(child.pid, SIGTERM);
    ::kill(child.pid, SIGCONT);  // a stopped rank takes SIGTERM only so
  }
  const auto deadline = std::chrono::steady_clock::now() + kStopGrace;
  bool killed = false;
  while (true) {
    if (!ReapExited(children, /*stopped=*/true)) return;
    if (!killed && std::chrono::steady_clock::now() > deadline) {
      for (const Child& child : children) {
        if (child.running) ::kill(child.pid, SIGKILL);
      }
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Note [Stopped ranks]
// A rank stopped by a signal (SIGSTOP, SIGTSTP, a debugger) stops
// answering without exiting: its peers wait in their next collective until
// --ddp.timeout_s and then fail, and used to be blamed for it ("rank 0 ...
// exited with code 3"). The launcher sees the stop itself (waitpid's
// WUNTRACED), says so at once, and names the stopped rank as the cause of
// whatever fails while it is stopped. Should nothing fail, it gives up on
// the stopped rank at --ddp.timeout_s + kStopGrace, so that no wait is
// unbounded; a rank continued in time (SIGCONT) is forgiven.
std::optional<std::string> StoppedRank(const std::vector<Child>& children) {
  const auto now = std::chrono::steady_clock::now();
  for (size_t r = 0; r < children.size(); ++r) {
    const Child& child = children[r];
    if (!child.running || !child.stopped_since) continue;
    const double seconds =
        std::chrono::duration<double>(now - *child.stopped_since).count();
    char ago[32];
    std::snprintf(ago, sizeof ago, "%.1f", seconds);
    return "rank " + std::to_string(r) + " (pid " + std::to_string(child.pid) +
           ") stopped answering: it was stopped by " +
           SignalName(child.stop_signal) + " " + ago + " s ago";
  }
  return std::nullopt;
}

std::optional<std::string> StoppedTooLong(const std::vector<Child>& children,
                                          int64_t timeout_s) {
  const auto limit = std::chrono::seconds(timeout_s) + kStopGrace;
  const auto now = std::chrono::steady_clock::now();
  for (const Child& child : children) {
    if (child.running && child.stopped_since &&
        now - *child.stopped_since > limit) {
      return StoppedRank(children).value() + ", longer than --ddp.timeout_s " +
             std::to_string(timeout_s) + " s + " +
             std::to_string(kStopGrace.count()) + " s";
    }
  }
  return std::nullopt;
}

}  // namespace

int LaunchLocalRanks(int world_size, const std::vector<std::string>& words,
                     const std::string& out_dir, int64_t timeout_s,
                     bool quiet) {
  const StopSignals stop_signals;  // Note [Launcher signals]
  StoreSocket store;
  try {
    store = ListenForStore("127.0.0.1", 0);  // Note [Store socket]
  } catch (const std::runtime_error& e) {
    throw RunFailure(std::string("the rendezvous store: ") + e.what());
  }
  std::vector<Child> children(world_size);
  for (int r = 0; r < world_size; ++r) {
    children[r].pid = SpawnRank(r, world_size, store, words);
    children[r].running = children[r].pid > 0;
    if (!children[r].running) {
      ::close(store.fd);
      StopAll(children);
      throw RunFailure("cannot fork rank " + std::to_string(r) + ": " +
                       std::strerror(errno));
    }
    if (!quiet) {
      std::cerr << "memprof: rank " << r << ": pid " << children[r].pid << "\n";
    }
  }
  ::close(store.fd);  // rank 0 has it
  int left = world_size;
  std::string failure;
  while (left > 0 && failure.empty()) {
    int status = 0;
    // Polled, so that a stop signal arriving at any moment is seen within
    // 20 ms (a blocking wait could miss one that came just before it).
    const pid_t pid = ::waitpid(-1, &status, WNOHANG | WUNTRACED | WCONTINUED);
    // Note [Launcher signals]: a signal sent to the whole process group
    // (Ctrl-C, timeout, a CI cancel) also ends the ranks, and this waitpid
    // may have just reaped one: mark it ended before stopping the others,
    // or the stop would wait for it for ever.
    if (pid > 0 && !WIFSTOPPED(status) && !WIFCONTINUED(status)) {
      const int rank = RankOf(children, pid);
      if (rank >= 0) {
        children[rank].running = false;
        children[rank].ending = HowItEnded(status, /*stopped=*/false);
      }
    }
    if (StopSignals::Received() != 0) {
      const int sig = StopSignals::Received();
      StopAll(children);
      // A rank may have written its report before the signal came.
      int written = 0;
      for (int r = 0; r < world_size; ++r) {
        std::error_code error;
        if (std::filesystem::exists(RankReportPath(out_dir, r), error)) {
          ++written;
        }
      }
      std::cerr << "memprof: " << ::strsignal(sig) << ": stopped every rank; "
                << (written == 0
                        ? std::string("no report was written")
                        : std::to_string(written) + " of " +
                              std::to_string(world_size) +
                              " ranks had written their report; memprof "
                              "report --run " +
                              out_dir + " renders what they wrote")
                << "\n";
      return 128 + sig;
    }
    if (pid == 0 || (pid < 0 && errno == EINTR)) {
      if (const std::optional<std::string> stuck =
              StoppedTooLong(children, timeout_s)) {
        failure = *stuck;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (pid < 0) break;
    const int rank = RankOf(children, pid);
    if (rank < 0) continue;
    Child& child = children[rank];
    if (WIFSTOPPED(status)) {
      child.stopped_since = std::chrono::steady_clock::now();
      child.stop_signal = WSTOPSIG(status);
      std::cerr << "memprof: rank " << rank << " (pid " << pid
                << ") was stopped by " << SignalName(child.stop_signal)
                << "; the other ranks wait for it at most " << timeout_s
                << " s (--ddp.timeout_s)\n";
      continue;
    }
    if (WIFCONTINUED(status)) {
      child.stopped_since.reset();
      std::cerr << "memprof: rank " << rank << " (pid " << pid
                << ") continued\n";
      continue;
    }
    --left;  // marked ended above, before the stop signal's check
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
    failure = "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) +
              ") " +
              OutOfMemoryOf(out_dir, rank, pid).value_or(Describe(status));
    // A peer that timed out waiting for a stopped rank is not the cause.
    if (const std::optional<std::string> stopped = StoppedRank(children)) {
      failure = *stopped + "; then " + failure;
    }
  }
  if (left > 0) {
    if (!failure.empty()) AwaitPeers(children);
    StopAll(children);
  }
  if (!failure.empty()) {
    // Note [Post-mortem]: a rank killed mid-run leaves its capture, and so
    // do the ranks stopped here and those that failed on their own; the
    // reports are rendered from what was recovered and written.
    std::map<int, std::string> endings;
    for (int r = 0; r < world_size; ++r) endings[r] = children[r].ending;
    const int recovered = RecoverKilledRanks(out_dir, endings, std::cerr);
    // What the ranks wrote and what was recovered, rendered: the
    // out-of-memory breakdown and verdict, or the recovered ranks, lead the
    // reports.
    try {
      RenderRunReports(LoadRunView(out_dir), std::cout, std::cerr);
    } catch (const std::runtime_error& e) {
      // No readable set of reports: the failure below says why.
      if (recovered > 0) {
        std::cerr << "memprof: " << e.what()
                  << "; once fixed, run memprof report --run " << out_dir
                  << "\n";
      }
    }
    throw RunFailure(failure + "; the other ranks were stopped");
  }
  return kExitOk;
}

}  // namespace memprof
