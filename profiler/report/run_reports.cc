#include "profiler/report/run_reports.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include "profiler/base/atomic_file.h"
#include "profiler/base/category.h"
#include "profiler/report/chrome_trace.h"
#include "profiler/base/errors.h"
#include "profiler/report/report_html.h"
#include "profiler/report/report_markdown.h"
#include "profiler/report/report_text.h"
#include "profiler/base/schema_version.h"
#include "profiler/report/summary.h"

namespace memprof {
namespace fs = std::filesystem;
namespace {

using Json = nlohmann::ordered_json;

enum class Kind { kInteger, kNumber, kString, kBool, kObject, kArray };

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kInteger:
      return "an integer";
    case Kind::kNumber:
      return "a number";
    case Kind::kString:
      return "a string";
    case Kind::kBool:
      return "true or false";
    case Kind::kObject:
      return "an object";
    case Kind::kArray:
      return "an array";
  }
  return "?";
}

bool Is(const Json& value, Kind kind) {
  switch (kind) {
    case Kind::kInteger:
      return value.is_number_integer();
    case Kind::kNumber:
      return value.is_number();
    case Kind::kString:
      return value.is_string();
    case Kind::kBool:
      return value.is_boolean();
    case Kind::kObject:
      return value.is_object();
    case Kind::kArray:
      return value.is_array();
  }
  return false;
}

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

const Json& Require(const Json& parent, const std::string& path,
                    const std::string& key, Kind kind) {
  const std::string where = Join(path, key);
  const auto it = parent.find(key);
  if (it == parent.end()) throw InputError(where + ": missing");
  if (!Is(*it, kind)) {
    throw InputError(where + ": expected " + KindName(kind) + ", got " +
                     it->dump().substr(0, 40));
  }
  return *it;
}

// A member that may be absent (files of an earlier minor version), but is
// of `kind` when present.
void Optional(const Json& parent, const std::string& path,
              const std::string& key, Kind kind) {
  if (parent.contains(key)) Require(parent, path, key, kind);
}

void RequireAll(const Json& parent, const std::string& path,
                std::initializer_list<const char*> keys, Kind kind) {
  for (const char* key : keys) Require(parent, path, key, kind);
}

// Bytes by category: one integer per category name.
void RequireBreakdown(const Json& parent, const std::string& path,
                      const std::string& key) {
  const Json& breakdown = Require(parent, path, key, Kind::kObject);
  for (Category c : kAllCategories) {
    Require(breakdown, Join(path, key), std::string(CategoryName(c)),
            Kind::kInteger);
  }
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(std::string("cannot read: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError("read error");
  return text.str();
}

std::string RankPath(const std::string& dir, int rank) {
  return (fs::path(dir) / ("rank-" + std::to_string(rank) + ".json")).string();
}

}  // namespace

void ValidateRankReport(const Json& r) {
  if (!r.is_object()) throw InputError("expected a JSON object");
  const std::string schema = Require(r, "", "schema", Kind::kString);
  const std::string mismatch = SchemaMismatch(schema, "memprof.rank/1");
  if (!mismatch.empty()) {
    throw InputError("schema: " + mismatch +
                     ": render it with the memprof that wrote it, or profile "
                     "again with this one");
  }

  const Json& context = Require(r, "", "context", Kind::kObject);
  RequireAll(context, "context",
             {"rank", "world_size", "pid", "session_start_unix_us"},
             Kind::kInteger);
  RequireAll(context, "context",
             {"hostname", "device", "backend", "libtorch_version", "git_sha"},
             Kind::kString);
  const Json& config = Require(context, "context", "config", Kind::kObject);
  RequireAll(config, "context.config", {"model", "source"}, Kind::kString);
  const Json& train = Require(config, "context.config", "train", Kind::kObject);
  RequireAll(train, "context.config.train", {"steps", "micro_batch"},
             Kind::kInteger);
  Require(train, "context.config.train", "optimizer", Kind::kString);
  const Json& ddp = Require(r, "", "ddp", Kind::kObject);
  Require(ddp, "ddp", "buckets", Kind::kInteger);
  Require(ddp, "ddp", "bucket_cap_mb", Kind::kNumber);
  Require(ddp, "ddp", "gradient_as_bucket_view", Kind::kBool);
  const Json& hook = Require(r, "", "hook", Kind::kObject);
  if (!Require(hook, "hook", "installed", Kind::kBool).get<bool>()) {
    throw InputError(
        "hook.installed: false (a --no-hook run has step times only, no "
        "memory figures to report)");
  }
  RequireAll(r, "", {"parameters", "predicted_parameters", "micro_batch"},
             Kind::kInteger);

  const Json& categories = Require(r, "", "categories", Kind::kObject);
  for (Category c : kAllCategories) {
    const std::string name(CategoryName(c));
    const Json& entry = Require(categories, "categories", name, Kind::kObject);
    RequireAll(entry, "categories." + name,
               {"measured_bytes", "peak_bytes", "predicted_bytes", "end_bytes",
                "allocated_bytes", "freed_bytes"},
               Kind::kInteger);
  }

  const Json& peak = Require(r, "", "peak", Kind::kObject);
  RequireAll(peak, "peak", {"total_bytes", "step", "seq", "first_step"},
             Kind::kInteger);
  Require(peak, "peak", "phase", Kind::kString);
  RequireBreakdown(peak, "peak", "breakdown");
  const Json& predicted = Require(peak, "peak", "predicted", Kind::kObject);
  Require(predicted, "peak.predicted", "total_bytes", Kind::kInteger);
  RequireAll(predicted, "peak.predicted", {"phase", "what"}, Kind::kString);
  RequireBreakdown(predicted, "peak.predicted", "breakdown");

  const Json& steps = Require(r, "", "steps", Kind::kArray);
  if (steps.empty()) throw InputError("steps: empty (no step ran)");
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string path = "steps[" + std::to_string(i) + "]";
    if (!steps[i].is_object()) throw InputError(path + ": expected an object");
    RequireAll(steps[i], path, {"step", "peak_bytes"}, Kind::kInteger);
    Require(steps[i], path, "steady_state", Kind::kBool);
    Require(steps[i], path, "seconds", Kind::kNumber);
    Optional(steps[i], path, "completed", Kind::kBool);
    Optional(steps[i], path, "comm_seconds", Kind::kNumber);
    Require(steps[i], path, "peak_phase", Kind::kString);
    RequireBreakdown(steps[i], path, "breakdown");
  }

  const Json& timeline = Require(r, "", "timeline", Kind::kArray);
  for (size_t i = 0; i < timeline.size(); ++i) {
    const std::string path = "timeline[" + std::to_string(i) + "]";
    const Json& segment = timeline[i];
    if (!segment.is_object()) throw InputError(path + ": expected an object");
    RequireAll(segment, path,
               {"step", "begin_seq", "end_seq", "begin_us", "end_us",
                "peak_bytes", "peak_seq"},
               Kind::kInteger);
    Require(segment, path, "phase", Kind::kString);
    for (const char* key : {"begin_bytes", "peak_breakdown", "end_bytes"}) {
      RequireBreakdown(segment, path, key);
    }
  }

  const Json& series = Require(r, "", "series", Kind::kObject);
  Require(series, "series", "step", Kind::kInteger);
  const Json& seq = Require(series, "series", "seq", Kind::kArray);
  const Json& bytes = Require(series, "series", "bytes", Kind::kObject);
  for (Category c : kAllCategories) {
    const std::string name(CategoryName(c));
    const Json& values = Require(bytes, "series.bytes", name, Kind::kArray);
    if (values.size() != seq.size()) {
      throw InputError("series.bytes." + name + ": " +
                       std::to_string(values.size()) + " values for " +
                       std::to_string(seq.size()) + " points");
    }
    for (const Json& v : values) {
      if (!v.is_number_integer()) {
        throw InputError("series.bytes." + name + ": expected integers");
      }
    }
  }
  for (const Json& v : seq) {
    if (!v.is_number_integer())
      throw InputError("series.seq: expected integers");
  }

  // Optional (null unless --memory-limit stopped the rank).
  if (const auto oom = r.find("out_of_memory");
      oom != r.end() && !oom->is_null()) {
    if (!oom->is_object()) {
      throw InputError("out_of_memory: expected an object or null");
    }
    RequireAll(*oom, "out_of_memory",
               {"limit_bytes", "requested_bytes", "live_bytes", "seq", "step"},
               Kind::kInteger);
    RequireAll(*oom, "out_of_memory",
               {"phase", "verdict", "explanation", "message"}, Kind::kString);
    RequireBreakdown(*oom, "out_of_memory", "breakdown");
  }

  const Json& redundancy = Require(r, "", "redundancy", Kind::kObject);
  for (const auto& [name, entry] : redundancy.items()) {
    const std::string path = "redundancy." + name;
    if (!entry.is_object()) throw InputError(path + ": expected an object");
    RequireAll(entry, path, {"bytes", "redundant_bytes"}, Kind::kInteger);
    Require(entry, path, "identical_across_ranks", Kind::kBool);
  }
}

RunView RunViewOf(const std::string& dir, std::vector<Json> ranks) {
  RunView view;
  view.dir = dir;
  view.world_size = static_cast<int>(ranks.size());
  view.ranks = std::move(ranks);
  view.summary = BuildSummary(view.ranks);
  return view;
}

void RequireRunDirectory(const std::string& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    throw InputError(
        "--run " + dir + ": " +
        (fs::exists(dir, error) ? "not a directory" : "no such directory") +
        "; pass the --out directory of 'memprof profile'");
  }
}

RunView LoadRunView(const std::string& dir) {
  RequireRunDirectory(dir);
  std::error_code error;
  // rank-<r>.json files present, by rank.
  std::map<int, std::string> files;
  static const std::regex kRankFile("rank-(0|[1-9][0-9]{0,5})\\.json");
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    std::smatch match;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, match, kRankFile)) {
      files[std::stoi(match[1].str())] = entry.path().string();
    }
  }
  if (files.empty()) {
    throw InputError("--run " + dir +
                     ": no rank-<r>.json; pass the --out directory of "
                     "'memprof profile'");
  }

  RunView view;
  view.dir = dir;
  std::map<int, Json> good;
  std::vector<RankFileProblem> problems;
  for (const auto& [rank, path] : files) {
    try {
      Json doc;
      try {
        doc = Json::parse(ReadText(path));
      } catch (const Json::parse_error& e) {
        throw InputError(std::string("not JSON: ") + e.what());
      }
      ValidateRankReport(doc);
      const int named = doc["context"]["rank"].get<int>();
      if (named != rank) {
        throw InputError("context.rank is " + std::to_string(named) +
                         ", but the file is rank " + std::to_string(rank) +
                         "'s");
      }
      good.emplace(rank, std::move(doc));
    } catch (const InputError& e) {
      problems.push_back(RankFileProblem{rank, path, e.what()});
    }
  }
  for (const auto& [rank, doc] : good) {
    view.world_size =
        std::max(view.world_size, doc["context"]["world_size"].get<int>());
  }
  if (good.empty()) {
    std::string message = "--run " + dir + ": no usable rank report:";
    for (const RankFileProblem& p : problems) {
      message += "\n  " + p.path + ": " + p.reason;
    }
    throw InputError(message + "\nrerun 'memprof profile --out " + dir + "'");
  }
  for (int rank = 0; rank < view.world_size; ++rank) {
    if (files.count(rank) == 0) {
      problems.push_back(RankFileProblem{rank, RankPath(dir, rank), "missing"});
    }
  }
  for (auto it = good.begin(); it != good.end();) {
    const int size = it->second["context"]["world_size"].get<int>();
    if (it->first >= view.world_size || size != view.world_size) {
      problems.push_back(
          RankFileProblem{it->first, files[it->first],
                          "context.world_size is " + std::to_string(size) +
                              ", but the run has " +
                              std::to_string(view.world_size) + " ranks"});
      it = good.erase(it);
    } else {
      ++it;
    }
  }
  std::sort(problems.begin(), problems.end(),
            [](const RankFileProblem& a, const RankFileProblem& b) {
              return a.rank < b.rank;
            });
  for (auto& [rank, doc] : good) view.ranks.push_back(std::move(doc));
  view.problems = std::move(problems);
  view.summary = BuildSummary(view.ranks);
  return view;
}

void WriteRunReports(const RunView& view) {
  const ReportText text = BuildReportText(view);
  const fs::path dir(view.dir);
  WriteFileAtomically((dir / "report.md").string(), FormatReportMarkdown(text));
  WriteFileAtomically((dir / "report.html").string(),
                      FormatReportHtml(view, text));
  WriteFileAtomically((dir / "trace.json").string(),
                      ChromeTraceJson(view).dump() + "\n");
}

int RenderRunReports(const RunView& view, std::ostream& out,
                     std::ostream& err) {
  try {
    WriteRunReports(view);
  } catch (const std::runtime_error& e) {
    throw InputError(std::string(e.what()) + "; make " + view.dir +
                     " writable");
  }
  for (const RankFileProblem& problem : view.problems) {
    err << "memprof: rank " << problem.rank << ": " << problem.path << ": "
        << problem.reason << "\n";
  }
  out << "reports: " << view.dir << "/report.md, report.html, trace.json";
  if (!view.complete()) {
    out << " (incomplete: " << view.ranks.size() << " of " << view.world_size
        << " ranks)";
  }
  out << "\n" << std::flush;
  return view.complete() ? kExitOk : kExitBadInput;
}

}  // namespace memprof
