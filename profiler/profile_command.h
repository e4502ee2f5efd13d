// `memprof profile`: runs the configured training under the hook and
// writes the rank report(s) into the output directory.
#pragma once

#include "profiler/config_cli.h"

namespace memprof {

// Returns the process exit code; throws InputError / RunFailure.
int RunProfileCommand(const ProfileArgs& args);

}  // namespace memprof
