// SIGINT and SIGTERM recorded while a child runs, for the launcher and
// fit --measure --command (each of whose children is in a process group
// of its own, which a terminal's ^C does not reach): the parent forwards
// the stop, reaps the children and exits 128 + the signal.
#pragma once

namespace memprof {

// Installs the handlers (no SA_RESTART: a blocking waitpid returns EINTR)
// and clears the recorded signal; puts the previous handlers back when it
// ends. One at a time.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The last SIGINT or SIGTERM received since construction; 0: none.
  static int Received();

 private:
  struct Saved;
  Saved* saved_;
};

}  // namespace memprof
