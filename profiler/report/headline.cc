#include "profiler/report/headline.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "profiler/base/human_bytes.h"
#include "profiler/predict/fit.h"
#include "profiler/report/rank_outcome.h"
#include "profiler/report/summary.h"

namespace memprof {
namespace {

// A lever of Note [Headline]: its name, its flags and the config it makes.
struct Candidate {
  std::string what;
  std::string flags;
  RunConfig config;
  int64_t micro_batch = 0;
};

std::vector<Candidate> CandidatesFor(Category dominant, const RunConfig& run,
                                     int64_t micro_batch) {
  std::vector<Candidate> out;
  switch (dominant) {
    case Category::kActivations:
    case Category::kInputs:
    case Category::kTemporaries: {
      if (run.model != "mlp" && run.train.activation_checkpointing == "none") {
        RunConfig changed = run;
        changed.train.activation_checkpointing = "blocks";
        out.push_back({"activation checkpointing",
                       "--train.activation_checkpointing blocks", changed,
                       micro_batch});
      }
      if (micro_batch > 1) {
        const int64_t half = micro_batch / 2;
        RunConfig changed = run;
        changed.ddp.world_size = 2 * run.ddp.world_size;
        const std::string ranks = std::to_string(changed.ddp.world_size);
        out.push_back(
            {"micro-batch " + std::to_string(half) + " per rank on " + ranks +
                 " ranks" +
                 (micro_batch % 2 == 0 ? ", the same global batch" : ""),
             "--micro-batch " + std::to_string(half) + " --world-size " + ranks,
             changed, half});
      }
      break;
    }
    case Category::kWeights:
    case Category::kGradients:
    case Category::kOptimizerState:
      if (run.ddp.world_size > 1 && run.ddp.zero_stage == 0) {
        RunConfig changed = run;
        changed.ddp.zero_stage = 1;
        out.push_back(
            {"ZeRO-1 at " + std::to_string(run.ddp.world_size) + " ranks",
             "--ddp.zero_stage 1", changed, micro_batch});
      }
      break;
    case Category::kDdpBuckets:
      if (!run.ddp.gradient_as_bucket_view) {
        RunConfig changed = run;
        changed.ddp.gradient_as_bucket_view = true;
        out.push_back({"gradients as views into the DDP buckets",
                       "--ddp.gradient_as_bucket_view true", changed,
                       micro_batch});
      }
      break;
    default:
      break;
  }
  return out;
}

std::string Percent(int64_t part, int64_t whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f%%",
                whole > 0 ? 100.0 * part / whole : 0.0);
  return text;
}

}  // namespace

std::string RanksLabel(const std::vector<int>& ranks) {
  if (ranks.size() == 1) return "rank " + std::to_string(ranks.front());
  bool consecutive = true;
  for (size_t i = 1; i < ranks.size(); ++i) {
    consecutive = consecutive && ranks[i] == ranks[i - 1] + 1;
  }
  if (consecutive && !ranks.empty()) {
    return "ranks " + std::to_string(ranks.front()) + "\u2013" +
           std::to_string(ranks.back());
  }
  std::string out = "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  }
  return out;
}

std::optional<Headline> HeadlineOf(const RunView& view) {
  const RankReport* busiest = nullptr;
  for (const RankReport& rank : view.ranks) {
    if (!ReachedSteadyState(rank)) continue;
    if (busiest == nullptr || rank.peak.total_bytes > busiest->peak.total_bytes)
      busiest = &rank;
  }
  if (busiest == nullptr) return std::nullopt;
  Headline h;
  for (const RankReport& rank : view.ranks) {
    if (ReachedSteadyState(rank) &&
        rank.peak.total_bytes == busiest->peak.total_bytes) {
      h.ranks.push_back(rank.context.rank);
    }
  }
  const PeakFigures& peak = busiest->peak;
  h.peak_bytes = peak.total_bytes;
  h.step = peak.step;
  h.phase = peak.phase;
  for (Category c : kAllCategories) {
    if (peak.breakdown[Index(c)] > h.dominant_bytes) {
      h.dominant = c;
      h.dominant_bytes = peak.breakdown[Index(c)];
    }
  }
  const RunConfig& run = busiest->context.config;
  // A program's own model has no size table to price a lever with: the
  // headline names the peak and its largest part alone.
  if (run.model == "program") {
    h.levers_priced = false;
    return h;
  }
  const int64_t micro_batch = busiest->micro_batch;
  h.predicted_peak_bytes = PredictedPeakAt(run, micro_batch);
  for (const Candidate& lever : CandidatesFor(h.dominant, run, micro_batch)) {
    if (!RunnableAt(lever.config, lever.micro_batch)) continue;
    const int64_t peak_bytes = PredictedPeakAt(lever.config, lever.micro_batch);
    const int64_t best =
        h.lever.empty() ? h.predicted_peak_bytes : h.lever_peak_bytes;
    if (peak_bytes < best) {
      h.lever = lever.what;
      h.lever_flags = lever.flags;
      h.lever_peak_bytes = peak_bytes;
    }
  }
  return h;
}

std::string HeadlineSentence(const Headline& h) {
  const std::string dominant = Words(std::string(CategoryName(h.dominant)));
  std::string out = "Peak " + HumanBytes(h.peak_bytes) + " on " +
                    RanksLabel(h.ranks) + ", in the " +
                    Words(std::string(PhaseName(h.phase))) + " phase of step " +
                    std::to_string(h.step) + "; the largest part is " +
                    dominant + ", " + HumanBytes(h.dominant_bytes) + " (" +
                    Percent(h.dominant_bytes, h.peak_bytes) + "). ";
  if (!h.levers_priced) {
    return out +
           "memprof prices its levers for its built-in models only, not for "
           "a program's own.";
  }
  if (h.lever.empty()) {
    return out + "No lever memprof runs cuts " + dominant +
           " in this configuration" +
           (IsModelState(h.dominant) && h.dominant != Category::kDdpBuckets
                ? " (ZeRO-1 shards the optimizer state over several ranks)."
                : ".");
  }
  return out + "The lever that cuts it most: " + h.lever + " (" +
         h.lever_flags + "), predicted peak " + HumanBytes(h.lever_peak_bytes) +
         " against " + HumanBytes(h.predicted_peak_bytes) +
         " predicted for this run.";
}

}  // namespace memprof
