#include "profiler/gate/baseline.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

#include "profiler/base/errors.h"
#include "profiler/base/json_reader.h"
#include "profiler/base/schema_version.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kMaxWorldSize = 1 << 16;

// The figures both files carry per rank: categories.<c> and peak.
void ReadCategories(const JsonReader& reader, const Json& parent,
                    const std::string& where, RankFigures& figures) {
  const Json& categories = reader.Object(parent, where, "categories");
  const std::string path = JsonPath(where, "categories");
  // A category memprof does not know (a hand-edited or mistyped name)
  // would otherwise be ignored, and gate nothing.
  for (const auto& [name, entry] : categories.items()) {
    if (!CategoryFromName(name)) {
      reader.Fail(JsonPath(path, name),
                  "not a category memprof knows (misspelt?): a baseline "
                  "holds the categories memprof baseline writes");
    }
  }
  for (Category c : kAllCategories) {
    const std::string name(CategoryName(c));
    if (IsLaterCategory(c) && !categories.contains(name)) continue;
    const Json& entry = reader.Object(categories, path, name);
    figures.measured_bytes[Index(c)] =
        reader.Bytes(entry, JsonPath(path, name), "measured_bytes");
    figures.peak_bytes[Index(c)] =
        reader.Bytes(entry, JsonPath(path, name), "peak_bytes");
  }
}

void ReadPeak(const JsonReader& reader, const Json& parent,
              const std::string& where, RankFigures& figures) {
  const Json& peak = reader.Object(parent, where, "peak");
  const std::string path = JsonPath(where, "peak");
  figures.peak_total_bytes = reader.Bytes(peak, path, "total_bytes");
  figures.peak_step =
      static_cast<int>(reader.Integer(peak, path, "step", 0, INT_MAX));
  figures.peak_phase = reader.String(peak, path, "phase");
}

// As memprof baseline writes a rank: its categories' bytes at the peak sum
// to the peak, and none is over its own peak. A baseline edited otherwise
// (a peak total of 10^12) would gate against figures no run has.
void RequireConsistent(const JsonReader& reader, const std::string& where,
                       const RankFigures& figures) {
  __int128 sum = 0;
  for (Category c : kAllCategories) {
    const int64_t at_peak = figures.measured_bytes[Index(c)];
    sum += at_peak;
    if (at_peak > figures.peak_bytes[Index(c)]) {
      reader.Fail(
          JsonPath(JsonPath(where, "categories"), std::string(CategoryName(c))),
          "measured_bytes " + std::to_string(at_peak) +
              " is over its own peak_bytes " +
              std::to_string(figures.peak_bytes[Index(c)]) +
              ": the baseline was edited or damaged");
    }
  }
  if (sum != figures.peak_total_bytes) {
    reader.Fail(JsonPath(JsonPath(where, "peak"), "total_bytes"),
                "is " + std::to_string(figures.peak_total_bytes) +
                    ", but the categories' measured_bytes sum to " +
                    (sum > std::numeric_limits<int64_t>::max()
                         ? std::string("more than 2^63 - 1")
                         : std::to_string(static_cast<int64_t>(sum))) +
                    ": the baseline was edited or damaged");
  }
}

// context.config: "key": scalar or "section": {"key": scalar}.
Json ReadConfig(const JsonReader& reader, const Json& context,
                const std::string& where) {
  const Json& config = reader.Object(context, where, "config");
  const std::string path = JsonPath(where, "config");
  for (const auto& [name, value] : config.items()) {
    if (value.is_array()) {
      reader.Fail(JsonPath(path, name),
                  "expected a value or a section, got an array");
    }
    if (!value.is_object()) continue;
    for (const auto& [key, leaf] : value.items()) {
      if (leaf.is_structured()) {
        reader.Fail(JsonPath(JsonPath(path, name), key),
                    "expected a value, got " + DescribeJson(leaf) +
                        " (config keys are key or section.key)");
      }
    }
  }
  return config;  // shallow: copying is safe now
}

Tolerance ToleranceValue(const JsonReader& reader, const Json& value,
                         const std::string& where) {
  if (value.is_string()) {
    try {
      return ParseTolerance(value.get<std::string>());
    } catch (const InputError& e) {
      reader.Fail(where, e.what());
    }
  }
  if (value.is_number_integer()) {
    Json holder = {{"bytes", value}};
    Tolerance tolerance;
    tolerance.bytes = reader.Bytes(holder, where, "bytes");
    return tolerance;
  }
  if (value.is_object()) {
    Tolerance tolerance;
    if (value.contains("bytes")) {
      tolerance.bytes = reader.Bytes(value, where, "bytes");
    }
    if (value.contains("percent")) {
      const Json& percent = value["percent"];
      if (!percent.is_number() || !std::isfinite(percent.get<double>()) ||
          percent.get<double>() < 0) {
        reader.Fail(
            JsonPath(where, "percent"),
            "expected a non-negative number, got " + DescribeJson(percent));
      }
      tolerance.percent = percent.get<double>() + 0.0;  // no -0
    }
    return tolerance;
  }
  reader.Fail(where,
              "expected \"2%\", \"4096\", 4096 or {\"percent\": 2, "
              "\"bytes\": 4096}, got " +
                  DescribeJson(value));
}

// "2%" or 4096 where that reads back exactly, else the object form.
Json ToleranceJson(const Tolerance& tolerance) {
  if (tolerance.percent == 0) return tolerance.bytes;
  if (tolerance.bytes == 0) {
    const std::string text = FormatTolerance(tolerance);
    try {
      if (ParseTolerance(text).percent == tolerance.percent) return text;
    } catch (const InputError&) {
      // e.g. 1e-07%: written as a number below
    }
  }
  return Json{{"percent", tolerance.percent}, {"bytes", tolerance.bytes}};
}

bool SameRank(const RankFigures& a, const RankFigures& b) {
  return a.rank == b.rank && a.measured_bytes == b.measured_bytes &&
         a.peak_bytes == b.peak_bytes &&
         a.peak_total_bytes == b.peak_total_bytes &&
         a.peak_step == b.peak_step && a.peak_phase == b.peak_phase;
}

}  // namespace

RankReportFigures FiguresOf(const RankReport& report,
                            const std::string& origin) {
  RequireMemoryFigures(report, origin);
  const ReportContext& c = report.context;
  RankReportFigures out;
  out.context.world_size = c.world_size;
  out.context.device = c.device;
  out.context.backend = c.backend;
  out.context.libtorch_version = c.libtorch_version;
  out.context.dtype = c.config.train.dtype;
  out.context.parameters = report.parameters;
  out.context.git_sha = c.git_sha;
  out.context.config = ToJson(c.config);
  out.figures.rank = c.rank;
  for (Category cat : kAllCategories) {
    out.figures.measured_bytes[Index(cat)] = report.Of(cat).measured_bytes;
    out.figures.peak_bytes[Index(cat)] = report.Of(cat).peak_bytes;
  }
  out.figures.peak_total_bytes = report.peak.total_bytes;
  out.figures.peak_step = report.peak.step;
  out.figures.peak_phase = std::string(PhaseName(report.peak.phase));
  return out;
}

RunFigures CombineRankReports(const std::vector<RankReportFigures>& reports,
                              const std::vector<std::string>& origins) {
  if (reports.empty() || origins.size() != reports.size()) {
    throw InputError("no rank reports to read");
  }
  const RunContext& first = reports[0].context;
  const auto fail = [&](size_t i, const std::string& reason) {
    throw InputError(origins[i] + ": " + reason + " (" + origins[0] +
                     "); the directory mixes runs: profile into a fresh "
                     "--out directory");
  };
  std::vector<int> seen(first.world_size, -1);
  for (size_t i = 0; i < reports.size(); ++i) {
    const RunContext& context = reports[i].context;
    if (context.world_size != first.world_size) {
      fail(i, "world_size " + std::to_string(context.world_size) +
                  " differs from " + std::to_string(first.world_size));
    }
    if (context.config != first.config || context.device != first.device ||
        context.backend != first.backend ||
        context.libtorch_version != first.libtorch_version ||
        context.parameters != first.parameters) {
      fail(i, "context (config, device, libtorch, parameters) differs");
    }
    const int rank = reports[i].figures.rank;
    if (seen[rank] >= 0) {
      fail(i,
           "rank " + std::to_string(rank) + " also in " + origins[seen[rank]]);
    }
    seen[rank] = static_cast<int>(i);
  }
  RunFigures run;
  run.context = first;
  for (int rank = 0; rank < first.world_size; ++rank) {
    if (seen[rank] < 0) {
      throw InputError("no report for rank " + std::to_string(rank) + " of " +
                       std::to_string(first.world_size) + " (world_size in " +
                       origins[0] +
                       "); did every rank of the run finish? rerun 'memprof "
                       "profile'");
    }
    run.ranks.push_back(reports[seen[rank]].figures);
  }
  return run;
}

Baseline ParseBaseline(const std::string& text, const std::string& origin) {
  // Never "--out ORIGIN": the file may be a rank report, which that would
  // overwrite.
  const JsonReader reader(
      origin,
      "make a baseline with 'memprof baseline --run DIR --out BASELINE.json' "
      "(DIR: a profile's --out) and pass that file");
  const Json doc = reader.Parse(text);
  reader.Schema(doc, kBaselineSchema);
  Baseline baseline;
  RunContext& context = baseline.run.context;
  const Json& c = reader.Object(doc, "", "context");
  context.world_size = static_cast<int>(
      reader.Integer(c, "context", "world_size", 1, kMaxWorldSize));
  context.device = reader.String(c, "context", "device");
  context.backend = reader.String(c, "context", "backend");
  context.libtorch_version = reader.String(c, "context", "libtorch_version");
  context.dtype = reader.String(c, "context", "dtype");
  context.parameters = reader.Bytes(c, "context", "parameters");
  context.git_sha = reader.String(c, "context", "git_sha");
  context.config = ReadConfig(reader, c, "context");

  if (doc.contains("tolerances")) {
    const Json& tolerances = reader.Object(doc, "", "tolerances");
    for (const auto& [key, value] : tolerances.items()) {
      const std::string where = JsonPath("tolerances", key);
      try {
        RequireToleranceKey(key);
      } catch (const InputError& e) {
        reader.Fail(where, e.what());
      }
      baseline.tolerances[key] = ToleranceValue(reader, value, where);
    }
  }

  const Json& ranks = reader.Array(doc, "", "ranks");
  if (ranks.size() != static_cast<size_t>(context.world_size)) {
    reader.Fail("ranks", std::to_string(ranks.size()) +
                             " entries for context.world_size " +
                             std::to_string(context.world_size));
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    const std::string where = JsonElement("ranks", i);
    const Json& entry = ranks[i];
    if (!entry.is_object()) {
      reader.Fail(where, "expected an object, got " + DescribeJson(entry));
    }
    RankFigures figures;
    figures.rank = static_cast<int>(
        reader.Integer(entry, where, "rank", 0, context.world_size - 1));
    if (figures.rank != static_cast<int>(i)) {
      reader.Fail(JsonPath(where, "rank"),
                  "is " + std::to_string(figures.rank) + ", expected " +
                      std::to_string(i) + " (ranks in order)");
    }
    ReadPeak(reader, entry, where, figures);
    ReadCategories(reader, entry, where, figures);
    RequireConsistent(reader, where, figures);
    baseline.run.ranks.push_back(figures);
  }
  return baseline;
}

nlohmann::ordered_json BaselineToJson(const Baseline& baseline) {
  const RunContext& c = baseline.run.context;
  Json tolerances = Json::object();
  for (const auto& [key, tolerance] : baseline.tolerances) {
    tolerances[key] = ToleranceJson(tolerance);
  }
  Json ranks = Json::array();
  for (const RankFigures& rank : baseline.run.ranks) {
    Json categories = Json::object();
    for (Category category : kAllCategories) {
      categories[std::string(CategoryName(category))] =
          Json{{"measured_bytes", rank.measured_bytes[Index(category)]},
               {"peak_bytes", rank.peak_bytes[Index(category)]}};
    }
    ranks.push_back(Json{{"rank", rank.rank},
                         {"peak",
                          {{"total_bytes", rank.peak_total_bytes},
                           {"step", rank.peak_step},
                           {"phase", rank.peak_phase}}},
                         {"categories", categories}});
  }
  return Json{{"schema", kBaselineSchema},
              {"context",
               {{"world_size", c.world_size},
                {"device", c.device},
                {"backend", c.backend},
                {"libtorch_version", c.libtorch_version},
                {"dtype", c.dtype},
                {"parameters", c.parameters},
                {"git_sha", c.git_sha},
                {"config", c.config}}},
              {"tolerances", tolerances},
              {"ranks", ranks}};
}

bool SameFigures(const RunFigures& a, const RunFigures& b) {
  if (a.ranks.size() != b.ranks.size()) return false;
  for (size_t i = 0; i < a.ranks.size(); ++i) {
    if (!SameRank(a.ranks[i], b.ranks[i])) return false;
  }
  return true;
}

}  // namespace memprof
