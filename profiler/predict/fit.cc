#include "profiler/predict/fit.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "models/config_validation.h"
#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"

namespace memprof {
namespace {

constexpr int64_t kLargestMicroBatch = int64_t{1} << 30;
constexpr int64_t kLargestWorld = int64_t{1} << 20;

RunConfig AtMicroBatch(RunConfig config, int64_t micro_batch) {
  config.train.micro_batch = micro_batch;
  config.train.global_batch = 0;
  return config;
}

// The largest n in [lo, hi] with fits(n), given fits(lo) and !fits(hi + 1)
// or hi the cap; fits is monotone (true then false).
template <typename Fits>
int64_t LargestThat(int64_t lo, int64_t cap, const Fits& fits) {
  int64_t hi = lo;
  while (hi < cap && fits(std::min(cap, 2 * hi))) hi = std::min(cap, 2 * hi);
  if (hi == cap) return cap;
  int64_t bad = std::min(cap, 2 * hi);  // !fits(bad)
  while (bad - hi > 1) {
    const int64_t mid = hi + (bad - hi) / 2;
    (fits(mid) ? hi : bad) = mid;
  }
  return hi;
}

std::string Plural(int64_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// Note [Fit levers]
std::vector<FitLever> Levers(const RunConfig& config, const FitAnswer& a,
                             int64_t beyond_state) {
  std::vector<FitLever> levers;
  const int64_t budget = a.budget_bytes;
  const int64_t b = a.micro_batch;
  auto peak_with = [&](RunConfig changed) {
    changed.train.micro_batch = b;
    changed.train.global_batch = 0;
    try {
      ValidateRunConfig(changed);
    } catch (const ConfigError&) {
      return std::numeric_limits<int64_t>::max();
    }
    return PredictBusiestRank(changed).Peak().Total();
  };
  if (!a.model_state_alone_overflows) {
    if (a.largest_micro_batch > 0) {
      const int64_t ranks = (b * a.world_size + a.largest_micro_batch - 1) /
                            a.largest_micro_batch;
      levers.push_back(
          {"a smaller micro-batch per rank (" + std::to_string(ranks) +
               " ranks keep the global batch)",
           "--micro-batch " + std::to_string(a.largest_micro_batch) +
               " --world-size " + std::to_string(ranks),
           a.largest_peak_bytes});
    }
    if (config.model != "mlp" &&
        config.train.activation_checkpointing == "none") {
      RunConfig changed = config;
      changed.train.activation_checkpointing = "blocks";
      const int64_t peak = peak_with(changed);
      if (peak <= budget) {
        levers.push_back({"activation checkpointing",
                          "--train.activation_checkpointing blocks", peak,
                          /*one_rank=*/true});
      }
    }
    const bool gpt = config.model == "gpt";
    if (gpt || config.model == "resnet") {
      const int64_t now = gpt ? config.gpt.seq_len : config.resnet.resolution;
      auto at = [&](int64_t size) {
        RunConfig changed = config;
        (gpt ? changed.gpt.seq_len : changed.resnet.resolution) = size;
        return changed;
      };
      int64_t smallest = 1;  // the smallest size the model accepts
      while (smallest < now &&
             peak_with(at(smallest)) == std::numeric_limits<int64_t>::max()) {
        ++smallest;
      }
      if (smallest < now && peak_with(at(smallest)) <= budget) {
        const int64_t size = LargestThat(smallest, now - 1, [&](int64_t n) {
          return peak_with(at(n)) <= budget;
        });
        levers.push_back({gpt ? "the longest sequence that fits"
                              : "the largest resolution that fits",
                          (gpt ? "--gpt.seq_len " : "--resnet.resolution ") +
                              std::to_string(size),
                          peak_with(at(size)), /*one_rank=*/true});
      }
    }
    if (config.train.dtype == "float32") {
      RunConfig changed = config;
      changed.train.dtype = "bf16-autocast";
      const int64_t peak = peak_with(changed);
      if (peak <= budget) {
        levers.push_back(
            {"bf16 autocast (bfloat16 activations, plus the "
             "weights' bfloat16 copies)",
             "--train.dtype bf16-autocast", peak,
             /*one_rank=*/true});
      }
    }
  }
  const int64_t stages[] = {0, a.zero.stage1_bytes, a.zero.stage2_bytes,
                            a.zero.stage3_bytes};
  for (int k = 1; k <= 3; ++k) {
    if (a.world_size > 1 && stages[k] + beyond_state <= budget) {
      levers.push_back({"sharding the model state, ZeRO-" + std::to_string(k) +
                            " at " + Plural(a.world_size, "rank") +
                            (k == 1 ? "" : " (priced; memprof runs stage 1)"),
                        k == 1 ? "--ddp.zero_stage 1" : "",
                        stages[k] + beyond_state});
      break;
    }
  }
  return levers;
}

}  // namespace

const char* FitVerdictName(FitVerdict verdict) {
  switch (verdict) {
    case FitVerdict::kFits:
      return "fits";
    case FitVerdict::kActivationOverflow:
      return "activation-overflow";
    case FitVerdict::kModelStateOverflow:
      return "model-state-overflow";
  }
  return "?";
}

int64_t PredictedPeakAt(const RunConfig& config, int64_t micro_batch) {
  return PredictBusiestRank(AtMicroBatch(config, micro_batch)).Peak().Total();
}

FitAnswer Fit(const RunConfig& config, int64_t budget_bytes) {
  FitAnswer a;
  a.budget_bytes = budget_bytes;
  a.world_size = config.ddp.world_size;
  a.micro_batch = MicroBatch(config);
  // Under ZeRO-1 the ranks differ: the busiest decides.
  const Prediction requested = PredictBusiestRank(config);
  a.peak_bytes = requested.Peak().Total();
  a.model_state_bytes = ModelStateBytes(requested.bytes);
  a.zero = requested.zero;
  const Prediction one = PredictBusiestRank(AtMicroBatch(config, 1));
  a.peak1_bytes = one.Peak().Total();
  auto fits = [&](int64_t b) {
    return PredictedPeakAt(config, b) <= budget_bytes;
  };
  if (a.peak1_bytes <= budget_bytes) {
    a.largest_micro_batch = LargestThat(1, kLargestMicroBatch, fits);
    a.largest_peak_bytes = PredictedPeakAt(config, a.largest_micro_batch);
  }
  a.verdict = a.peak_bytes <= budget_bytes ? FitVerdict::kFits
              : a.largest_micro_batch > 0  ? FitVerdict::kActivationOverflow
                                           : FitVerdict::kModelStateOverflow;

  // ZeRO: its model state plus what micro-batch 1 adds at its peak.
  const int64_t beyond_state =
      a.peak1_bytes - ModelStateBytes(one.Peak().bytes);
  const int64_t stages[] = {0, a.zero.stage1_bytes, a.zero.stage2_bytes,
                            a.zero.stage3_bytes};
  for (int k = 3; k >= 1; --k) {
    a.zero_peak_bytes[k] = stages[k] + beyond_state;
    if (a.zero_peak_bytes[k] <= budget_bytes) a.zero_stage = k;
  }
  a.model_state_alone_overflows = a.model_state_bytes > budget_bytes;
  if (a.verdict != FitVerdict::kFits) {
    a.levers = Levers(config, a,
                      a.peak_bytes - ModelStateBytes(requested.Peak().bytes));
  }
  auto zero3_fits = [&](int64_t n) {
    RunConfig at = AtMicroBatch(config, 1);
    at.ddp.world_size = n;
    return Predict(at).zero.stage3_bytes + beyond_state <= budget_bytes;
  };
  // Note [Totals across ranks]: no larger world has countable totals.
  const int64_t largest_world =
      std::min(kLargestWorld, LargestCountableWorld(config));
  if (zero3_fits(largest_world)) {
    // The fewest ranks: the first n where it fits (monotone in n).
    int64_t lo = 1, hi = largest_world;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (zero3_fits(mid)) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    a.zero3_ranks = lo;
  }
  return a;
}

std::string FitVerdictSentence(const FitAnswer& a) {
  std::ostringstream out;
  out << FitVerdictName(a.verdict) << ": ";
  const std::string budget = HumanBytes(a.budget_bytes);
  switch (a.verdict) {
    case FitVerdict::kFits:
      out << "micro-batch " << a.micro_batch << " peaks at "
          << HumanBytes(a.peak_bytes) << " per rank, within " << budget
          << "; the largest micro-batch per rank that fits is "
          << a.largest_micro_batch << " (" << HumanBytes(a.largest_peak_bytes)
          << ")";
      break;
    case FitVerdict::kActivationOverflow:
      out << "the model state, " << HumanBytes(a.model_state_bytes)
          << " per rank, fits " << budget << ", but micro-batch "
          << a.micro_batch << " peaks at " << HumanBytes(a.peak_bytes)
          << "; the largest micro-batch per rank that fits is "
          << a.largest_micro_batch << " (" << HumanBytes(a.largest_peak_bytes)
          << "): data parallelism at that micro-batch keeps the global batch "
             "with "
          << (a.micro_batch * a.world_size + a.largest_micro_batch - 1) /
                 a.largest_micro_batch
          << " ranks";
      break;
    case FitVerdict::kModelStateOverflow:
      out << "even micro-batch 1 peaks at " << HumanBytes(a.peak1_bytes)
          << " per rank, over " << budget
          << ": weights + gradients + "
             "optimizer state + DDP buckets are "
          << HumanBytes(a.model_state_bytes) << " on every rank"
          << (a.model_state_bytes > a.budget_bytes
                  ? ", alone over the budget"
                  : ", and with what micro-batch 1 adds (activations, "
                    "inputs, the optimizer's workspace: " +
                        HumanBytes(a.peak1_bytes - a.model_state_bytes) +
                        ") over it")
          << ", whatever the number of data-parallel ranks; ";
      if (a.zero_stage > 0) {
        out << "ZeRO-" << a.zero_stage << " at " << Plural(a.world_size, "rank")
            << " would fit (" << HumanBytes(a.zero_peak_bytes[a.zero_stage])
            << " per rank)";
      } else if (a.zero3_ranks > 0) {
        out << "no ZeRO stage fits at " << Plural(a.world_size, "rank")
            << " (ZeRO-3: " << HumanBytes(a.zero_peak_bytes[3])
            << " per rank); ZeRO-3 would fit at " << a.zero3_ranks << " ranks";
      } else {
        out << "not even ZeRO-3 fits at any number of ranks: what micro-"
               "batch 1 needs beyond the model state exceeds the budget";
      }
      break;
  }
  return out.str();
}

std::string FormatFit(const FitAnswer& a, const RunConfig& config) {
  std::ostringstream out;
  out << "memprof fit: " << config.model << " ("
      << (config.source.empty() ? "flags" : config.source) << "), budget "
      << HumanBytes(a.budget_bytes) << " (" << a.budget_bytes
      << " B) per rank, " << Plural(a.world_size, "rank") << ", micro-batch "
      << a.micro_batch << " per rank\n"
      << "model state per rank (weights + gradients + optimizer state + DDP "
         "buckets; "
      << BytesPerParameterNote(config)
      << "): " << HumanBytes(a.model_state_bytes)
      << (config.ddp.zero_stage == 1
              ? " on the busiest rank, its optimizer state its ZeRO-1 "
                "partition (whole tensors: see predict --ddp.zero_stage 1)\n"
              : ", the same at any number of data-parallel ranks\n")
      << "predicted peak per rank: " << HumanBytes(a.peak_bytes)
      << " at micro-batch " << a.micro_batch << ", "
      << HumanBytes(a.peak1_bytes) << " at micro-batch 1\n"
      << "largest micro-batch per rank that fits: ";
  if (a.largest_micro_batch > 0) {
    out << a.largest_micro_batch << " (" << HumanBytes(a.largest_peak_bytes)
        << ")\n";
  } else {
    out << "none\n";
  }
  out << "ZeRO at " << Plural(a.world_size, "rank")
      << ", priced with ideal P/N shards, peak per rank at micro-batch 1: "
         "ZeRO-1 "
      << HumanBytes(a.zero_peak_bytes[1]) << ", ZeRO-2 "
      << HumanBytes(a.zero_peak_bytes[2]) << ", ZeRO-3 "
      << HumanBytes(a.zero_peak_bytes[3]) << " (model state: plain "
      << HumanBytes(a.zero.plain_bytes) << ", ZeRO-1 "
      << HumanBytes(a.zero.stage1_bytes) << ", ZeRO-2 "
      << HumanBytes(a.zero.stage2_bytes) << ", ZeRO-3 "
      << HumanBytes(a.zero.stage3_bytes) << "; plain replication holds "
      << HumanBytes(a.zero.duplicated_bytes) << " in duplicate)\n"
      << "verdict: " << FitVerdictSentence(a) << "\n";
  if (a.verdict != FitVerdict::kFits) {
    if (a.model_state_alone_overflows) {
      out << "the model state alone, " << HumanBytes(a.model_state_bytes)
          << " per rank, is over the budget: no data-parallel or activation "
             "lever can help, only sharding it\n";
    }
    out << "levers that fit, in order (each alone; Note [Fit levers]):"
        << (a.levers.empty() ? " none\n" : "\n");
    for (const FitLever& lever : a.levers) {
      out << "  " << lever.what << ": peaks at " << HumanBytes(lever.peak_bytes)
          << " per rank"
          << (lever.flags.empty() ? "" : " (" + lever.flags + ")") << "\n";
    }
  }
  return out.str();
}

}  // namespace memprof
