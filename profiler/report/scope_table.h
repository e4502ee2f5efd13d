// The "By scope" table of report.md and report.html: each named scope's
// activations, measured on each rank and predicted from the size table,
// and its temporaries' peak (the rank reports' `scopes`). A run without
// scopes has none.
#pragma once

#include <optional>

#include "profiler/report/report_text.h"

namespace memprof {

std::optional<ReportTable> ScopeTable(const RunView& view);

}  // namespace memprof
