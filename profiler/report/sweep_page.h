// What `memprof sweep` writes for people, from its sweep.json document
// (memprof.sweep/1.2, SCHEMA.md): the table (sweep.md and sweep.html), the
// per-rank bytes chart (sweep.svg) and the page, sweep.html. Torch-free.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "profiler/report/report_text.h"

namespace memprof {

// Note [Step-time spread]
// A sweep compares step times across world sizes, each the median of rank
// 0's steady-state steps. On a shared machine two identical runs' steps can
// differ several-fold, so each row also carries the shortest and longest
// of those steps and their spread, (max - min) / median. Above
// kUnreliableSpread the row's step time is flagged: a difference between
// points smaller than their own spread says nothing about N. More --steps
// give more steady-state steps, a steadier median and a truer spread.
inline constexpr double kUnreliableSpread = 0.25;

// "N=4", or "N=4 ZeRO-1" under stage 1: a row of sweep.json.
std::string PointLabel(const nlohmann::ordered_json& row);

// "The run at 4 ranks failed (exit 3; see D/ws-4.log); the rows above are
// the points that completed before it, and no later point ran."
std::string FailedSentence(const nlohmann::ordered_json& sweep);

// The table; with `warnings_as_notes`, the spread warnings (Note
// [Step-time spread]) end its notes (sweep.md), otherwise the page shows
// them above everything (sweep.html).
ReportTable SweepTable(const nlohmann::ordered_json& sweep,
                       bool warnings_as_notes);

// Per-rank bytes by category against N, as inline SVG.
std::string SweepBytesSvg(const nlohmann::ordered_json& sweep);

// sweep.html: the warnings, the bytes chart, the step-time chart (in ms,
// each median step with a whisker from the shortest to the longest steady
// step) and the table.
std::string SweepHtml(const std::string& title,
                      const nlohmann::ordered_json& sweep);

}  // namespace memprof
