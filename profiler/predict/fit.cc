#include "profiler/predict/fit.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>

#include "models/config_validation.h"
#include "models/lora_rows.h"
#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"
#include "profiler/predict/cuda_prediction.h"
#include "profiler/predict/fit_search.h"

namespace memprof {
namespace {

RunConfig AtMicroBatch(RunConfig config, int64_t micro_batch) {
  config.train.micro_batch = micro_batch;
  config.train.global_batch = 0;
  return config;
}

// Note [Fit on a GPU]: the figure of `config`, predicted as `p`.
int64_t FigureOf(const Prediction& p, const RunConfig& config,
                 const FitDevice& device) {
  if (!device.gpu) return p.Peak().Total();
  return PredictOnCuda(p, config).peak_reserved +
         device.outside_allocator_bytes;
}

// The figure of `changed` at micro-batch `b`, or the largest int64_t when
// the lever makes a config the model refuses.
int64_t FigureWith(const RunConfig& changed, int64_t b,
                   const FitDevice& device) {
  const std::optional<RunConfig> runnable = RunnableAt(changed, b);
  return runnable ? FitFigure(*runnable, device)
                  : std::numeric_limits<int64_t>::max();
}

// A lever memprof runs, as a change of the config: what combinations of
// levers are made of.
struct RunnableLever {
  std::string what;
  std::string flags;
  bool one_rank = true;
  void (*apply)(RunConfig&);
};

// Note [Accumulation lever]
// An activation overflow that a smaller micro-batch cures can keep the
// global batch on the same ranks by accumulating gradients: the samples per
// rank per optimizer step, B K (the requested micro-batch B, train.grad_accum
// K), in micro-batches of the largest B' <= the largest micro-batch that
// fits which divides B K exactly, K' = B K / B' of them. Model state is
// unchanged and the figure is the one at micro-batch B' (the prediction
// does not depend on K). None when no such B' is below B.
std::optional<FitLever> AccumulationLever(const RunConfig& config,
                                          const FitAnswer& a) {
  const int64_t per_rank = a.micro_batch * config.train.grad_accum;
  for (int64_t b = std::min(a.largest_micro_batch, a.micro_batch - 1); b >= 1;
       --b) {
    if (per_rank % b != 0 || per_rank / b > kMaxGradAccum) continue;
    const int64_t k = per_rank / b;
    return FitLever{"gradient accumulation: micro-batch " + std::to_string(b) +
                        ", " + std::to_string(k) +
                        " micro-batches per optimizer step keep the global "
                        "batch on " +
                        Plural(a.world_size, "rank"),
                    "--micro-batch " + std::to_string(b) + " --grad-accum " +
                        std::to_string(k),
                    FigureWith(config, b, a.device)};
  }
  return std::nullopt;
}

// The LoRA lever (Note [Fit levers]): adapters of rank kFitLoraRank on the
// attention projections (every Linear of an MLP), every base weight
// frozen, at the requested micro-batch; for a model-state overflow, or
// when `others` (the same-training levers that fit) hold none that keeps
// the samples as they are; none when
// the run has adapters or frozen parameters already, when the model has no
// Linear to adapt, or when it does not fit.
constexpr int64_t kFitLoraRank = 8;

std::optional<FitLever> LoraLever(const RunConfig& config, const FitAnswer& a,
                                  const std::vector<FitLever>& others) {
  const bool none_keeps_samples =
      std::none_of(others.begin(), others.end(),
                   [](const FitLever& l) { return !l.changes_samples; });
  if ((a.verdict != FitVerdict::kModelStateOverflow && !none_keeps_samples) ||
      config.lora.rank > 0 || !config.train.freeze.empty()) {
    return {};
  }
  RunConfig changed = config;
  changed.lora.rank = kFitLoraRank;
  if (config.model == "llama") {
    changed.lora.targets = "q_proj,k_proj,v_proj,o_proj";
  } else if (config.model == "gpt") {
    changed.lora.targets = "c_attn,attn.c_proj";
  } else if (config.model == "mlp") {
    changed.lora.targets.clear();
    for (const std::string& name : LinearModules(config)) {
      changed.lora.targets += (changed.lora.targets.empty() ? "" : ",") + name;
    }
  } else {
    return {};
  }
  const std::optional<RunConfig> runnable = RunnableAt(changed, a.micro_batch);
  if (!runnable) return {};
  const Prediction p = PredictBusiestRank(*runnable);
  const int64_t peak = FigureOf(p, *runnable, a.device);
  if (peak > a.budget_bytes) return {};
  return FitLever{"LoRA adapters, rank " + std::to_string(kFitLoraRank) +
                      " on " + changed.lora.targets + ", the base frozen (" +
                      GroupedInteger(p.trained_parameters) + " of " +
                      GroupedInteger(p.parameters) +
                      " parameters trained; model state " +
                      HumanBytes(ModelStateBytes(p.bytes)) + " instead of " +
                      HumanBytes(a.model_state_bytes) + ")",
                  "--lora-rank " + std::to_string(kFitLoraRank) +
                      " --lora-targets " + changed.lora.targets,
                  peak, /*one_rank=*/true, /*adapters=*/true};
}

// Note [Fit levers]
// The levers that train the same parameters, each alone, then combined.
std::vector<FitLever> SameTrainingLevers(const RunConfig& config,
                                         const FitAnswer& a,
                                         int64_t beyond_state) {
  std::vector<FitLever> levers;
  const int64_t budget = a.budget_bytes;
  const int64_t b = a.micro_batch;
  auto figure_with = [&](const RunConfig& changed) {
    return FigureWith(changed, b, a.device);
  };
  std::vector<RunnableLever> runnable;
  if (config.model != "mlp" &&
      config.train.activation_checkpointing == "none") {
    runnable.push_back(
        {"activation checkpointing", "--train.activation_checkpointing blocks",
         true,
         [](RunConfig& c) { c.train.activation_checkpointing = "blocks"; }});
  }
  if (config.train.dtype == "float32") {
    runnable.push_back(
        {"bf16 autocast (bfloat16 activations, plus the weights' bfloat16 "
         "copies)",
         "--train.dtype bf16-autocast", true,
         [](RunConfig& c) { c.train.dtype = "bf16-autocast"; }});
  }
  const bool zero1 = a.world_size > 1 && config.ddp.zero_stage == 0;
  if (zero1) {
    runnable.push_back({"ZeRO-1 at " + Plural(a.world_size, "rank"),
                        "--ddp.zero_stage 1", false,
                        [](RunConfig& c) { c.ddp.zero_stage = 1; }});
  }
  auto index_of = [&](const std::string& flags) {
    for (size_t i = 0; i < runnable.size(); ++i) {
      if (runnable[i].flags == flags) return static_cast<int>(i);
    }
    return -1;
  };
  auto alone = [&](int i) {
    RunConfig changed = config;
    runnable[i].apply(changed);
    return figure_with(changed);
  };
  if (!a.model_state_alone_overflows) {
    if (a.split.micro_batch > 0) {
      levers.push_back({"a smaller micro-batch per rank (" +
                            std::to_string(a.split.ranks) +
                            " ranks keep the global batch)",
                        "--micro-batch " + std::to_string(a.split.micro_batch) +
                            " --world-size " + std::to_string(a.split.ranks),
                        a.split_peak_bytes});
    }
    if (std::optional<FitLever> accumulation = AccumulationLever(config, a)) {
      levers.push_back(std::move(*accumulation));
    }
    const int checkpointing =
        index_of("--train.activation_checkpointing blocks");
    if (checkpointing >= 0) {
      const int64_t peak = alone(checkpointing);
      if (peak <= budget) {
        levers.push_back({runnable[checkpointing].what,
                          runnable[checkpointing].flags, peak,
                          /*one_rank=*/true});
      }
    }
    // The sequence length (gpt, llama) or the image resolution (resnet).
    int64_t* size_of_config = nullptr;
    RunConfig changed = config;
    std::string key, what = "the longest sequence that fits";
    if (config.model == "gpt") {
      // Shorter sequences, the same model: the position table keeps its
      // rows, pinned by the flags when they came from seq_len.
      size_of_config = &changed.gpt.seq_len;
      changed.gpt.positions = GptPositions(config.gpt);
      key = (config.gpt.positions == 0
                 ? "--gpt.positions " + std::to_string(config.gpt.seq_len) + " "
                 : "") +
            "--gpt.seq_len ";
    } else if (config.model == "llama") {
      size_of_config = &changed.llama.seq_len;
      key = "--llama.seq_len ";
    } else if (config.model == "resnet") {
      size_of_config = &changed.resnet.resolution;
      key = "--resnet.resolution ";
      what = "the largest resolution that fits";
    }
    if (size_of_config != nullptr) {
      const int64_t now = *size_of_config;
      auto at = [&](int64_t size) {
        *size_of_config = size;
        return changed;
      };
      int64_t smallest = 1;  // the smallest size the model accepts
      while (smallest < now &&
             figure_with(at(smallest)) == std::numeric_limits<int64_t>::max()) {
        ++smallest;
      }
      if (smallest < now && figure_with(at(smallest)) <= budget) {
        const int64_t size = LargestThat(smallest, now - 1, [&](int64_t n) {
          return figure_with(at(n)) <= budget;
        });
        levers.push_back({what, key + std::to_string(size),
                          figure_with(at(size)), /*one_rank=*/true,
                          /*adapters=*/false, /*changes_samples=*/true});
      }
    }
    const int autocast = index_of("--train.dtype bf16-autocast");
    if (autocast >= 0) {
      const int64_t peak = alone(autocast);
      if (peak <= budget) {
        levers.push_back({runnable[autocast].what, runnable[autocast].flags,
                          peak, /*one_rank=*/true});
      }
    }
  }
  const int64_t stages[] = {0, a.zero.stage1_bytes, a.zero.stage2_bytes,
                            a.zero.stage3_bytes};
  for (int k = 1; k <= 3 && a.world_size > 1; ++k) {
    // Stage 1 memprof runs: predicted on its partition.
    if (k == 1 && !zero1) continue;
    const int64_t peak = k == 1 ? alone(index_of("--ddp.zero_stage 1"))
                                : stages[k] + beyond_state;
    if (peak <= budget) {
      levers.push_back({"sharding the model state, ZeRO-" + std::to_string(k) +
                            " at " + Plural(a.world_size, "rank") +
                            (k == 1 ? "" : " (priced; memprof runs stage 1)"),
                        k == 1 ? "--ddp.zero_stage 1" : "", peak});
      break;
    }
  }
  // Combinations, when no lever memprof runs fits alone but one that
  // changes the samples.
  for (const FitLever& lever : levers) {
    if (!lever.flags.empty() && !lever.changes_samples) return levers;
  }
  for (size_t size = 2; size <= runnable.size(); ++size) {
    // Each combination of `size` levers, in their order.
    for (uint32_t mask = 0; mask < (1u << runnable.size()); ++mask) {
      if (static_cast<size_t>(__builtin_popcount(mask)) != size) continue;
      RunConfig changed = config;
      std::string what, flags;
      bool one_rank = true;
      for (size_t i = 0; i < runnable.size(); ++i) {
        if (!(mask & (1u << i))) continue;
        runnable[i].apply(changed);
        what += (what.empty() ? "" : " with ") + runnable[i].what;
        flags += (flags.empty() ? "" : " ") + runnable[i].flags;
        one_rank = one_rank && runnable[i].one_rank;
      }
      const int64_t peak = figure_with(changed);
      if (peak <= budget) levers.push_back({what, flags, peak, one_rank});
    }
    if (!levers.empty() && !levers.back().flags.empty() &&
        !levers.back().changes_samples) {
      break;
    }
  }
  return levers;
}

// SameTrainingLevers, then LoRA: training adapters instead of the whole
// model is a different job, so it comes last and does not stand in for
// the combinations of the others.
std::vector<FitLever> Levers(const RunConfig& config, const FitAnswer& a,
                             int64_t beyond_state) {
  std::vector<FitLever> levers = SameTrainingLevers(config, a, beyond_state);
  if (std::optional<FitLever> lora = LoraLever(config, a, levers)) {
    levers.push_back(std::move(*lora));
  }
  return levers;
}

// The model state as the verdict compares it: on a GPU with the memory
// outside the allocator.
int64_t StateFigure(const FitAnswer& a) {
  return a.model_state_bytes +
         (a.device.gpu ? a.device.outside_allocator_bytes : 0);
}

// " (3.32 GiB with the 1.00 GiB outside the allocator)" on a GPU; "" else.
std::string WithOutside(const FitAnswer& a, int64_t bytes) {
  if (!a.device.gpu) return "";
  return " (" + HumanBytes(bytes) + " with the " +
         HumanBytes(a.device.outside_allocator_bytes) +
         " outside the allocator)";
}

// The largest micro-batch that fits and its peak, "1073741824 (1.38 TiB)
// or more: ..." where the search stopped at its cap still fitting.
std::string LargestMicroBatchText(const FitAnswer& a) {
  return std::to_string(a.largest_micro_batch) + " (" +
         HumanBytes(a.largest_peak_bytes) + ")" +
         (a.largest_micro_batch >= kLargestMicroBatch
              ? " or more: fit searches no further"
              : "");
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
    case FitVerdict::kNotPredicted:
      return "not-predicted";
  }
  return "?";
}

FitDevice FitDeviceOf(const RunConfig& config,
                      int64_t outside_allocator_bytes) {
  return FitDevice{config.train.device == "cuda", outside_allocator_bytes};
}

GlobalBatchSplit KeepGlobalBatch(int64_t micro_batch, int64_t world_size,
                                 int64_t largest_micro_batch,
                                 int64_t largest_world) {
  const int64_t samples = micro_batch * world_size;
  for (int64_t b = std::min(largest_micro_batch, samples);
       b >= 1 && samples / b <= largest_world; --b) {
    if (samples % b == 0) return {b, samples / b};
  }
  return {};
}

int64_t PredictedPeakAt(const RunConfig& config, int64_t micro_batch) {
  return PredictBusiestRank(AtMicroBatch(config, micro_batch)).Peak().Total();
}

std::optional<RunConfig> RunnableAt(RunConfig config, int64_t micro_batch) {
  config = AtMicroBatch(std::move(config), micro_batch);
  try {
    ValidateRunConfig(config);
  } catch (const ConfigError&) {
    return std::nullopt;
  }
  return config;
}

int64_t FitFigure(const RunConfig& config, const FitDevice& device) {
  return FigureOf(PredictBusiestRank(config), config, device);
}

FitAnswer ProgramFit(const Prediction& prediction, const RunConfig& config,
                     int64_t budget_bytes) {
  FitAnswer a;
  a.budget_bytes = budget_bytes;
  a.world_size = config.ddp.world_size;
  a.micro_batch = std::max<int64_t>(1, MicroBatch(config));
  a.model_state_bytes = ModelStateBytes(prediction.bytes);
  a.parameters = prediction.parameters;
  a.trained_parameters = prediction.trained_parameters;
  a.peak_bytes = a.model_state_bytes;
  a.requested_peak_bytes = a.model_state_bytes;
  a.zero = prediction.zero;
  a.model_state_alone_overflows = a.model_state_bytes > budget_bytes;
  a.verdict = FitVerdict::kNotPredicted;
  return a;
}

FitAnswer Fit(const RunConfig& config, int64_t budget_bytes,
              const FitDevice& device) {
  FitAnswer a;
  a.device = device;
  a.budget_bytes = budget_bytes;
  a.world_size = config.ddp.world_size;
  a.micro_batch = MicroBatch(config);
  // Under ZeRO-1 the ranks differ: the busiest decides.
  const Prediction requested = PredictBusiestRank(config);
  a.requested_peak_bytes = requested.Peak().Total();
  a.reserved_bytes = PredictOnCuda(requested, config).peak_reserved;
  a.gpu_bytes = a.reserved_bytes + device.outside_allocator_bytes;
  a.peak_bytes = device.gpu ? a.gpu_bytes : a.requested_peak_bytes;
  a.model_state_bytes = ModelStateBytes(requested.bytes);
  a.parameters = requested.parameters;
  a.trained_parameters = requested.trained_parameters;
  a.zero = requested.zero;
  const RunConfig at1 = AtMicroBatch(config, 1);
  const Prediction one = PredictBusiestRank(at1);
  a.peak1_bytes = FigureOf(one, at1, device);
  auto fits = [&](int64_t b) {
    return FitFigure(AtMicroBatch(config, b), device) <= budget_bytes;
  };
  if (a.peak1_bytes <= budget_bytes) {
    a.largest_micro_batch = LargestThat(1, kLargestMicroBatch, fits);
    a.largest_peak_bytes =
        FitFigure(AtMicroBatch(config, a.largest_micro_batch), device);
    a.split =
        KeepGlobalBatch(a.micro_batch, a.world_size, a.largest_micro_batch,
                        LargestCountableWorld(config));
    a.split_peak_bytes =
        a.split.micro_batch == a.largest_micro_batch
            ? a.largest_peak_bytes
            : FitFigure(AtMicroBatch(config, a.split.micro_batch), device);
  }
  a.model_state_alone_overflows = StateFigure(a) > budget_bytes;
  // Note [Fit verdicts]: micro-batch 1 over at its optimizer step is the
  // model state's overflow, with no activation live: where the step is the
  // peak, or over the budget itself though backward peaks higher (llama-
  // tiny under 2.12 MiB: its optimizer moment 2,308,900 B, over 2,222,981
  // B, was called an activation overflow, which shrinking the activations
  // would not cure).
  a.optimizer1_bytes =
      &one.Peak() == &one.optimizer_step
          ? a.peak1_bytes
          : one.optimizer_step.Total() +
                (device.gpu ? device.outside_allocator_bytes : 0);
  const bool state_at_one =
      a.peak1_bytes > budget_bytes && a.optimizer1_bytes > budget_bytes;
  a.verdict = a.peak_bytes <= budget_bytes ? FitVerdict::kFits
              : a.model_state_alone_overflows || state_at_one
                  ? FitVerdict::kModelStateOverflow
                  : FitVerdict::kActivationOverflow;

  // ZeRO: its model state plus what micro-batch 1 adds at its figure.
  const int64_t beyond_state =
      a.peak1_bytes - ModelStateBytes(one.Peak().bytes);
  const int64_t stages[] = {0, a.zero.stage1_bytes, a.zero.stage2_bytes,
                            a.zero.stage3_bytes};
  for (int k = 3; k >= 1; --k) a.zero_peak_bytes[k] = stages[k] + beyond_state;
  // Note [ZeRO-1 as run]
  // Stage 1 is the stage memprof runs, so its figure is that run's own
  // prediction at micro-batch 1 (the busiest rank's partition of whole
  // tensors, the DDP buckets kept as DDP keeps them), not the ideal price,
  // which leaves the buckets out: mlp-tiny on 2 ranks was told "ZeRO-1
  // would fit (162 KiB)" under 195 KiB and then measured 211 KiB with
  // ZeRO-1. Stages 2 and 3, which memprof does not run, stay priced. At one
  // rank ZeRO shards nothing, so no stage is offered.
  if (a.world_size > 1) {
    RunConfig zero1 = config;
    zero1.ddp.zero_stage = 1;
    const int64_t run = FigureWith(zero1, 1, device);
    if (run != std::numeric_limits<int64_t>::max()) a.zero_peak_bytes[1] = run;
    for (int k = 3; k >= 1; --k) {
      if (a.zero_peak_bytes[k] <= budget_bytes) a.zero_stage = k;
    }
    if (a.zero_stage > 0 && a.micro_batch > 1) {
      a.zero_requested_bytes =
          a.zero_stage == 1 ? FigureWith(zero1, a.micro_batch, device)
                            : stages[a.zero_stage] + a.peak_bytes -
                                  ModelStateBytes(requested.Peak().bytes);
    }
  }
  if (a.verdict != FitVerdict::kFits) {
    a.levers = Levers(config, a, a.peak_bytes - a.model_state_bytes);
  }
  auto zero3_fits = [&](int64_t n) {
    RunConfig at = AtMicroBatch(config, 1);
    at.ddp.world_size = n;
    return Predict(at).zero.stage3_bytes + beyond_state <= budget_bytes;
  };
  // Note [Totals across ranks]: no larger world has countable totals.
  const int64_t largest_world =
      std::min(kLargestWorld, LargestCountableWorld(config));
  // From 2 ranks: one rank shards nothing (ZeRO's figures at N = 1 are the
  // plain ones without the buckets, which no run of one rank has).
  if (largest_world >= 2 && zero3_fits(largest_world)) {
    a.zero3_ranks = SmallestThat(2, largest_world, zero3_fits);
    // No stage fits at fewer ranks (ZeRO-3 shards the most); at these, the
    // smallest stage that does: stage 2 priced, stage 1 as memprof runs it
    // (Note [ZeRO-1 as run]).
    RunConfig at = AtMicroBatch(config, 1);
    at.ddp.world_size = a.zero3_ranks;
    a.zero_stage_at_ranks = 3;
    if (Predict(at).zero.stage2_bytes + beyond_state <= budget_bytes) {
      a.zero_stage_at_ranks = 2;
      RunConfig zero1 = config;
      zero1.ddp.world_size = a.zero3_ranks;
      zero1.ddp.zero_stage = 1;
      if (FigureWith(zero1, 1, device) <= budget_bytes) {
        a.zero_stage_at_ranks = 1;
      }
    }
  }
  return a;
}

std::string FitVerdictSentence(const FitAnswer& a) {
  std::ostringstream out;
  out << FitVerdictName(a.verdict) << ": ";
  const std::string budget = HumanBytes(a.budget_bytes);
  // What the figures are: a GPU's need, or the predicted peak.
  const std::string peaks = a.device.gpu ? " needs " : " peaks at ";
  const std::string per_rank =
      a.device.gpu ? " per rank on the GPU" : " per rank";
  switch (a.verdict) {
    case FitVerdict::kFits:
      out << "micro-batch " << a.micro_batch << peaks
          << HumanBytes(a.peak_bytes) << per_rank << ", within " << budget
          << "; the largest micro-batch per rank that fits is "
          << LargestMicroBatchText(a);
      break;
    case FitVerdict::kActivationOverflow:
      out << "the model state, " << HumanBytes(a.model_state_bytes)
          << " per rank" << WithOutside(a, StateFigure(a)) << ", fits "
          << budget << ", but ";
      if (a.largest_micro_batch > 0 || a.micro_batch > 1) {
        out << "micro-batch " << a.micro_batch << peaks
            << HumanBytes(a.peak_bytes) << per_rank
            << (a.largest_micro_batch > 0 ? "" : ", and ");
      }
      if (a.largest_micro_batch > 0) {
        out << "; the largest micro-batch per rank that fits is "
            << LargestMicroBatchText(a);
        if (a.split.micro_batch > 0) {
          out << ": data parallelism keeps the global batch at micro-batch "
              << a.split.micro_batch << " on " << Plural(a.split.ranks, "rank")
              << " (" << a.micro_batch * a.world_size
              << " samples a micro-batch, as now)";
        } else {
          out << ": keeping the global batch would take more than "
              << kMaxDdpWorldSize << " ranks";
        }
      } else {
        out << "even micro-batch 1" << peaks << HumanBytes(a.peak1_bytes)
            << per_rank
            << ": what it adds to the model state (activations, inputs, "
               "workspace"
            << (a.device.gpu ? ", the allocator's rounding and cache" : "")
            << ": " << HumanBytes(a.peak1_bytes - StateFigure(a))
            << ") is over the rest, and no smaller micro-batch per rank "
               "exists, so more data-parallel ranks cannot help; only what "
               "shrinks the activations or shards the model state can";
      }
      break;
    case FitVerdict::kNotPredicted:
      out << "the model state (weights + gradients + optimizer state + DDP "
             "buckets), "
          << HumanBytes(a.model_state_bytes) << " per rank, is "
          << (a.model_state_alone_overflows ? "alone over " : "within ")
          << budget
          << (a.model_state_alone_overflows
                  ? " on every data-parallel rank"
                  : "; what overflows is the rest (activations, inputs, "
                    "workspace), which memprof measures but does not predict "
                    "for a program's own model");
      break;
    case FitVerdict::kModelStateOverflow:
      if (StateFigure(a) > a.budget_bytes) {
        out << "weights + gradients + optimizer state + DDP buckets are "
            << HumanBytes(a.model_state_bytes) << " per rank"
            << WithOutside(a, StateFigure(a)) << ", alone over the budget ("
            << budget
            << ") on every data-parallel rank, so neither more ranks nor an "
               "activation lever can help; ";
      } else {
        out << "even micro-batch 1's optimizer step, with no activation "
               "live,"
            << peaks << HumanBytes(a.optimizer1_bytes) << per_rank << ", over "
            << budget
            << ": the model "
               "state, "
            << HumanBytes(a.model_state_bytes) << " per rank"
            << WithOutside(a, StateFigure(a))
            << ", and the optimizer's update workspace are over it on every "
               "data-parallel rank, whatever their number; ";
      }
      if (a.zero_stage > 0) {
        out << "ZeRO-" << a.zero_stage << " at " << Plural(a.world_size, "rank")
            << " would fit micro-batch 1 ("
            << HumanBytes(a.zero_peak_bytes[a.zero_stage]) << " per rank)";
        if (a.zero_requested_bytes > 0) {
          out << (a.zero_requested_bytes <= a.budget_bytes ? ", and "
                                                           : ", not ")
              << "micro-batch " << a.micro_batch << " ("
              << (a.zero_requested_bytes == std::numeric_limits<int64_t>::max()
                      ? std::string("a config memprof refuses")
                      : HumanBytes(a.zero_requested_bytes))
              << ")";
        }
      } else if (a.zero3_ranks > 0 && a.world_size == 1) {
        out << "sharding the model state across ranks would: ZeRO-"
            << a.zero_stage_at_ranks << " fits at " << a.zero3_ranks
            << " ranks";
      } else if (a.zero3_ranks > 0) {
        out << "no ZeRO stage fits at " << Plural(a.world_size, "rank")
            << " (ZeRO-3: " << HumanBytes(a.zero_peak_bytes[3])
            << " per rank); ZeRO-" << a.zero_stage_at_ranks << " would fit at "
            << a.zero3_ranks << " ranks";
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
      << HumanBytes(a.budget_bytes) << " (" << GroupedInteger(a.budget_bytes)
      << " B) per rank, " << Plural(a.world_size, "rank") << ", micro-batch "
      << a.micro_batch << " per rank\n";
  const std::string gpu_need =
      HumanBytes(a.gpu_bytes) + " (" + HumanBytes(a.reserved_bytes) +
      " reserved by the caching allocator + " +
      HumanBytes(a.device.outside_allocator_bytes) + " outside it)";
  if (a.device.gpu) {
    out << "on the GPU the budget must hold what the caching allocator "
           "reserves and the memory outside it (the CUDA context, the "
           "libraries' workspaces, NCCL's buffers; --gpu-outside-allocator "
           "sets the allowance): every figure below is that sum; at "
           "micro-batch "
        << a.micro_batch << ": " << gpu_need << ", for "
        << HumanBytes(a.requested_peak_bytes) << " requested at the peak\n";
    out << MathPathAttentionNote(config, a.micro_batch);
  }
  out << "model state per rank (weights + gradients + optimizer state + DDP "
         "buckets; "
      << BytesPerParameterNote(config)
      << (a.trained_parameters < a.parameters
              ? "; " + TrainedFrozenSentence(
                           a.parameters, a.trained_parameters, config,
                           BytesPerParameterOf(config).buckets > 0)
              : "")
      << "): " << HumanBytes(a.model_state_bytes)
      << (config.ddp.zero_stage == 1
              ? " on the busiest rank, its optimizer state its ZeRO-1 "
                "partition (whole tensors: see predict --ddp.zero_stage 1)\n"
              : ", the same at any number of data-parallel ranks\n")
      << (a.device.gpu ? "predicted need per rank on the GPU: "
                       : "predicted peak per rank: ")
      << HumanBytes(a.peak_bytes) << " at micro-batch " << a.micro_batch
      << (a.micro_batch == 1
              ? ""
              : ", " + HumanBytes(a.peak1_bytes) + " at micro-batch 1")
      << "\n"
      << "largest micro-batch per rank that fits: ";
  if (a.largest_micro_batch > 0) {
    out << LargestMicroBatchText(a) << "\n";
  } else {
    out << "none\n";
  }
  if (a.world_size > 1) {  // at one rank there is nothing to shard
    out << "ZeRO at " << Plural(a.world_size, "rank") << ", "
        << (a.device.gpu ? "need" : "peak")
        << " per rank at micro-batch 1: ZeRO-1 "
        << HumanBytes(a.zero_peak_bytes[1])
        << " (predicted as memprof runs it: its partition, DDP buckets "
           "kept), ZeRO-2 "
        << HumanBytes(a.zero_peak_bytes[2]) << ", ZeRO-3 "
        << HumanBytes(a.zero_peak_bytes[3])
        << " (priced with ideal P/N shards; ideal model state: plain "
        << HumanBytes(a.zero.plain_bytes) << ", ZeRO-1 "
        << HumanBytes(a.zero.stage1_bytes) << ", ZeRO-2 "
        << HumanBytes(a.zero.stage2_bytes) << ", ZeRO-3 "
        << HumanBytes(a.zero.stage3_bytes) << "; plain replication holds "
        << HumanBytes(a.zero.duplicated_bytes) << " in duplicate)\n";
  }
  out << "verdict: " << FitVerdictSentence(a) << "\n";
  if (!a.device.gpu && a.gpu_bytes > a.budget_bytes) {
    out << "on a GPU the same run would need " << gpu_need << ", over "
        << HumanBytes(a.budget_bytes)
        << ": this verdict is for the CPU's requested bytes; for a GPU "
           "budget add --train.device cuda\n";
  }
  if (a.verdict != FitVerdict::kFits) {
    out << "levers that fit, in order (each alone, then combined when none "
           "memprof runs fits alone but a shorter sequence or resolution):"
        << (a.levers.empty() ? " none\n" : "\n");
    for (const FitLever& lever : a.levers) {
      out << "  " << lever.what << ": "
          << (a.device.gpu ? "needs " : "peaks at ")
          << HumanBytes(lever.peak_bytes) << " per rank"
          << (lever.flags.empty() ? "" : " (" + lever.flags + ")") << "\n";
    }
  }
  return out.str();
}

}  // namespace memprof
