// What report.md and report.html both say, as plain data: the context, the
// tables in reading order and the redundancy audit in words. The markdown
// and HTML writers only format it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "profiler/report/run_reports.h"

namespace memprof {

struct ReportTable {
  std::string id;       // stable, for anchors and tests: "categories"
  std::string title;    // a heading: "Memory by category"
  std::string caption;  // what the figures are; may be empty
  std::vector<std::string> header;
  std::vector<bool> numeric;  // per column: right-aligned
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;  // sentences after the table
};

struct ReportText {
  std::string title;  // "memprof: gpt, 118,528 parameters, 2 ranks"
  // HeadlineSentence (Note [Headline]); empty when no rank completed a
  // steady-state step.
  std::string headline;
  std::vector<std::pair<std::string, std::string>> context;  // name, value
  // One sentence per unusable rank report; empty when the run is complete.
  std::vector<std::string> incomplete;
  // One sentence per rank that ran out of memory under --memory-limit (its
  // report's message and verdict); the "out-of-memory" table then leads
  // the tables after the effective config, with the live bytes by category
  // at each refusal.
  std::vector<std::string> out_of_memory;
  // One sentence per rank killed mid-run whose report was recovered from
  // its capture file (Note [Post-mortem]).
  std::vector<std::string> killed;
  std::vector<ReportTable> tables;      // config, categories, peak, steps
  std::vector<std::string> redundancy;  // one sentence per audited category
};

ReportText BuildReportText(const RunView& view);

// "out of memory in backward of step 2: tried to allocate 16.0 KiB with
// 194.5 KiB (199,184 B) live of the 195.3 KiB (200,000 B) --memory-limit".
std::string OutOfMemoryMessage(const OutOfMemoryFigures& oom);
// The message, then the fit verdict in parentheses: one line for the
// console and the launcher. A verdict of fits is said as "predicted to
// fit", with the prediction's margin, which the run went past.
std::string OutOfMemorySentence(const OutOfMemoryFigures& oom);

// A recovered rank's ending, from post_mortem.killed_by: "killed (signal 9
// (Killed))", "killed (stopped by the launcher)", "exited with code 3
// before writing its report", "failed before writing its report (an
// uncaught exception: ...)" for a program's "failed: ..." (Note [Program
// ending]), "stopped without its report (killed, or failed: the capture
// cannot tell which)" for kUnknownEnding.
std::string EndingOf(const std::string& killed_by);
// The moment of a recovered rank's last recorded event: "step 3,
// backward", "set-up, ddp_init", or "after step 5, audit" (a rank that
// went past its last step).
std::string LastMomentOf(const RankReport& rank);

}  // namespace memprof
