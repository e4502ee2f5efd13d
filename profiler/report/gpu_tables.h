// The tables of a run on a GPU (ranks whose report has `cuda_run`): the
// caching allocator's figures beside the categories, predicted and
// measured, memprof's self-check against the allocator, and the device
// memory outside the allocator at its moments. report.md and report.html
// show them after the category tables; a cpu run has none.
#pragma once

#include <vector>

#include "profiler/report/report_text.h"

namespace memprof {

std::vector<ReportTable> GpuTables(const RunView& view);

}  // namespace memprof
