// trace.json in the Chrome trace event format (chrome://tracing,
// ui.perfetto.dev): one process per rank (pid = rank, a process_name
// metadata event each), steps and phases as complete events ("ph":"X") on
// the loop's thread, and live bytes as counter tracks ("ph":"C"), one per
// category plus "total". Timestamps are microseconds since the earliest
// rank's session start (ranks are placed by their wall clocks).
//
// The counters carry exactly the rank report's timeline figures: at each
// segment's begin_us its begin_bytes, at its peak its peak_breakdown, and at
// the last segment's end_us its end_bytes. A peak's time is placed by its
// seq between the segment's bounds (events have an order, marks a time).
#pragma once

#include <nlohmann/json.hpp>

#include "profiler/report/run_reports.h"

namespace memprof {

nlohmann::ordered_json ChromeTraceJson(const RunView& view);

}  // namespace memprof
