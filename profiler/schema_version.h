// Versioned schema strings: "<family>/<major>" or "<family>/<major>.<minor>"
// ("memprof.rank/1"). A reader accepts its own major version with any minor
// (minors only add fields) and rejects every other major version.
#pragma once

#include <string>

namespace memprof {

// Empty when `found` is of the family and major version of `expected`
// (itself "<family>/<major>"); otherwise the reason, in words, naming both
// (the caller adds the remedy).
std::string SchemaMismatch(const std::string& found,
                           const std::string& expected);

}  // namespace memprof
