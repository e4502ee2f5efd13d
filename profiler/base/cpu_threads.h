// How many CPU threads each rank's kernels are asked to use: the launcher
// sets it (OMP_NUM_THREADS), and the prediction sizes the kernels'
// per-thread scratch buffers by it (Note [Llama attention backward] in
// models/llama_table.cc), capped there at what LibTorch grants.
#pragma once

namespace memprof {

// The most threads memprof believes of a setting or a report.
inline constexpr int kMaxCpuThreads = 1 << 20;

// MKL_NUM_THREADS or else OMP_NUM_THREADS where set (LibTorch reads them
// in that order; a value that is not a positive integer counts as every
// core), else the cores shared between the `local_ranks` ranks of this
// machine, at least one.
int CpuThreadsPerRank(int local_ranks);

}  // namespace memprof
