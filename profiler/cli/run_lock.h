// The commands that read a run directory (report, baseline, check) and a
// run that writes one (Note [A run owns its --out] in profile_command.cc).
//
// Note [Reading a live run]
// A local run holds DIR/.memprof.lock exclusively while it writes DIR, and
// each rank holds its capture-<r>.bin (Note [Capture file]) while its
// session runs, torchrun's ranks included. A command that reads DIR takes
// the lock shared for as long as it reads, and refuses (exit 2) while a
// run holds it or a rank still holds its capture: read mid-run, a live
// rank's capture would be recovered as a rank killed there, and the rank
// reports of finished ranks would be gated as a whole run.
#pragma once

#include <string>

namespace memprof {

class RunReadLock {
 public:
  // Takes DIR/.memprof.lock shared when it exists (a directory no local
  // run wrote, or a copy of its reports, has none). Throws InputError
  // "--run DIR: ...; wait for the run to end" while a run or a rank holds
  // DIR.
  explicit RunReadLock(const std::string& dir);
  ~RunReadLock();
  RunReadLock(const RunReadLock&) = delete;
  RunReadLock& operator=(const RunReadLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace memprof
