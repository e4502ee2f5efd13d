#include "profiler/cli/stop_signals.h"

#include <signal.h>

#include <csignal>

namespace memprof {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

void RecordStopSignal(int sig) { g_stop_signal = sig; }

}  // namespace

struct StopSignals::Saved {
  struct sigaction old_int {};
  struct sigaction old_term {};
};

StopSignals::StopSignals() : saved_(new Saved) {
  g_stop_signal = 0;
  struct sigaction action {};
  action.sa_handler = &RecordStopSignal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &saved_->old_int);
  ::sigaction(SIGTERM, &action, &saved_->old_term);
}

StopSignals::~StopSignals() {
  ::sigaction(SIGINT, &saved_->old_int, nullptr);
  ::sigaction(SIGTERM, &saved_->old_term, nullptr);
  delete saved_;
}

int StopSignals::Received() { return g_stop_signal; }

}  // namespace memprof
