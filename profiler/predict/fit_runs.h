// Does a model fit a per-rank budget, from measured runs at different
// micro-batches instead of a size table: `memprof fit --runs DIR1,DIR2`, for
// a program's own model above all (torch-free; the runs' figures are read
// by profiler/report/fit_runs_reader.h).
//
// Note [Fit from runs]
// Model state (weights, gradients, optimizer state, DDP buckets: each
// category's own largest live bytes over the steady state) is taken as
// measured: it depends on the parameters and the optimizer, not on the
// micro-batch, so the runs must agree on it to the byte, or they are
// refused. What grows with the micro-batch is fitted moment by moment: a
// moment is a phase of the set-up, of step 1 or of the later steps
// ("backward of the later steps"), and its figure the highest live total
// within it (all categories: model state, activations, inputs,
// temporaries). Each moment gets a straight line, bytes = base + slope x
// micro-batch, by least squares over the runs; the predicted peak at a
// micro-batch is the largest of the moments' lines there. The moments are
// fitted apart because the peak moves: a small micro-batch may peak at the
// optimizer step (model state and Adam's workspace, the batch still live),
// a larger one in backward, and one line through both would predict a
// peak that grows by the batch's bytes only. The runs' peaks are the
// largest of their moments, so the lines reproduce them.
// - Two runs determine each line and do not test it: the answer says so.
// - With three or more, the law is tested as it is used, by extrapolation:
//   the residual is the largest distance of a run's measured moment from
//   the line through the other runs (leave one out; a least-squares
//   residual would hide a bent run by tilting the line toward it). It is
//   refused above half the largest slope, the bytes one more sample adds
//   to the fastest-growing moment: past it the law could misplace the
//   largest micro-batch that fits by one.
// - On a GPU a run's figure is the caching allocator's most reserved plus
//   the device memory outside it (Note [Fit on a GPU]): one moment, the
//   steady state's reserved peak, since the allocator reports no reserved
//   peak per phase; the memory outside the allocator (the largest outside
//   figure the runs measured) is added as part of the model state.
// The verdicts are Note [Fit verdicts]'s. ZeRO is priced from the measured
// weights, gradients and optimizer state (ZeroPricing's shards) plus what
// the requested micro-batch adds beyond the model state, and not at all
// from runs made under ZeRO (their optimizer state, a shard already, would
// be sharded twice). Levers that need
// the model's size table (activation checkpointing, bf16 autocast, a
// shorter sequence) cannot be priced from runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/predict/fit.h"

namespace memprof {

// One moment of one run: its name and highest live total.
struct RunMoment {
  std::string name;  // "backward of the later steps"
  int64_t bytes = 0;
  // Its phase is forward, backward or the inputs (activations may be live);
  // false: set-up, optimizer step, zero_grad (Note [Fit verdicts]: a
  // micro-batch 1 over at such a moment is the model state's overflow).
  bool activations_live = false;
};

// What fit --runs needs of one run (the busiest rank's figures).
struct FitRunFigures {
  std::string dir;
  int64_t micro_batch = 0;
  int64_t weights_bytes = 0;
  int64_t gradients_bytes = 0;
  int64_t optimizer_state_bytes = 0;
  int64_t ddp_buckets_bytes = 0;
  // ddp.zero_stage of the run: from 1 on, its optimizer state is a shard
  // already, and ZeRO is not priced from it (Note [Fit from runs]).
  int64_t zero_stage = 0;
  std::vector<RunMoment> moments;
  // On a GPU: the device memory outside the caching allocator.
  bool gpu = false;
  int64_t outside_allocator_bytes = 0;
  int64_t ModelStateBytes() const {
    return weights_bytes + gradients_bytes + optimizer_state_bytes +
           ddp_buckets_bytes;
  }
};

// bytes = base_bytes + slope_bytes x micro-batch (least squares; fractional
// bytes per sample are kept, the figures it gives are rounded up).
struct MomentLaw {
  std::string name;
  bool activations_live = false;
  double base_bytes = 0;
  double slope_bytes = 0;
  // The largest |measured - the line through the other runs| (0 with two
  // runs: each line is the other run's alone, untested).
  double residual_bytes = 0;
  int64_t At(int64_t micro_batch) const;
};

struct RunsFit {
  std::vector<FitRunFigures> runs;  // in increasing micro-batch
  std::vector<MomentLaw> laws;
  double residual_bytes = 0;  // the largest over the laws
  double residual_limit_bytes = 0;
  bool determined = false;  // two runs: the laws fit them exactly, untested
  // The verdict and its figures, as `memprof fit --config` has them.
  FitAnswer answer;
  // The moment that decides the peak at the requested micro-batch.
  std::string peak_moment;
};

// The peak the laws predict at `micro_batch`, and which moment it is.
int64_t PredictedRunsPeak(const std::vector<MomentLaw>& laws,
                          int64_t micro_batch, const MomentLaw** moment);

// Fits `runs` (validated: one model, one world size, at least two distinct
// micro-batches, model state flat) at `budget_bytes`, for `micro_batch`
// per rank at `world_size` ranks. Throws InputError when the law does not
// hold (residual over the limit, or no moment grows with the micro-batch),
// with the figures and the remedy.
RunsFit FitRuns(std::vector<FitRunFigures> runs, int64_t budget_bytes,
                int64_t micro_batch, int64_t world_size);

// Every figure, a line each, for `memprof fit --runs`; `program`: a
// program's own model (the levers of a size table cannot be priced).
std::string FormatRunsFit(const RunsFit& fit, const std::string& model,
                          bool program);

}  // namespace memprof
