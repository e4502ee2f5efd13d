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
