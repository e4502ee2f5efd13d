#include "profiler/gate/regression_check.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "profiler/base/category.h"
#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"
#include "profiler/base/text_table.h"
#include "profiler/gate/baseline_search.h"
#include "profiler/report/rank_report.h"

namespace memprof {
namespace fs = std::filesystem;
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kAbsent = "(absent)";

// Config keys reported as their own context keys.
bool SkippedConfigKey(const std::string& key) {
  return key == "source" || key == "ddp.world_size" || key == "train.dtype" ||
         key == "train.device" || key == "ddp.backend";
}

// Config keys newer than some baselines and rank reports, and the value
// their absence stands for.
const std::map<std::string, Json>& KeysAddedLater() {
  static const std::map<std::string, Json> keys = {
      {"ddp.zero_stage", 0},                       // memprof.rank/1.3
      {"train.momentum", 0.0},                     // memprof.rank/1.5
      {"train.activation_checkpointing", "none"},  // memprof.rank/1.5
      {"train.freeze", ""},                        // memprof.rank/1.11
      {"train.grad_accum", 1},                     // memprof.rank/1.12
      {"lora.rank", 0},                            // memprof.rank/1.12
      {"lora.alpha", 8.0},                         // memprof.rank/1.12
      {"lora.dropout", 0.0},                       // memprof.rank/1.12
      {"lora.targets", ""},                        // memprof.rank/1.12
  };
  return keys;
}

std::string Text(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// "key" or "section.key" -> value; configs are two levels deep at most
// (ParseRankReport and ParseBaseline check).
std::map<std::string, Json> Flatten(const Json& config) {
  std::map<std::string, Json> leaves;
  if (!config.is_object()) return leaves;
  for (const auto& [name, value] : config.items()) {
    if (value.is_object()) {
      for (const auto& [key, leaf] : value.items()) {
        if (!leaf.is_structured()) leaves[name + "." + key] = leaf;
      }
    } else if (!value.is_array()) {
      leaves[name] = value;
    }
  }
  return leaves;
}

std::string FigureWords(const std::string& figure) {
  if (figure == "measured_bytes") return "at peak";
  if (figure == "peak_bytes") return "own peak";
  return "total";
}

// "+2.73%", "-0.50%", "n/a" (baseline 0, figure moved).
std::string Percent(const FigureCheck& f) {
  if (f.baseline_bytes == 0) return f.delta_bytes == 0 ? "+0.00%" : "n/a";
  char text[32];
  std::snprintf(text, sizeof text, "%+.2f%%",
                100.0 * static_cast<double>(f.delta_bytes) /
                    static_cast<double>(f.baseline_bytes));
  return text;
}

std::string Outcome(const CheckReport& r) {
  if (r.regressed > 0) return "regressed";
  if (r.improved > 0) return "improved";
  return "ok";
}

std::string Counts(const CheckReport& r) {
  const size_t within = r.figures.size() - r.regressed - r.improved;
  return std::to_string(r.regressed) + " regressed, " +
         std::to_string(r.improved) + " improved, " + std::to_string(within) +
         " within tolerance";
}

std::string TolerancesLine(const CheckReport& r) {
  std::string line;
  for (const std::string& key : ToleranceKeys()) {
    const auto it = r.tolerances.find(key);
    if (it == r.tolerances.end()) continue;
    line +=
        (line.empty() ? "" : ", ") + key + " " + FormatTolerance(it->second);
  }
  return line;
}

std::string ChangesLine(const CheckReport& r) {
  std::string line;
  for (const ContextDifference& d : r.config_changes) {
    line +=
        (line.empty() ? "" : ", ") + d.key + " " + d.baseline + " -> " + d.now;
  }
  return line;
}

// The rows in the order people read them: regressed, then improved, then
// ok, each group in the report's order; with `only_changed`, no ok row.
std::vector<const FigureCheck*> RowsToShow(const CheckReport& r,
                                           bool only_changed) {
  std::vector<const FigureCheck*> rows;
  for (Verdict verdict :
       {Verdict::kRegressed, Verdict::kImproved, Verdict::kOk}) {
    if (only_changed && verdict == Verdict::kOk) break;
    for (const FigureCheck& f : r.figures) {
      if (f.verdict == verdict) rows.push_back(&f);
    }
  }
  return rows;
}

// "32 rows within tolerance not shown (--only-changed)", or "" when every
// row is shown.
std::string HiddenRowsLine(const CheckReport& r, size_t shown) {
  const size_t hidden = r.figures.size() - shown;
  if (hidden == 0) return "";
  return std::to_string(hidden) + (hidden == 1 ? " row" : " rows") +
         " within tolerance not shown (--only-changed)\n";
}

std::string Header(const CheckReport& r) {
  std::string text = r.model + ", " + std::to_string(r.world_size) + " rank" +
                     (r.world_size == 1 ? "" : "s") + ", " +
                     std::to_string(r.baseline_parameters) + " parameters";
  if (r.now_parameters != r.baseline_parameters) {
    text += " in the baseline, " + std::to_string(r.now_parameters) + " now";
  }
  return text;
}

}  // namespace

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kRegressed:
      return "regressed";
    case Verdict::kImproved:
      return "improved";
    default:
      return "ok";
  }
}

std::vector<ContextDifference> CompareContexts(const RunContext& baseline,
                                               const RunContext& now) {
  std::vector<ContextDifference> out;
  const auto hard = [&](const char* key, const std::string& a,
                        const std::string& b) {
    if (a != b) out.push_back({key, a, b, false});
  };
  hard("world_size", std::to_string(baseline.world_size),
       std::to_string(now.world_size));
  hard("device", Text(baseline.device), Text(now.device));
  hard("backend", Text(baseline.backend), Text(now.backend));
  hard("dtype", Text(baseline.dtype), Text(now.dtype));
  hard("libtorch_version", Text(baseline.libtorch_version),
       Text(now.libtorch_version));

  std::map<std::string, Json> a = Flatten(baseline.config);
  std::map<std::string, Json> b = Flatten(now.config);
  // Keys added to the config after a file was written: absent means the
  // value runs had before the key existed.
  for (const auto& [key, value] : KeysAddedLater()) {
    a.emplace(key, value);
    b.emplace(key, value);
  }
  // gpt.positions (memprof.rank/1.13): absent, the table had seq_len rows.
  for (std::map<std::string, Json>* config : {&a, &b}) {
    const auto seq_len = config->find("gpt.seq_len");
    if (seq_len != config->end()) {
      config->emplace("gpt.positions", seq_len->second);
    }
  }
  std::map<std::string, std::pair<std::string, std::string>> changed;
  for (const auto& [key, value] : a) {
    const auto it = b.find(key);
    if (it == b.end()) {
      changed[key] = {Text(value), kAbsent};
    } else if (it->second != value) {
      changed[key] = {Text(value), Text(it->second)};
    }
  }
  for (const auto& [key, value] : b) {
    if (a.count(key) == 0) changed[key] = {kAbsent, Text(value)};
  }
  for (const auto& [key, values] : changed) {
    if (SkippedConfigKey(key)) continue;
    out.push_back({"config." + key, values.first, values.second, true});
  }
  return out;
}

namespace {

// Note [Context policy]: the remedy for a refused comparison. A baseline
// holds the figures of one config; a run of another config is compared with
// a baseline of its own (one beside this baseline that holds the run's
// context, when there is one) or gets a new baseline under a new name; the
// baseline itself is rewritten only for an intended change of its own
// model's config, after the change's cost is gated.
std::string MismatchRemedy(const std::vector<ContextDifference>& differences,
                           bool hard, const std::string& baseline_origin,
                           const RunContext& now,
                           const std::string& run_origin) {
  bool model_changed = false;
  for (const ContextDifference& d : differences) {
    model_changed = model_changed || d.key == "config.model";
  }
  const fs::path dir = fs::path(baseline_origin).parent_path();
  std::string text =
      std::string(hard ? "the figures are per rank, device and build"
                       : "the configs differ") +
      " (" + std::to_string(differences.size()) +
      (differences.size() == 1 ? " key" : " keys") + " above), so " +
      baseline_origin + " does not hold this run's figures. ";
  const std::vector<std::string> same =
      FindBaselines(dir.string(), [&](const RunContext& context) {
        return CompareContexts(context, now).empty();
      });
  if (!same.empty()) {
    text += "Compare with the baseline of the same config: " + same.front() +
            (same.size() > 1
                 ? " (or " + std::to_string(same.size() - 1) + " more there)"
                 : "") +
            ".";
  } else {
    // A new name: never the baseline's own, nor another file's.
    std::string name = BaselineFileName(now);
    std::error_code error;
    if (fs::path(baseline_origin).filename() == name ||
        fs::exists(dir / name, error)) {
      name = fs::path(name).stem().string() + "-new.json";
    }
    // `profile --check` refuses before training: there is no run yet.
    const bool run_written = fs::exists(RankReportPath(run_origin, 0), error);
    text += "No baseline in " +
            (dir.empty() ? std::string(".") : dir.string()) +
            " holds this run's config: create one under a new name: " +
            (run_written ? "" : "profile it without --check, then ") +
            "memprof baseline --run " + run_origin + " --out " +
            (dir / name).string() + ".";
  }
  if (!hard && !model_changed) {
    text += " If the change is meant to change " + baseline_origin +
            "'s figures, gate what it costs with --allow-config-change, "
            "then rewrite it: memprof baseline --run " +
            run_origin + " --out " + baseline_origin + ".";
  }
  return text;
}

}  // namespace

std::vector<ContextDifference> RequireComparableContext(
    const Baseline& baseline, const std::string& baseline_origin,
    const RunContext& now, const std::string& run_origin,
    bool allow_config_change) {
  const std::vector<ContextDifference> differences =
      CompareContexts(baseline.run.context, now);
  bool refused = false;
  bool hard = false;
  std::string listed;
  for (const ContextDifference& d : differences) {
    if (!d.config) hard = true;
    if (!d.config || !allow_config_change) refused = true;
    listed += "\n  " + d.key + ": baseline " + d.baseline + ", run " + d.now;
  }
  if (refused) {
    throw InputError(
        "run " + run_origin + " does not match the context of " +
        baseline_origin + ":" + listed + "\n" +
        MismatchRemedy(differences, hard, baseline_origin, now, run_origin));
  }
  return differences;
}

namespace {

// Throws InputError when the contexts differ in a way the policy refuses
// (Note [Context policy]), or the rank counts differ; returns every
// difference.
std::vector<ContextDifference> RequireComparableContexts(
    const Baseline& baseline, const std::string& baseline_origin,
    const RunFigures& now, const std::string& run_origin,
    bool allow_config_change) {
  const std::vector<ContextDifference> differences = RequireComparableContext(
      baseline, baseline_origin, now.context, run_origin, allow_config_change);
  if (now.ranks.size() != baseline.run.ranks.size()) {
    throw InputError(run_origin + ": " + std::to_string(now.ranks.size()) +
                     " ranks, " + baseline_origin + ": " +
                     std::to_string(baseline.run.ranks.size()));
  }
  return differences;
}

// One figure of one rank against its tolerance, counted in `report`.
void AddFigure(CheckReport& report, const std::string& key, const char* figure,
               int rank, int64_t before, int64_t after) {
  FigureCheck f;
  f.key = key;
  f.figure = figure;
  f.rank = rank;
  f.baseline_bytes = before;
  f.now_bytes = after;
  f.delta_bytes = after - before;  // both in [0, INT64_MAX]: no overflow
  f.allowed_bytes = AllowedBytes(report.tolerances.at(key), before);
  if (f.delta_bytes > f.allowed_bytes) {
    f.verdict = Verdict::kRegressed;
    ++report.regressed;
  } else if (f.delta_bytes < -f.allowed_bytes) {
    f.verdict = Verdict::kImproved;
    ++report.improved;
  }
  report.figures.push_back(f);
}

}  // namespace

CheckReport CompareWithBaseline(const Baseline& baseline,
                                const std::string& baseline_origin,
                                const RunFigures& now,
                                const std::string& run_origin,
                                const ToleranceSettings& tolerances,
                                bool allow_config_change) {
  CheckReport report;
  report.config_changes = RequireComparableContexts(
      baseline, baseline_origin, now, run_origin, allow_config_change);
  report.baseline_origin = baseline_origin;
  report.run_origin = run_origin;
  const Json& config = baseline.run.context.config;
  report.model = config.is_object() && config.contains("model") &&
                         config["model"].is_string()
                     ? config["model"].get<std::string>()
                     : "model";
  // A program's run is named by its program's name.
  if (report.model == "program" && config.contains("program") &&
      config["program"].is_object() &&
      config["program"].value("name", "").size() > 0) {
    report.model = "program " + config["program"].value("name", "");
  }
  report.world_size = baseline.run.context.world_size;
  report.baseline_parameters = baseline.run.context.parameters;
  report.now_parameters = now.context.parameters;
  report.tolerances = ResolveTolerances(tolerances, baseline.tolerances);

  const auto& before = baseline.run.ranks;
  for (Category c : CategoriesOf(baseline.run.context.dtype)) {
    const std::string key(CategoryName(c));
    const int i = Index(c);
    for (size_t r = 0; r < before.size(); ++r) {
      AddFigure(report, key, "measured_bytes", static_cast<int>(r),
                before[r].measured_bytes[i], now.ranks[r].measured_bytes[i]);
    }
    for (size_t r = 0; r < before.size(); ++r) {
      AddFigure(report, key, "peak_bytes", static_cast<int>(r),
                before[r].peak_bytes[i], now.ranks[r].peak_bytes[i]);
    }
  }
  for (size_t r = 0; r < before.size(); ++r) {
    AddFigure(report, "peak", "total_bytes", static_cast<int>(r),
              before[r].peak_total_bytes, now.ranks[r].peak_total_bytes);
  }
  return report;
}

int CheckExitCode(const CheckReport& report, bool strict) {
  if (report.regressed > 0) return kExitCheckFailed;
  if (strict && report.improved > 0) return kExitCheckFailed;
  return kExitOk;
}

std::string FormatCheckTable(const CheckReport& r, bool only_changed) {
  std::ostringstream out;
  out << "memprof check: " << r.run_origin << " against " << r.baseline_origin
      << "\n"
      << Header(r) << "\n";
  if (!r.config_changes.empty()) {
    out << "config changes (allowed by --allow-config-change): "
        << ChangesLine(r) << "\n";
  }
  out << "\n";
  const std::vector<const FigureCheck*> rows = RowsToShow(r, only_changed);
  if (!rows.empty()) {
    using Align = TextTable::Align;
    TextTable table({{"category", Align::kLeft},
                     {"figure", Align::kLeft},
                     {"rank", Align::kRight},
                     {"baseline", Align::kRight},
                     {"now", Align::kRight},
                     {"delta", Align::kRight},
                     {"delta %", Align::kRight},
                     {"allowed", Align::kRight},
                     {"verdict", Align::kLeft}});
    for (const FigureCheck* f : rows) {
      table.AddRow({f->key, FigureWords(f->figure), std::to_string(f->rank),
                    HumanBytes(f->baseline_bytes), HumanBytes(f->now_bytes),
                    SignedBytesAndExact(f->delta_bytes), Percent(*f),
                    BytesAndExact(f->allowed_bytes),
                    std::string(VerdictName(f->verdict))});
    }
    out << table.Render() << "\n";
  }
  out << HiddenRowsLine(r, rows.size())
      << "bytes: 'at peak' is live at the steady-state peak, 'own peak' the "
         "category's own maximum, 'total' the peak itself; the check's JSON "
         "(--json) has every figure in bytes\n"
      << "tolerances: " << TolerancesLine(r) << "\n"
      << "result: " << Counts(r) << "\n";
  if (r.regressed > 0) {
    out << "FAILED: " << r.regressed
        << " figure(s) grew beyond their tolerance\n";
  }
  if (r.improved > 0 && r.regressed > 0) {
    // A baseline of this run would keep its regressions.
    out << r.improved
        << " figure(s) improved beyond tolerance: refresh the baseline once "
           "the regressions are fixed, not from this run\n";
  } else if (r.improved > 0) {
    out << "improved beyond tolerance: refresh the baseline with 'memprof "
           "baseline --run "
        << r.run_origin << " --out " << r.baseline_origin << "'\n";
  }
  return out.str();
}

std::string FormatCheckMarkdown(const CheckReport& r, bool only_changed) {
  std::ostringstream out;
  const std::string outcome = Outcome(r);
  out << "### memprof memory check: "
      << (outcome == "regressed"  ? "regressed"
          : outcome == "improved" ? "improved (refresh the baseline)"
                                  : "passed")
      << "\n\n"
      << "`" << r.run_origin << "` against `" << r.baseline_origin
      << "`: " << Header(r) << ". " << Counts(r) << ".\n\n";
  if (!r.config_changes.empty()) {
    out << "Config changes (allowed by `--allow-config-change`): "
        << ChangesLine(r) << ".\n\n";
  }
  const std::vector<const FigureCheck*> rows = RowsToShow(r, only_changed);
  if (!rows.empty()) {
    out << "| category | figure | rank | baseline | now | delta | delta % | "
           "allowed | verdict |\n"
        << "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n";
  }
  for (const FigureCheck* f : rows) {
    const std::string verdict(VerdictName(f->verdict));
    out << "| " << f->key << " | " << FigureWords(f->figure) << " | " << f->rank
        << " | " << HumanBytes(f->baseline_bytes) << " | "
        << HumanBytes(f->now_bytes) << " | "
        << SignedBytesAndExact(f->delta_bytes) << " | " << Percent(*f) << " | "
        << BytesAndExact(f->allowed_bytes) << " | "
        << (f->verdict == Verdict::kOk ? verdict : "**" + verdict + "**")
        << " |\n";
  }
  if (rows.size() < r.figures.size()) {
    out << "\n" << HiddenRowsLine(r, rows.size());
  }
  out << "\nTolerances: " << TolerancesLine(r) << ".\n";
  return out.str();
}

nlohmann::ordered_json CheckReportToJson(const CheckReport& r) {
  Json changes = Json::array();
  for (const ContextDifference& d : r.config_changes) {
    changes.push_back(
        Json{{"key", d.key}, {"baseline", d.baseline}, {"now", d.now}});
  }
  Json tolerances = Json::object();
  for (const std::string& key : ToleranceKeys()) {
    const auto it = r.tolerances.find(key);
    if (it == r.tolerances.end()) continue;
    tolerances[key] =
        Json{{"percent", it->second.percent}, {"bytes", it->second.bytes}};
  }
  Json figures = Json::array();
  for (const FigureCheck& f : r.figures) {
    Json percent = nullptr;
    if (f.baseline_bytes > 0) {
      percent = 100.0 * static_cast<double>(f.delta_bytes) /
                static_cast<double>(f.baseline_bytes);
    }
    figures.push_back(Json{{"key", f.key},
                           {"figure", f.figure},
                           {"rank", f.rank},
                           {"baseline_bytes", f.baseline_bytes},
                           {"now_bytes", f.now_bytes},
                           {"delta_bytes", f.delta_bytes},
                           {"delta_percent", percent},
                           {"allowed_bytes", f.allowed_bytes},
                           {"verdict", std::string(VerdictName(f.verdict))}});
  }
  return Json{
      {"schema", kCheckSchema},
      {"baseline", r.baseline_origin},
      {"run", r.run_origin},
      {"result", Outcome(r)},
      {"regressed", r.regressed},
      {"improved", r.improved},
      {"world_size", r.world_size},
      {"parameters",
       {{"baseline", r.baseline_parameters}, {"now", r.now_parameters}}},
      {"config_changes", changes},
      {"tolerances", tolerances},
      {"figures", figures}};
}

}  // namespace memprof
