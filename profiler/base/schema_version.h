// Versioned schema strings: "<family>/<major>" or "<family>/<major>.<minor>"
// ("memprof.rank/1"). A reader accepts its own major version with any minor
// (minors only add fields) and rejects every other major version.
#pragma once

#include <string>

namespace memprof {

// Every file memprof writes names its schema; these are the only spellings.
inline constexpr const char* kRankSchema = "memprof.rank/1.15";
inline constexpr const char* kSummarySchema = "memprof.summary/1";
inline constexpr const char* kBaselineSchema = "memprof.baseline/1";
inline constexpr const char* kCheckSchema = "memprof.check/1";
inline constexpr const char* kPredictionSchema = "memprof.prediction/1.4";
inline constexpr const char* kSweepSchema = "memprof.sweep/1.2";
inline constexpr const char* kSnapshotSchema = "memprof.snapshot/1.1";

// Empty when `found` is of the family and major version of `expected`
// (itself "<family>/<major>"); otherwise the reason, in words, naming both
// (the caller adds the remedy).
std::string SchemaMismatch(const std::string& found,
                           const std::string& expected);

}  // namespace memprof
