// The summary of a run: every rank's figures side by side with the
// prediction, from the rank reports alone (so it can be rebuilt from
// files): summary.json, the console table, and the phrases the other
// renderers share (errors, redundancy).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/base/schema_version.h"
#include "profiler/report/rank_report.h"

namespace memprof {

// The categories the human-readable tables of `ranks` show: those the run's
// config can fill, and any other a rank allocated or the prediction holds
// (Note [Categories a run can fill]). `ranks` not empty.
std::vector<Category> ShownCategories(const std::vector<RankReport>& ranks);

// measured - predicted, and that as a percentage of the prediction (none
// for a prediction of 0, unless the error is 0 too).
struct ErrorFigure {
  int64_t bytes = 0;
  std::optional<double> percent;
};
ErrorFigure ErrorOf(int64_t measured, int64_t predicted);

// The figure a category's prediction is compared with (ComparedFigure).
int64_t ComparedBytes(const CategoryFigures& figures, Category category);

// "+1.00 KiB (+0.52%)"; no percentage when there is none.
std::string FormatError(const ErrorFigure& error);

// A category or phase name for a sentence: "optimizer_state" ->
// "optimizer state".
std::string Words(std::string name);

// "optimizer state, 86.6 KiB per rank, bit-identical on all 2 ranks:
// 86.6 KiB held in duplicate".
// ZeRO-1 in words (a run with rank reports' `zero`): the optimizer state
// per rank against plain replication, the partition, and what the
// parameter exchange adds to a step.
std::string ZeroSentence(const std::vector<RankReport>& ranks);
// "activation checkpointing (blocks): ..." when the ranks' reports have
// checkpointing figures: the activations held from forward into backward
// and their peak with a block rerun, measured and predicted, and the
// reruns' share of the step.
std::string CheckpointingSentence(const std::vector<RankReport>& ranks);
std::string RedundancySentence(const RedundancyFigures& entry,
                               int64_t world_size);

// One line: the steady-state steps' median time of a rank report (the
// whole output of a --no-hook run).
std::string FormatStepTimes(const RankReport& rank);

// summary.json (memprof.summary/1). `ranks` in rank order.
nlohmann::ordered_json SummaryJson(const std::vector<RankReport>& ranks);

// "the CUDA caching allocator, modelled, would allocate at most 3.85 MiB
// (3.83 MiB requested, rounded up), reserving 4.00 MiB then (156 KiB of it
// free in split segments) and 4.00 MiB at most": a run replayed on a GPU.
std::string CudaReplaySentence(const CudaReplay& replay);

// "CUDA built in, no GPU here: no NVIDIA driver (libcuda.so.1 not found)"
std::string CudaSentence(const CudaContext& cuda);

// One row per category, one column per rank, then the peak and the
// redundancy audit in words; no line has trailing spaces.
std::string FormatSummaryTable(const std::vector<RankReport>& ranks);

}  // namespace memprof
