#include "profiler/cli/command_main.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <new>
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

// Note [memprof out of memory]
// memprof's own allocations can fail (under ulimit -v, or in a container
// at its memory limit). The readers cap what a file can make them allocate
// (Note [File size caps] in profiler/base/regular_file.h), so this is the
// machine's limit, not the input: a run failed, exit 3. A std::bad_alloc
// that reaches RunWithExitCodes is caught there; one thrown where nothing
// can catch it (a thread, a noexcept function) reaches the terminate
// handler, which used to abort (exit 134) without a word. Both print the
// same line, written without allocating.
constexpr const char kOutOfMemory[] =
    "memprof: run failed: memprof itself ran out of memory (an allocation "
    "was refused: a memory limit such as ulimit -v or a container's, or "
    "the machine's memory is used up); raise the limit or free memory\n";

void PrintOutOfMemory() {
  std::fflush(stdout);
  const ssize_t ignored =
      ::write(STDERR_FILENO, kOutOfMemory, sizeof kOutOfMemory - 1);
  (void)ignored;
}

// The handler before OnTerminate (the library's, which names the
// exception).
std::terminate_handler previous_terminate = nullptr;

[[noreturn]] void OnTerminate() {
  if (const std::exception_ptr thrown = std::current_exception()) {
    try {
      std::rethrow_exception(thrown);
    } catch (const std::bad_alloc&) {
      PrintOutOfMemory();
      std::_Exit(kExitRunFailed);
    } catch (...) {
    }
  }
  // A bug: the library's handler names it and keeps the core.
  if (previous_terminate != nullptr) previous_terminate();
  std::abort();
}

// `line` and its newline to standard error in one write: the ranks of a
// run share it, and an unbuffered stream writes each << apart, so their
// lines interleaved ("memprof: memprof: rank 1 ... rank 0 ...").
void WholeLine(const std::string& line) {
  const std::string text = line + "\n";
  std::cerr.write(text.data(), static_cast<std::streamsize>(text.size()));
  std::cerr.flush();
}

}  // namespace

int RunWithExitCodes(const std::function<int()>& command) {
  // Before anything is written: setvbuf applies to a stream not used yet.
  // std::cout writes through stdout (synchronised with stdio), so it is
  // line-buffered too; standard error is unbuffered already.
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  if (std::get_terminate() != &OnTerminate) {
    previous_terminate = std::set_terminate(&OnTerminate);
  }
  try {
    return command();
  } catch (const std::bad_alloc&) {
    PrintOutOfMemory();
    return kExitRunFailed;
  } catch (const InputError& e) {
    WholeLine("memprof: " + Origin() + "error: " + Printable(e.what()));
    return kExitBadInput;
  } catch (const std::exception& e) {
    WholeLine("memprof: " + Origin() + "run failed: " + Printable(e.what()));
    return kExitRunFailed;
  }
}

}  // namespace memprof
