// Files are never left half-written: content goes to a temporary name in
// the same directory, is flushed, then renamed over the target.
#pragma once

#include <string>

namespace memprof {

// Throws std::runtime_error naming the path and the OS reason.
void WriteFileAtomically(const std::string& path, const std::string& content);

}  // namespace memprof
