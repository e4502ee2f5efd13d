// A run against its baseline: which context differences are errors, each
// figure's verdict under its tolerance, and the result as a table, Markdown
// and JSON (memprof.check/1). Torch-free; pure but for the remedy of a
// refused comparison, which looks beside the baseline for one that holds the
// run's context (baseline_search.h).
//
// Note [Context policy]
// A baseline holds for one context. Always an error (InputError, exit 2):
// a different world_size (figures are per rank), device or backend, dtype,
// or libtorch_version (other kernels, other allocations). The config is
// compared key by key without its "source" path (ddp.world_size and
// train.dtype are the keys above); a difference there is an error too,
// unless the check allows config changes (--allow-config-change): then the
// differences are listed with the result and the figures gated as usual, so
// a change that is meant to alter the model is gated on what it costs
// (mlp.hidden 64 -> 65 fails on weights by 4 x dP bytes) instead of passing
// or being refused outright. A refusal lists the differing keys and the
// remedy: the baseline of the run's own config (named when one lies beside
// the baseline), or a new baseline under a new name; rewriting the baseline
// is offered only for a change of its own model's config (never when
// config.model differs), after --allow-config-change gated the change.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/gate/baseline.h"
#include "profiler/gate/tolerance.h"

#include "profiler/base/schema_version.h"

namespace memprof {

enum class Verdict { kOk, kRegressed, kImproved };
std::string_view VerdictName(Verdict verdict);  // "ok", "regressed", ...

struct ContextDifference {
  std::string key;       // "world_size", "config.mlp.hidden"
  std::string baseline;  // the value as JSON text, or "(absent)"
  std::string now;
  bool config = false;  // a config key: allowed with allow_config_change
};

// Every difference, hard ones first (Note [Context policy]).
std::vector<ContextDifference> CompareContexts(const RunContext& baseline,
                                               const RunContext& now);

// Throws InputError when a run in context `now` cannot be gated against
// `baseline` (Note [Context policy]): `profile --check` calls it before
// training, so a baseline of another config is refused with nothing run.
// Returns every difference.
std::vector<ContextDifference> RequireComparableContext(
    const Baseline& baseline, const std::string& baseline_origin,
    const RunContext& now, const std::string& run_origin,
    bool allow_config_change);

struct FigureCheck {
  std::string key;     // tolerance key: a category or "peak"
  std::string figure;  // "measured_bytes", "peak_bytes" or "total_bytes"
  int rank = 0;
  int64_t baseline_bytes = 0;
  int64_t now_bytes = 0;
  int64_t delta_bytes = 0;    // now - baseline
  int64_t allowed_bytes = 0;  // |delta| <= allowed is within tolerance
  Verdict verdict = Verdict::kOk;
};

struct CheckReport {
  std::string baseline_origin;  // the baseline file
  std::string run_origin;       // the run directory
  std::string model;
  int world_size = 1;
  int64_t baseline_parameters = 0;
  int64_t now_parameters = 0;
  std::vector<ContextDifference> config_changes;  // the allowed ones
  std::map<std::string, Tolerance> tolerances;    // resolved, every key
  std::vector<FigureCheck> figures;               // key, then figure, then rank
  int regressed = 0;
  int improved = 0;
};

// Throws InputError listing every difference, with the remedy, when the
// contexts do not allow a comparison.
CheckReport CompareWithBaseline(const Baseline& baseline,
                                const std::string& baseline_origin,
                                const RunFigures& now,
                                const std::string& run_origin,
                                const ToleranceSettings& tolerances,
                                bool allow_config_change);

// 1 when a figure regressed (or, with `strict`, improved), else 0.
int CheckExitCode(const CheckReport& report, bool strict);

// The result for people: sizes in KiB/MiB/GiB (with the exact bytes of a
// delta or allowance from 1 KiB on), regressed rows first, then improved,
// then ok; with `only_changed` the ok rows are left out and counted in one
// line. The JSON carries every row in bytes.
std::string FormatCheckTable(const CheckReport& report, bool only_changed);
std::string FormatCheckMarkdown(const CheckReport& report, bool only_changed);
nlohmann::ordered_json CheckReportToJson(const CheckReport& report);

}  // namespace memprof
