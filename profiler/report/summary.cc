#include "profiler/report/summary.h"

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "profiler/base/category.h"
#include "profiler/base/human_bytes.h"
#include "profiler/base/run_categories.h"
#include "profiler/base/statistics.h"
#include "profiler/predict/prediction.h"
#include "profiler/report/rank_outcome.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

std::string Cell(const char* format, const std::string& text) {
  char cell[64];
  std::snprintf(cell, sizeof cell, format, text.c_str());
  return cell;
}

Json ErrorJson(const ErrorFigure& error) {
  return Json{{"bytes", error.bytes},
              {"percent", error.percent ? Json(*error.percent) : Json()}};
}

// The error largest in magnitude (the first of equals).
ErrorFigure WorstError(const std::vector<ErrorFigure>& errors) {
  ErrorFigure worst = errors.front();
  for (const ErrorFigure& e : errors) {
    if (std::abs(e.bytes) > std::abs(worst.bytes)) worst = e;
  }
  return worst;
}

Json CategoriesJson(const std::vector<RankReport>& ranks) {
  Json categories = Json::object();
  for (Category c : kAllCategories) {
    Json measured = Json::array(), peak = Json::array(),
         predicted = Json::array(), error = Json::array();
    for (const RankReport& rank : ranks) {
      const CategoryFigures& f = rank.Of(c);
      measured.push_back(f.measured_bytes);
      peak.push_back(f.peak_bytes);
      predicted.push_back(f.predicted_bytes);
      error.push_back(
          ErrorJson(ErrorOf(ComparedBytes(f, c), f.predicted_bytes)));
    }
    categories[CategoryName(c)] = Json{{"measured_bytes", measured},
                                       {"peak_bytes", peak},
                                       {"predicted_bytes", predicted},
                                       {"compared_with", ComparedFigure(c)},
                                       {"error", error}};
  }
  return categories;
}

// The category rows of the console table.
void CategoryRows(const std::vector<RankReport>& ranks, std::ostream& out) {
  const int64_t parameters = ranks.front().parameters;
  for (Category c : ShownCategories(ranks)) {
    out << Cell("%-16s", std::string(CategoryName(c)))
        << Cell(" %11s", HumanBytes(ranks.front().Of(c).predicted_bytes));
    std::vector<ErrorFigure> errors;
    for (const RankReport& rank : ranks) {
      const CategoryFigures& f = rank.Of(c);
      out << Cell(" %11s", HumanBytes(ComparedBytes(f, c)));
      errors.push_back(ErrorOf(ComparedBytes(f, c), f.predicted_bytes));
    }
    out << Cell(" %-22s", FormatError(WorstError(errors)));
    if (IsModelState(c) && parameters > 0) {
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%8.2f",
                    static_cast<double>(ranks.front().Of(c).peak_bytes) /
                        static_cast<double>(parameters));
      out << ratio;
    }
    out << "\n";
  }
}

}  // namespace

std::vector<Category> ShownCategories(const std::vector<RankReport>& ranks) {
  return CategoriesToShow(ranks.front().context.config, [&](Category c) {
    for (const RankReport& rank : ranks) {
      const CategoryFigures& f = rank.Of(c);
      if (f.allocated_bytes != 0 || f.predicted_bytes != 0) return true;
    }
    return false;
  });
}

ErrorFigure ErrorOf(int64_t measured, int64_t predicted) {
  ErrorFigure out;
  out.bytes = measured - predicted;
  if (predicted != 0) {
    out.percent =
        100.0 * static_cast<double>(out.bytes) / static_cast<double>(predicted);
  } else if (out.bytes == 0) {
    out.percent = 0.0;
  }
  return out;
}

int64_t ComparedBytes(const CategoryFigures& figures, Category category) {
  return std::string(ComparedFigure(category)) == "measured_bytes"
             ? figures.measured_bytes
             : figures.peak_bytes;
}

std::string FormatError(const ErrorFigure& error) {
  std::string text = SignedBytes(error.bytes);
  if (error.percent) {
    char percent[32];
    std::snprintf(percent, sizeof percent, " (%+.2f%%)", *error.percent);
    text += percent;
  }
  return text;
}

std::string Words(std::string name) {
  for (char& c : name) {
    if (c == '_') c = ' ';
  }
  return name;
}

std::string RedundancySentence(const RedundancyFigures& entry,
                               int64_t world_size) {
  std::string line = Words(std::string(CategoryName(entry.category))) + ", " +
                     HumanBytes(entry.bytes) + " per rank";
  if (world_size == 1) {
    line += ": one rank, nothing held in duplicate";
  } else if (entry.identical_across_ranks) {
    line += ", bit-identical on all " + std::to_string(world_size) +
            " ranks: " + HumanBytes(entry.redundant_bytes) +
            " held in duplicate";
  } else {
    line += ", NOT identical across the " + std::to_string(world_size) +
            " ranks (their hashes differ)";
  }
  return line;
}

// ZeRO-1 in words: the optimizer state per rank against plain replication,
// the partition, and what the parameter exchange adds to a step.
std::string ZeroSentence(const std::vector<RankReport>& ranks) {
  const RankReport& first = ranks.front();
  int64_t least = std::numeric_limits<int64_t>::max(), most = 0;
  std::vector<double> exchange, step;
  for (const RankReport& rank : ranks) {
    const int64_t bytes = rank.Of(Category::kOptimizerState).peak_bytes;
    least = std::min(least, bytes);
    most = std::max(most, bytes);
    for (const StepReport& s : rank.steps) {
      if (!s.steady_state) continue;
      exchange.push_back(s.exchange_seconds);
      step.push_back(s.seconds);
    }
  }
  std::string line =
      "ZeRO-1: optimizer state " +
      HumanBytes(first.zero->replicated_optimizer_state_bytes) +
      " per rank under plain DDP (predicted), " + HumanBytes(most) +
      " at most under ZeRO-1 at " + std::to_string(first.context.world_size) +
      (first.context.world_size == 1 ? " rank" : " ranks") + " (partition " +
      HumanBytes(least) + " to " + HumanBytes(most) + ", " +
      (first.zero->covered_once ? "every parameter's state held once"
                                : "NOT every parameter's state held once") +
      ")";
  if (!exchange.empty()) {
    const double ms = 1e3 * Median(exchange);
    char figures[96];
    std::snprintf(figures, sizeof figures,
                  "; +%.3f ms per step of parameter exchange (%.1f%% of the "
                  "step, median)",
                  ms, 100 * Median(exchange) / Median(step));
    line += figures;
  }
  return line;
}

std::string CheckpointingSentence(const std::vector<RankReport>& ranks) {
  const RankReport& first = ranks.front();
  int64_t held = 0, peak = 0;
  std::vector<double> recompute, step;
  for (const RankReport& rank : ranks) {
    held = std::max(held, rank.checkpointing->held_bytes);
    peak = std::max(peak, rank.Of(Category::kActivations).peak_bytes);
    for (const StepReport& s : rank.steps) {
      if (!s.steady_state) continue;
      recompute.push_back(s.recompute_seconds);
      step.push_back(s.seconds);
    }
  }
  std::string line =
      "activation checkpointing (" + first.checkpointing->mode +
      "): activations " + HumanBytes(held) +
      " held from forward into backward (predicted " +
      HumanBytes(first.checkpointing->predicted_held_bytes) + "), " +
      HumanBytes(peak) + " at most with a block rerun in backward (predicted " +
      HumanBytes(first.Of(Category::kActivations).predicted_bytes) + ")";
  if (!recompute.empty()) {
    char figures[96];
    std::snprintf(figures, sizeof figures,
                  "; the reruns take %.3f ms per step (%.1f%% of the step, "
                  "median)",
                  1e3 * Median(recompute),
                  100 * Median(recompute) / Median(step));
    line += figures;
  }
  return line;
}

Json SummaryJson(const std::vector<RankReport>& ranks) {
  Json per_rank = Json::array();
  for (const RankReport& rank : ranks) {
    const Json full = ToJson(rank, /*with_steps=*/false);
    per_rank.push_back(Json{
        {"rank", rank.context.rank},
        {"hostname", rank.context.hostname},
        {"parameters", rank.parameters},
        {"micro_batch", rank.micro_batch},
        {"peak", full["peak"]},
        {"peak_error", ErrorJson(ErrorOf(rank.peak.total_bytes,
                                         rank.predicted_peak.total_bytes))},
        {"steps", KeptStepsJson(rank)},
        {"redundancy", full["redundancy"]}});
  }
  const ReportContext& first = ranks.front().context;
  return Json{
      {"schema", kSummarySchema},
      {"context",
       {{"world_size", ranks.size()},
        {"device", first.device},
        {"backend", first.backend},
        {"libtorch_version", first.libtorch_version},
        {"git_sha", first.git_sha},
        {"config", ToJson(first.config)}}},
      {"parameters", ranks.front().parameters},
      {"categories", CategoriesJson(ranks)},
      {"ranks", per_rank},
  };
}

std::string FormatStepTimes(const RankReport& rank) {
  std::vector<double> seconds;
  for (const StepReport& step : rank.steps) {
    if (step.steady_state) seconds.push_back(step.seconds);
  }
  char line[160];
  std::snprintf(line, sizeof line,
                "memprof: %zu steady-state steps, median %.3f ms per step "
                "(rank %d)\n",
                seconds.size(), 1e3 * Median(seconds), rank.context.rank);
  return line;
}

std::string CudaReplaySentence(const CudaReplay& replay) {
  const CudaAllocatorFigures& at = replay.at_allocated_peak;
  return "the CUDA caching allocator, modelled, would allocate at most " +
         HumanBytes(at.allocated) + " (" + HumanBytes(at.requested) +
         " requested, rounded up), reserving " + HumanBytes(at.reserved) +
         " then (" + HumanBytes(at.inactive_split) +
         " of it free in split segments) and " +
         HumanBytes(replay.peak_reserved) + " at most";
}

std::string CudaSentence(const CudaContext& cuda) {
  if (!cuda.compiled) return "CUDA not built in";
  if (!cuda.available) return "CUDA built in, no GPU here: " + cuda.status;
  return "CUDA built in, " + cuda.status;
}

std::string FormatSummaryTable(const std::vector<RankReport>& ranks) {
  const RankReport& first = ranks.front();
  const RunConfig& config = first.context.config;
  const size_t world = ranks.size();
  std::ostringstream out;
  out << "memprof: " << ModelLabel(config) << ", " << first.parameters
      << " parameters, " << world << " rank" << (world == 1 ? "" : "s") << " ("
      << first.context.backend << ", " << first.context.device
      << "), micro-batch " << first.micro_batch << " per rank, "
      << (config.train.grad_accum > 1
              ? std::to_string(config.train.grad_accum) +
                    " micro-batches per optimizer step (gradient "
                    "accumulation), "
              : "")
      << config.train.steps << " steps\n"
      << "memprof: LibTorch " << first.context.libtorch_version << "; "
      << CudaSentence(first.context.cuda) << "\n"
      << "each category's largest live bytes in a steady-state step "
         "(temporaries: at the peak), predicted and measured; error = "
         "measured - predicted (largest over ranks)\n\n";

  out << Cell("%-16s", "category") << Cell(" %11s", "predicted");
  for (const RankReport& rank : ranks) {
    out << Cell(" %11s", "rank " + std::to_string(rank.context.rank));
  }
  out << Cell(" %-22s", "error") << Cell("%8s", "bytes/P") << "\n";
  CategoryRows(ranks, out);
  std::vector<ErrorFigure> peak_errors;
  out << Cell("%-16s", "peak (all)")
      << Cell(" %11s", HumanBytes(first.predicted_peak.total_bytes));
  for (const RankReport& rank : ranks) {
    out << Cell(" %11s", HumanBytes(rank.peak.total_bytes));
    peak_errors.push_back(
        ErrorOf(rank.peak.total_bytes, rank.predicted_peak.total_bytes));
  }
  out << Cell(" %-22s", FormatError(WorstError(peak_errors)));
  out << "\n" << Cell("%-16s", "step 1 peak") << Cell(" %11s", "");
  for (const RankReport& rank : ranks) {
    // A rank stopped before step 1 has none.
    out << Cell(" %11s", rank.steps.empty()
                             ? std::string("-")
                             : HumanBytes(rank.steps.front().peak_bytes));
  }
  const PeakFigures& peak = first.peak;
  out << "\n\nsteady-state peak (rank 0): " << HumanBytes(peak.total_bytes)
      << " (" << peak.total_bytes << " B) in step " << peak.step << ", "
      << PhaseName(peak.phase) << "; predicted "
      << HumanBytes(first.predicted_peak.total_bytes) << " in "
      << PhaseName(first.predicted_peak.phase)
      << (ReachedSteadyState(first)
              ? " (steady state: steps " +
                    std::to_string(first.steady_first_step) + " on; "
              : " (no steady-state step: the steady state begins at step " +
                    std::to_string(first.steady_from) +
                    ", after the last step that ran, so these are step " +
                    std::to_string(first.steady_first_step) + "'s figures; ")
      << OneTimeSteps(first) << ")\n";
  for (const RedundancyFigures& entry : first.redundancy) {
    out << "redundancy: " << RedundancySentence(entry, world) << "\n";
  }
  const std::string split = TrainedFrozenSentence(
      first.parameters, first.trained_parameters, first.context.config,
      first.Of(Category::kDdpBuckets).predicted_bytes > 0);
  if (!split.empty()) out << "frozen: " << split << "\n";
  if (first.zero) out << ZeroSentence(ranks) << "\n";
  if (first.checkpointing) out << CheckpointingSentence(ranks) << "\n";
  if (first.cuda_replay) {
    out << "on a GPU (rank 0): " << CudaReplaySentence(*first.cuda_replay)
        << "\n";
  }
  // No line ends in the padding of an empty last column (bytes/P of the
  // rows without one): piped to a file, the table carries no trailing
  // spaces.
  std::string text = out.str();
  for (size_t end = text.find('\n'); end != std::string::npos;
       end = text.find('\n', end + 1)) {
    size_t begin = end;
    while (begin > 0 && text[begin - 1] == ' ') --begin;
    text.erase(begin, end - begin);
    end = begin;
  }
  return text;
}

}  // namespace memprof
