#include "profiler/gate/baseline.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

#include "profiler/base/errors.h"
#include "profiler/base/schema_version.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kMaxWorldSize = 1 << 16;

std::string Path(const std::string& where, const std::string& key) {
  return where.empty() ? key : where + "." + key;
}

std::string Element(const std::string& where, size_t i) {
  return where + "[" + std::to_string(i) + "]";
}

std::string Shorten(const std::string& text) {
  constexpr size_t kShown = 40;
  return text.size() > kShown ? text.substr(0, kShown) + "..." : text;
}

// A JSON value in an error message. Never dumps a container: those may be
// arbitrarily deep.
std::string Describe(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case Json::value_t::string:
      return "'" + Shorten(value.get_ref<const std::string&>()) + "'";
    case Json::value_t::number_float:
      return "the fraction " + value.dump();
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return value.dump();
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "a binary value";
  }
}

// Reads one document, failing with the origin, the JSON path and a remedy.
class Reader {
 public:
  Reader(std::string origin, std::string remedy)
      : origin_(std::move(origin)), remedy_(std::move(remedy)) {}

  [[noreturn]] void Fail(const std::string& where,
                         const std::string& reason) const {
    throw InputError(origin_ + ": " + (where.empty() ? "" : where + ": ") +
                     reason + "; " + remedy_);
  }

  Json Parse(const std::string& text) const {
    try {
      return Json::parse(text);
    } catch (const Json::parse_error& e) {
      std::string what = e.what();
      if (const size_t end = what.find("] "); end != std::string::npos) {
        what = what.substr(end + 2);
      }
      const bool truncated = e.byte >= text.size();
      Fail("", std::string(truncated ? "the file ends early (truncated?): "
                                     : "not valid JSON: ") +
                   what);
    } catch (const Json::exception& e) {
      // out_of_range 406: a number too large for a double ("1e400").
      std::string what = e.what();
      if (const size_t end = what.find("] "); end != std::string::npos) {
        what = what.substr(end + 2);
      }
      Fail("", "not valid JSON: " + what);
    }
  }

  const Json& Member(const Json& object, const std::string& where,
                     const std::string& key) const {
    const auto it = object.find(key);
    if (it == object.end()) {
      Fail(where, "missing '" + key + "'");
    }
    return *it;
  }

  const Json& Object(const Json& object, const std::string& where,
                     const std::string& key) const {
    const Json& value = Member(object, where, key);
    if (!value.is_object()) {
      Fail(Path(where, key), "expected an object, got " + Describe(value));
    }
    return value;
  }

  const Json& Array(const Json& object, const std::string& where,
                    const std::string& key) const {
    const Json& value = Member(object, where, key);
    if (!value.is_array()) {
      Fail(Path(where, key), "expected an array, got " + Describe(value));
    }
    return value;
  }

  std::string String(const Json& object, const std::string& where,
                     const std::string& key) const {
    const Json& value = Member(object, where, key);
    if (!value.is_string()) {
      Fail(Path(where, key), "expected a string, got " + Describe(value));
    }
    return value.get<std::string>();
  }

  int64_t Integer(const Json& object, const std::string& where,
                  const std::string& key, int64_t min, int64_t max) const {
    const Json& value = Member(object, where, key);
    const std::string range = "an integer in [" + std::to_string(min) + ", " +
                              std::to_string(max) + "]";
    if (!value.is_number_integer()) {
      Fail(Path(where, key), "expected " + range + ", got " + Describe(value));
    }
    // Parsed non-negative integers are unsigned: compare before narrowing.
    const bool in_range =
        value.is_number_unsigned()
            ? max >= 0 && value.get<uint64_t>() <= static_cast<uint64_t>(max) &&
                  (min <= 0 ||
                   value.get<uint64_t>() >= static_cast<uint64_t>(min))
            : value.get<int64_t>() >= min && value.get<int64_t>() <= max;
    if (!in_range) {
      Fail(Path(where, key), "expected " + range + ", got " + Describe(value));
    }
    return value.get<int64_t>();
  }

  int64_t Bytes(const Json& object, const std::string& where,
                const std::string& key) const {
    return Integer(object, where, key, 0, std::numeric_limits<int64_t>::max());
  }

  // context.config: "key": scalar or "section": {"key": scalar}.
  Json Config(const Json& context, const std::string& where) const {
    const Json& config = Object(context, where, "config");
    const std::string path = Path(where, "config");
    for (const auto& [name, value] : config.items()) {
      if (value.is_array()) {
        Fail(Path(path, name), "expected a value or a section, got an array");
      }
      if (!value.is_object()) continue;
      for (const auto& [key, leaf] : value.items()) {
        if (leaf.is_structured()) {
          Fail(Path(Path(path, name), key),
               "expected a value, got " + Describe(leaf) +
                   " (config keys are key or section.key)");
        }
      }
    }
    return config;  // shallow: copying is safe now
  }

  void Categories(const Json& parent, const std::string& where,
                  RankFigures& figures) const {
    const Json& categories = Object(parent, where, "categories");
    const std::string path = Path(where, "categories");
    for (Category c : kAllCategories) {
      const std::string name(CategoryName(c));
      const Json& entry = Object(categories, path, name);
      figures.measured_bytes[Index(c)] =
          Bytes(entry, Path(path, name), "measured_bytes");
      figures.peak_bytes[Index(c)] =
          Bytes(entry, Path(path, name), "peak_bytes");
    }
  }

  void Peak(const Json& parent, const std::string& where,
            RankFigures& figures) const {
    const Json& peak = Object(parent, where, "peak");
    const std::string path = Path(where, "peak");
    figures.peak_total_bytes = Bytes(peak, path, "total_bytes");
    figures.peak_step =
        static_cast<int>(Integer(peak, path, "step", 0, INT_MAX));
    figures.peak_phase = String(peak, path, "phase");
  }

  void Schema(const Json& doc, const std::string& expected) const {
    if (!doc.is_object()) {
      Fail("", "expected a JSON object, got " + Describe(doc));
    }
    const Json& schema = Member(doc, "", "schema");
    if (!schema.is_string()) {
      Fail("schema", "expected a string, got " + Describe(schema));
    }
    const std::string found = schema.get<std::string>();
    const std::string mismatch = SchemaMismatch(found, expected);
    if (mismatch.empty()) return;
    std::string hint;
    if (found == kRankReportSchema) {
      hint = " (this is a rank report)";
    } else if (found == kBaselineSchema) {
      hint = " (this is a baseline)";
    }
    Fail("schema", mismatch + hint);
  }

  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  std::string remedy_;
};

Tolerance ToleranceValue(const Reader& reader, const Json& value,
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
        reader.Fail(Path(where, "percent"),
                    "expected a non-negative number, got " + Describe(percent));
      }
      tolerance.percent = percent.get<double>() + 0.0;  // no -0
    }
    return tolerance;
  }
  reader.Fail(where,
              "expected \"2%\", \"4096\", 4096 or {\"percent\": 2, "
              "\"bytes\": 4096}, got " +
                  Describe(value));
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

RankReportFigures ParseRankReport(const std::string& text,
                                  const std::string& origin) {
  const Reader reader(origin,
                      "rerun 'memprof profile' to write the reports again");
  const Json doc = reader.Parse(text);
  reader.Schema(doc, kRankReportSchema);
  RankReportFigures out;
  const Json& context = reader.Object(doc, "", "context");
  out.context.world_size = static_cast<int>(
      reader.Integer(context, "context", "world_size", 1, kMaxWorldSize));
  out.figures.rank = static_cast<int>(reader.Integer(
      context, "context", "rank", 0, out.context.world_size - 1));
  out.context.device = reader.String(context, "context", "device");
  out.context.backend = reader.String(context, "context", "backend");
  out.context.libtorch_version =
      reader.String(context, "context", "libtorch_version");
  out.context.git_sha = reader.String(context, "context", "git_sha");
  out.context.config = reader.Config(context, "context");
  const Json& train =
      reader.Object(out.context.config, "context.config", "train");
  out.context.dtype = reader.String(train, "context.config.train", "dtype");
  const Json& installed =
      reader.Member(reader.Object(doc, "", "hook"), "hook", "installed");
  if (installed != true) {
    reader.Fail("hook.installed",
                "is " + installed.dump() +
                    ": a --no-hook run has step times only, no memory "
                    "figures to gate");
  }
  out.context.parameters = reader.Bytes(doc, "", "parameters");
  reader.Categories(doc, "", out.figures);
  reader.Peak(doc, "", out.figures);
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
  const Reader reader(
      origin,
      "write it with 'memprof baseline --run DIR --out " + origin + "'");
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
  context.config = reader.Config(c, "context");

  if (doc.contains("tolerances")) {
    const Json& tolerances = reader.Object(doc, "", "tolerances");
    for (const auto& [key, value] : tolerances.items()) {
      const std::string where = Path("tolerances", key);
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
    const std::string where = Element("ranks", i);
    const Json& entry = ranks[i];
    if (!entry.is_object()) {
      reader.Fail(where, "expected an object, got " + Describe(entry));
    }
    RankFigures figures;
    figures.rank = static_cast<int>(
        reader.Integer(entry, where, "rank", 0, context.world_size - 1));
    if (figures.rank != static_cast<int>(i)) {
      reader.Fail(Path(where, "rank"), "is " + std::to_string(figures.rank) +
                                           ", expected " + std::to_string(i) +
                                           " (ranks in order)");
    }
    reader.Peak(entry, where, figures);
    reader.Categories(entry, where, figures);
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
