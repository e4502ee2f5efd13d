// A run's regression figures, taken from its rank reports (RankReport), and
// the baseline file they are kept in (memprof.baseline/1). Torch-free, so
// the parser is fuzzed on its own (fuzz/reports_fuzzer.cc).
//
// Every parse error is an InputError "ORIGIN: WHERE: REASON; REMEDY", ORIGIN
// being the file, WHERE the JSON path ("ranks[1].categories.weights"); the
// reading is JsonReader's (base/json_reader.h), as for rank reports. No
// input makes these functions crash or accept a partial file.
//
// memprof.baseline/1:
//   {"schema": "memprof.baseline/1",
//    "context": {"world_size", "device", "backend", "libtorch_version",
//                "dtype", "parameters", "git_sha", "config": {...}},
//    "tolerances": {"activations": "2%", "temporaries": "4096", ...},
//    "ranks": [{"rank": 0,
//               "peak": {"total_bytes", "step", "phase"},
//               "categories": {"weights": {"measured_bytes", "peak_bytes"},
//                              ... every category ...}}, ...]}
// "config" is the rank reports' context.config, two levels deep at most
// (key or section.key); "tolerances" may be empty (Note [Tolerance
// defaults]). Unknown members are ignored.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/base/category.h"
#include "profiler/gate/tolerance.h"
#include "profiler/report/rank_report.h"

#include "profiler/base/schema_version.h"

namespace memprof {

// One rank's figures. Index by Index(Category).
struct RankFigures {
  int rank = 0;
  // categories.<c>.measured_bytes: live at the steady-state peak.
  std::array<int64_t, kNumCategories> measured_bytes{};
  // categories.<c>.peak_bytes: the category's own maximum, steady state.
  std::array<int64_t, kNumCategories> peak_bytes{};
  int64_t peak_total_bytes = 0;  // peak.total_bytes (steady state)
  int peak_step = 0;             // where that peak fell, for people
  std::string peak_phase;
};

// What the figures depend on. See regression_check.h for which differences
// are errors.
struct RunContext {
  int world_size = 1;
  std::string device;
  std::string backend;
  std::string libtorch_version;
  std::string dtype;  // config.train.dtype
  int64_t parameters = 0;
  std::string git_sha;            // for people; not compared
  nlohmann::ordered_json config;  // with its "source"
};

struct RunFigures {
  RunContext context;
  std::vector<RankFigures> ranks;  // ranks[r].rank == r, world_size of them
};

struct Baseline {
  RunFigures run;
  std::map<std::string, Tolerance> tolerances;  // keys: ToleranceKeys()
};

// One rank report's figures and the run's context.
struct RankReportFigures {
  RunContext context;
  RankFigures figures;
};

// The figures the gate compares, from a rank report. Throws InputError
// naming `origin` for a --no-hook report (no memory figures to gate).
RankReportFigures FiguresOf(const RankReport& report,
                            const std::string& origin);

// The reports of one run, any order. Requires ranks 0..world_size-1 exactly
// once and the same context on every rank; `origins[i]` names `reports[i]`.
RunFigures CombineRankReports(const std::vector<RankReportFigures>& reports,
                              const std::vector<std::string>& origins);

// The largest baseline memprof reads (Note [File size caps] in
// profiler/base/regular_file.h).
inline constexpr int64_t kMaxBaselineBytes = int64_t{128} << 20;

Baseline ParseBaseline(const std::string& text, const std::string& origin);
nlohmann::ordered_json BaselineToJson(const Baseline& baseline);

// Whether two figure sets hold the same bytes (contexts not compared).
bool SameFigures(const RunFigures& a, const RunFigures& b);

}  // namespace memprof
