// trace.json in the Chrome trace event format (chrome://tracing,
// ui.perfetto.dev): one process per rank, the phases as complete events,
// live bytes by category as counter tracks.
#pragma once

#include <nlohmann/json.hpp>

#include "profiler/run_reports.h"

namespace memprof {

nlohmann::ordered_json ChromeTraceJson(const RunView& view);

}  // namespace memprof
