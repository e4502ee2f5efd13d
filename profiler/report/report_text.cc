#include "profiler/report/report_text.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "profiler/base/category.h"
#include "profiler/base/effective_config.h"
#include "profiler/base/human_bytes.h"
#include "profiler/predict/fit.h"
#include "profiler/predict/prediction.h"
#include "profiler/report/gpu_tables.h"
#include "profiler/report/headline.h"
#include "profiler/report/rank_outcome.h"
#include "profiler/report/scope_table.h"
#include "profiler/report/summary.h"

namespace memprof {
namespace {

std::string Plural(int64_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::string Bytes(int64_t bytes) { return HumanBytes(bytes); }

std::string Scalar(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_float()) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", value.get<double>());
    return text;
  }
  return value.dump();
}

std::string Number(double value) { return Scalar(nlohmann::json(value)); }

std::string RankHeader(const RankReport& rank) {
  return "rank " + std::to_string(rank.context.rank);
}

// "4", or "4 configured, stopped in step 2 (out of memory)", "... stopped
// before step 1 (killed)", "(killed or failed)" when the
// capture cannot tell why.
std::string StepsRun(const RankReport& rank) {
  const int64_t configured = ConfiguredSteps(rank);
  if (!rank.steps.empty() && rank.steps.back().completed && configured > 0) {
    return std::to_string(configured);
  }
  const std::string& ending =
      rank.post_mortem ? rank.post_mortem->killed_by : std::string();
  const std::string cause = rank.out_of_memory         ? "out of memory"
                            : !rank.post_mortem        ? "cut short"
                            : ending == kUnknownEnding ? "killed or failed"
                            : ending.rfind("failed: ", 0) == 0 ? "failed"
                                                               : "killed";
  return (configured > 0 ? std::to_string(configured) + " configured, " : "") +
         "stopped " +
         (rank.steps.empty()
              ? std::string("before step 1")
              : "in step " + std::to_string(rank.steps.back().step)) +
         " (" + cause + ")";
}

// "steady state from step 3", or that no steady-state step completed.
std::string SteadyState(const RankReport& rank) {
  return ReachedSteadyState(rank) ? "steady state from step " +
                                        std::to_string(rank.steady_first_step)
                                  : "no steady-state step completed";
}

// "—" for a figure of a rank that never completed a steady-state step: its
// partial figures are not a whole step's, and are not compared.
constexpr const char* kNotReached = "—";

// A note for each rank of `view` that completed no steady-state step.
std::vector<std::string> NotReachedNotes(const RunView& view) {
  std::vector<std::string> notes;
  for (const RankReport& rank : view.ranks) {
    if (ReachedSteadyState(rank)) continue;
    const std::string why = UnfinishedReason(rank);
    notes.push_back(RankHeader(rank) + " completed no steady-state step" +
                    (why.empty() ? "" : " (it " + why + ")") +
                    ": its figures (" + kNotReached +
                    ") are not a whole step's and are not compared with the "
                    "predictions.");
  }
  return notes;
}

// "depth 3, hidden 64, ...": the model's section of the config, by key.
std::string ModelShape(const RunConfig& config) {
  const nlohmann::json all = ToJson(config);
  std::string shape;
  for (const auto& [key, value] : all[config.model].items()) {
    shape += (shape.empty() ? "" : ", ") + key + " " + Scalar(value);
  }
  return shape;
}

// False when the rank ran out of memory while building the model: no
// parameter was counted.
bool ModelBuilt(const RankReport& rank) {
  return rank.parameters > 0 || !rank.out_of_memory;
}

// "11,082 (predicted 11,082)", or "none built (predicted 11,082)".
std::string Parameters(const RankReport& rank) {
  return (ModelBuilt(rank) ? GroupedInteger(rank.parameters)
                           : std::string("none built")) +
         " (predicted " + GroupedInteger(rank.predicted_parameters) + ")";
}

std::string Hosts(const RunView& view) {
  std::set<std::string> hosts;
  for (const RankReport& rank : view.ranks) hosts.insert(rank.context.hostname);
  std::string list;
  for (const std::string& host : hosts) {
    list += (list.empty() ? "" : ", ") + host;
  }
  return Plural(static_cast<int64_t>(hosts.size()), "host") + ": " + list;
}

std::vector<std::pair<std::string, std::string>> Context(const RunView& view) {
  const RankReport& first = view.ranks.front();
  const ReportContext& context = first.context;
  const RunConfig& config = context.config;
  const std::string shape = ModelShape(config);
  return {
      {"config", config.source},
      {"model", config.model + (shape.empty() ? "" : ": " + shape)},
      {"parameters", Parameters(first)},
      {"ranks", std::to_string(view.world_size) + " (" + context.backend +
                    ", " + context.device + ") on " + Hosts(view)},
      {"micro-batch", std::to_string(first.micro_batch) + " per rank"},
      {"steps", StepsRun(first) + "; " + SteadyState(first)},
      {"optimizer", config.train.optimizer + ", " + config.train.dtype},
      {"DDP", Plural(first.ddp.buckets, "bucket") + ", bucket_cap_mb " +
                  Number(first.ddp.bucket_cap_mb) +
                  ", gradient_as_bucket_view " +
                  (first.ddp.gradient_as_bucket_view ? "true" : "false") +
                  (config.ddp.zero_stage != 0
                       ? ", zero_stage " + std::to_string(config.ddp.zero_stage)
                       : "")},
      {"libtorch", context.libtorch_version},
      {"git", context.git_sha},
  };
}

// Every key the run used, its value and where the value came from.
ReportTable ConfigTable(const RunConfig& config) {
  ReportTable table;
  table.id = "config";
  table.title = "Effective config";
  table.caption =
      "Every key the run used, its value and where the value came from: the "
      "config file and line, a flag, or memprof's default.";
  table.header = {"key", "value", "from"};
  table.numeric = {false, false, false};
  for (const ConfigEntry& e : EffectiveConfig(config)) {
    table.rows.push_back(
        {e.key, e.value, e.origin.empty() ? "not recorded" : e.origin});
  }
  if (config.origins.empty()) {
    table.notes.push_back(
        "This report was written before memprof recorded where each value "
        "came from.");
  }
  return table;
}

// "42.00": bytes per parameter, for model state only.
std::string BytesPerParameter(const RankReport& rank, Category c) {
  if (!IsModelState(c) || rank.parameters <= 0) return "";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f",
                static_cast<double>(rank.Of(c).peak_bytes) /
                    static_cast<double>(rank.parameters));
  return text;
}

ReportTable CategoriesTable(const RunView& view) {
  const RankReport& first = view.ranks.front();
  ReportTable table;
  table.id = "categories";
  table.title = "Memory by category";
  table.caption =
      "Each category's largest live bytes in a steady-state step "
      "(temporaries: their value at the peak), predicted and measured on each "
      "rank; error = measured - predicted.";
  table.header = {"category", "predicted"};
  for (const RankReport& rank : view.ranks) {
    table.header.push_back(RankHeader(rank));
    table.header.push_back("error");
  }
  table.header.push_back("bytes/P");
  table.numeric.assign(table.header.size(), true);
  table.numeric[0] = false;
  for (Category c : ShownCategories(view.ranks)) {
    std::vector<std::string> row = {std::string(CategoryName(c)),
                                    Bytes(first.Of(c).predicted_bytes)};
    for (const RankReport& rank : view.ranks) {
      const CategoryFigures& f = rank.Of(c);
      if (!ReachedSteadyState(rank)) {
        row.insert(row.end(), {kNotReached, kNotReached});
        continue;
      }
      row.push_back(Bytes(ComparedBytes(f, c)));
      row.push_back(
          FormatError(ErrorOf(ComparedBytes(f, c), f.predicted_bytes)));
    }
    row.push_back(ReachedSteadyState(first) ? BytesPerParameter(first, c) : "");
    table.rows.push_back(row);
  }
  std::vector<std::string> peak = {"peak (all)",
                                   Bytes(first.predicted_peak.total_bytes)};
  for (const RankReport& rank : view.ranks) {
    if (!ReachedSteadyState(rank)) {
      peak.insert(peak.end(), {kNotReached, kNotReached});
      continue;
    }
    peak.push_back(Bytes(rank.peak.total_bytes));
    peak.push_back(FormatError(
        ErrorOf(rank.peak.total_bytes, rank.predicted_peak.total_bytes)));
  }
  peak.push_back("");
  table.rows.push_back(peak);
  for (std::string& note : NotReachedNotes(view)) {
    table.notes.push_back(std::move(note));
  }
  if (first.checkpointing) {
    table.notes.push_back(CheckpointingSentence(view.ranks) + ".");
  }
  table.notes.push_back(
      "bytes/P: bytes per parameter on rank " +
      std::to_string(first.context.rank) + " (" +
      BytesPerParameterNote(first.context.config) +
      "). Model state does not shrink with more ranks; only activations "
      "follow the per-rank micro-batch.");
  const std::string split = TrainedFrozenSentence(
      first.parameters, first.trained_parameters, first.context.config,
      first.Of(Category::kDdpBuckets).predicted_bytes > 0);
  if (!split.empty())
    table.notes.push_back("Frozen parameters: " + split + ".");
  return table;
}

ReportTable PeakTable(const RunView& view) {
  ReportTable table;
  table.id = "peak";
  table.title = "Peak";
  const RankReport& first = view.ranks.front();
  const PredictedPeak& predicted = first.predicted_peak;
  table.caption =
      "Live bytes by category at each rank's steady-state peak" +
      (ReachedSteadyState(first)
           ? " (steps " + std::to_string(first.steady_first_step) + " on)"
           : std::string()) +
      ", next to the predicted peak.";
  table.header = {"category", "predicted"};
  for (const RankReport& rank : view.ranks) {
    table.header.push_back(RankHeader(rank));
  }
  table.numeric.assign(table.header.size(), true);
  table.numeric[0] = false;
  for (Category c : ShownCategories(view.ranks)) {
    std::vector<std::string> row = {std::string(CategoryName(c)),
                                    Bytes(predicted.breakdown[Index(c)])};
    for (const RankReport& rank : view.ranks) {
      row.push_back(ReachedSteadyState(rank)
                        ? Bytes(rank.peak.breakdown[Index(c)])
                        : kNotReached);
    }
    table.rows.push_back(row);
  }
  std::vector<std::string> total = {"total", Bytes(predicted.total_bytes)};
  for (const RankReport& rank : view.ranks) {
    total.push_back(ReachedSteadyState(rank) ? Bytes(rank.peak.total_bytes)
                                             : kNotReached);
  }
  table.rows.push_back(total);
  for (const RankReport& rank : view.ranks) {
    if (!ReachedSteadyState(rank)) {
      table.notes.push_back(RankHeader(rank) +
                            ": no steady-state step completed.");
      continue;
    }
    const PeakFigures& peak = rank.peak;
    table.notes.push_back(RankHeader(rank) + ": " + Bytes(peak.total_bytes) +
                          " (" + GroupedInteger(peak.total_bytes) +
                          " B) in step " + std::to_string(peak.step) + ", " +
                          Words(std::string(PhaseName(peak.phase))) +
                          ", at event " + GroupedInteger(peak.seq) + ".");
  }
  table.notes.push_back("predicted: " + Bytes(predicted.total_bytes) + " in " +
                        Words(std::string(PhaseName(predicted.phase))) + " (" +
                        predicted.what + ").");
  return table;
}

ReportTable StepsTable(const RunView& view) {
  ReportTable table;
  table.id = "steps";
  table.title = "Steps";
  const RankReport& first = view.ranks.front();
  table.caption =
      std::string(
          "The peak of every step. Step 1 creates the gradients and "
          "the optimizer state") +
      (RebuildsDdpBuckets(first) ? ", DDP rebuilds its buckets once in step 2"
                                 : "") +
      "; " +
      (ReachedSteadyState(first)
           ? "the steady state starts at step " +
                 std::to_string(first.steady_first_step)
           : std::string("no steady-state step completed")) +
      ".";
  const int64_t accumulation = first.context.config.train.grad_accum;
  if (accumulation > 1) {
    table.caption += " Each step is one optimizer step over " +
                     std::to_string(accumulation) + " micro-batches of " +
                     std::to_string(first.micro_batch) +
                     " samples (gradient accumulation), its time theirs "
                     "together.";
  }
  table.header = {"step", "state"};
  for (const RankReport& rank : view.ranks) {
    table.header.push_back(RankHeader(rank) + " peak");
    table.header.push_back("in");
    table.header.push_back("time");
  }
  table.numeric.assign(table.header.size(), true);
  table.numeric[1] = false;
  for (size_t i = 2; i < table.numeric.size(); i += 3) {
    table.numeric[i + 1] = false;
  }
  size_t steps = first.steps.size();
  for (const RankReport& rank : view.ranks) {
    steps = std::min(steps, rank.steps.size());
  }
  // A long run lists its kept steps (Note [Kept steps]); the rest are
  // summed up in a note.
  std::set<int> kept;
  for (const StepDetail& detail : first.step_details) kept.insert(detail.step);
  const bool all = kept.size() >= steps;
  int64_t lowest = INT64_MAX, highest = 0;
  size_t left_out = 0;
  for (size_t s = 0; s < steps; ++s) {
    const StepReport& step = first.steps[s];
    if (!all && kept.count(step.step) == 0) {
      lowest = std::min(lowest, step.peak_bytes);
      highest = std::max(highest, step.peak_bytes);
      ++left_out;
      continue;
    }
    std::vector<std::string> row = {std::to_string(step.step),
                                    !step.completed     ? "cut short"
                                    : step.steady_state ? "steady"
                                                        : "warm-up"};
    for (const RankReport& rank : view.ranks) {
      const StepReport& figures = rank.steps[s];
      char ms[32];
      std::snprintf(ms, sizeof ms, "%.1f ms", 1e3 * figures.seconds);
      row.push_back(Bytes(figures.peak_bytes));
      row.push_back(Words(std::string(PhaseName(figures.peak_phase))));
      row.push_back(ms);
    }
    table.rows.push_back(row);
  }
  if (left_out > 0) {
    table.notes.push_back(
        RankHeader(first) + ": " + Plural(left_out, "step") +
        " not listed (kept in detail: step 1, the steady-state peak's and "
        "the last, as many as profile --keep-steps says); their peaks "
        "ranged " +
        HumanBytes(lowest) + " to " + HumanBytes(highest) +
        ". rank-<r>.json lists every step.");
  }
  const int64_t step1 = first.steps.front().peak_bytes;
  const int64_t steady = first.peak.total_bytes;
  table.notes.push_back(RankHeader(first) + ": step 1 peaked at " +
                        HumanBytes(step1) +
                        (ReachedSteadyState(first)
                             ? ", the steady state at " + HumanBytes(steady) +
                                   " (" + SignedBytes(steady - step1) + ")."
                             : "; no steady-state step completed."));
  return table;
}

// Live bytes by category where each rank ran out of memory.
ReportTable OutOfMemoryTable(const RunView& view) {
  ReportTable table;
  table.id = "out-of-memory";
  table.title = "Out of memory";
  table.caption =
      "Live bytes by category when memprof's memory limit refused an "
      "allocation; the "
      "rank stopped there. The steps table lists the steps up to and "
      "including the one cut short; a rank that completed no steady-state "
      "step has no figures compared with the predictions.";
  table.header = {"category"};
  std::vector<const OutOfMemoryFigures*> failed;
  for (const RankReport& rank : view.ranks) {
    if (!rank.out_of_memory) continue;
    failed.push_back(&*rank.out_of_memory);
    table.header.push_back(RankHeader(rank));
  }
  table.numeric.assign(table.header.size(), true);
  table.numeric[0] = false;
  for (Category c : ShownCategories(view.ranks)) {
    std::vector<std::string> row = {std::string(CategoryName(c))};
    for (const OutOfMemoryFigures* oom : failed) {
      row.push_back(Bytes(oom->breakdown[Index(c)]));
    }
    table.rows.push_back(row);
  }
  std::vector<std::string> live = {"live"}, requested = {"refused allocation"},
                           limit = {"limit"};
  for (const OutOfMemoryFigures* oom : failed) {
    live.push_back(Bytes(oom->live_bytes));
    requested.push_back(Bytes(oom->requested_bytes));
    // A system refusal's limit is the machine's memory.
    limit.push_back(Bytes(oom->limit_bytes) +
                    (oom->by_system ? " (machine)" : ""));
  }
  table.rows.push_back(live);
  table.rows.push_back(requested);
  table.rows.push_back(limit);
  return table;
}

}  // namespace

std::string OutOfMemoryMessage(const OutOfMemoryFigures& oom) {
  return "out of memory in " + std::string(PhaseName(oom.phase)) +
         (oom.step > 0 ? " of step " + std::to_string(oom.step) : "") +
         ": tried to allocate " + HumanBytes(oom.requested_bytes) + " with " +
         HumanBytes(oom.live_bytes) + " (" + std::to_string(oom.live_bytes) +
         " B) live" +
         (oom.by_system
              ? ", and the system could not serve it (this machine "
                "has " +
                    HumanBytes(oom.limit_bytes) + " of memory)"
              : " of the " + HumanBytes(oom.limit_bytes) + " (" +
                    std::to_string(oom.limit_bytes) + " B) memory limit");
}

std::string EndingOf(const std::string& killed_by) {
  if (killed_by.rfind("exited", 0) == 0) {
    return killed_by + " before writing its report";
  }
  // Note [Program ending]: "failed: WHY", as the program's session said.
  if (killed_by.rfind("failed: ", 0) == 0) {
    return "failed before writing its report (" +
           killed_by.substr(std::string("failed: ").size()) + ")";
  }
  if (killed_by == kUnknownEnding) {
    return "stopped without its report (killed, or failed: the capture "
           "cannot tell which)";
  }
  return "killed (" + killed_by + ")";
}

std::string LastMomentOf(const RankReport& rank) {
  const PostMortemFigures& p = *rank.post_mortem;
  const std::string phase(PhaseName(p.phase));
  if (p.step != 0) return "step " + std::to_string(p.step) + ", " + phase;
  if (rank.steps.empty()) return "set-up, " + phase;
  return "after step " + std::to_string(rank.steps.back().step) + ", " + phase;
}

std::string OutOfMemorySentence(const OutOfMemoryFigures& oom) {
  if (oom.fit.verdict == FitVerdict::kFits) {
    // The prediction fits and the run did not: say so, not "fits".
    const FitAnswer& a = oom.fit;
    return OutOfMemoryMessage(oom) + " (predicted to fit: micro-batch " +
           std::to_string(a.micro_batch) + " peaks at " +
           HumanBytes(a.peak_bytes) + " (" + std::to_string(a.peak_bytes) +
           " B) per rank, " + std::to_string(a.budget_bytes - a.peak_bytes) +
           " B under the limit, and the run went past it: leave the "
           "prediction headroom for what it leaves out, or measure with "
           "'memprof fit --measure')";
  }
  return OutOfMemoryMessage(oom) + " (" + FitVerdictSentence(oom.fit) + ")";
}

ReportText BuildReportText(const RunView& view) {
  ReportText text;
  const RankReport& first = view.ranks.front();
  text.title =
      "memprof: " + ModelLabel(first.context.config) + ", " +
      (ModelBuilt(first) ? GroupedInteger(first.parameters) + " parameters"
                         : GroupedInteger(first.predicted_parameters) +
                               " parameters (predicted)") +
      ", " + Plural(view.world_size, "rank");
  if (const std::optional<Headline> headline = HeadlineOf(view)) {
    text.headline = HeadlineSentence(*headline);
  }
  text.context = Context(view);
  for (const RankFileProblem& problem : view.problems) {
    text.incomplete.push_back("rank " + std::to_string(problem.rank) +
                              " is left out: " + problem.path + ": " +
                              problem.reason);
  }
  for (const RankReport& rank : view.ranks) {
    if (!rank.post_mortem) continue;
    const PostMortemFigures& p = *rank.post_mortem;
    std::string parts;
    for (Category c : kAllCategories) {
      if (p.live_bytes[Index(c)] == 0) continue;
      parts += (parts.empty() ? "" : ", ") + std::string(CategoryName(c)) +
               " " + HumanBytes(p.live_bytes[Index(c)]);
    }
    text.killed.push_back(
        RankHeader(rank) + ": " + EndingOf(p.killed_by) +
        ", recovered from the capture: " + HumanBytes(Sum(p.live_bytes)) +
        " live at its last recorded event (" + LastMomentOf(rank) + "; " +
        parts + "); highest live total " +
        HumanBytes(rank.run_peak.total_bytes) + " (step " +
        std::to_string(rank.run_peak.step) + ", " +
        std::string(PhaseName(rank.run_peak.phase)) + ")" +
        (p.torn_record_dropped ? "; a torn last record was dropped" : "") +
        (p.cut_short ? "; the capture file was cut short: these are the "
                       "figures of the records before the cut"
                     : "") +
        ".");
  }
  for (const RankReport& rank : view.ranks) {
    if (!rank.out_of_memory) continue;
    text.out_of_memory.push_back(
        RankHeader(rank) + ": " + OutOfMemoryMessage(*rank.out_of_memory) +
        ". " + FitVerdictSentence(rank.out_of_memory->fit) + ".");
  }
  text.tables.push_back(ConfigTable(first.context.config));
  if (!text.out_of_memory.empty()) {
    text.tables.push_back(OutOfMemoryTable(view));
  }
  for (ReportTable table : {CategoriesTable(view), PeakTable(view)}) {
    text.tables.push_back(std::move(table));
  }
  // A rank stopped before step 1 has no step to list.
  const bool stepped =
      std::all_of(view.ranks.begin(), view.ranks.end(),
                  [](const RankReport& rank) { return !rank.steps.empty(); });
  if (stepped) text.tables.push_back(StepsTable(view));
  for (ReportTable table : GpuTables(view)) {
    text.tables.push_back(std::move(table));
  }
  if (std::optional<ReportTable> table = ScopeTable(view)) {
    text.tables.push_back(std::move(*table));
  }
  for (const RedundancyFigures& entry : first.redundancy) {
    text.redundancy.push_back(RedundancySentence(entry, view.world_size));
  }
  if (first.zero) text.redundancy.push_back(ZeroSentence(view.ranks));
  return text;
}

}  // namespace memprof
