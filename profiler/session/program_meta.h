// What a program's session has tracked, kept beside its capture so that a
// rank killed, or left by an exception, before Finish() is recovered with
// its predictions (Note [Program meta]). LibTorch-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "models/size_table.h"
#include "profiler/predict/prediction.h"
#include "profiler/report/rank_report.h"

namespace memprof {

// Note [Program meta]
// A program's prediction comes from what it tracks: its parameters and
// buffers (one size-table row each), its optimizer, its Reducer and its
// micro-batch, all known only after the session began, when the capture's
// header was already written. So the session writes them to
// capture-<r>.program.json beside the capture, atomically (a killed rank
// leaves the last whole version), whenever they change: on the first
// step, on each Track after it, and when the micro-batch is first seen. A
// post-mortem of the capture (RecoverRankReport) reads it, when it is of
// the same session, and predicts as Finish() would have. It goes with the
// capture once the rank's report is written.
struct ProgramMeta {
  ReportContext context;  // the config as the program's tracking made it
  int64_t micro_batch = 0;
  SizeTable table;       // the tracked parameter and buffer rows
  bool reducer = false;  // a DDP Reducer tracked: bucket space predicted
};

// capture-<r>.program.json beside capture-<r>.bin.
std::string ProgramMetaPath(const std::string& capture_path);

// Throws std::runtime_error naming the path when it cannot be written.
void WriteProgramMeta(const ProgramMeta& meta, const std::string& path);

// Note [Program ending]
// A program's rank that ends without Finish() leaves its capture for
// `memprof report --run` to recover, which could only say "killed, or
// failed". Its session says which when it can, in capture-<r>.ending
// beside the capture: "an uncaught exception: WHAT" from a terminate
// handler the session installs (chained to the one before it), or "left
// by an exception before Finish()" when the session is destroyed by an
// exception's unwinding (with the memory limit's refusal when there was
// one). A kill leaves none. It names the session (pid, start) so that a
// file of another session is never taken for this one's, and goes with
// the capture as the program meta does.
std::string ProgramEndingPath(const std::string& capture_path);

// Writes "PID START\nTEXT" atomically; best effort (a full disk leaves the
// rank "killed, or failed"), never throws.
void WriteProgramEnding(const std::string& path, int64_t pid,
                        int64_t session_start_unix_us, const std::string& text);

// TEXT of the session (pid, start), or "" when there is none of it.
std::string ReadProgramEnding(const std::string& path, int64_t pid,
                              int64_t session_start_unix_us);

// nullopt when there is no file at `path`; throws InputError naming it when
// it is unreadable.
std::optional<ProgramMeta> ReadProgramMeta(const std::string& path);

// A program's prediction: model state from the table's rows (a frozen row:
// no gradient, optimizer state or bucket space) and the optimizer; no
// buckets without a tracked Reducer; activations, inputs and temporaries
// are measured only (predicted 0).
Prediction PredictProgram(const RunConfig& config, SizeTable table,
                          int64_t micro_batch, int rank, bool reducer);

}  // namespace memprof
