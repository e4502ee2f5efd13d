#include "profiler/predict/fit_runs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>

#include "models/config_validation.h"
#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"
#include "profiler/predict/fit_search.h"

namespace memprof {
namespace {

// "1,234.5 B" for a fractional byte figure (a slope, a residual).
std::string FractionalBytes(double bytes) {
  const int64_t whole = static_cast<int64_t>(std::floor(bytes));
  const int tenth =
      static_cast<int>(std::llround((bytes - static_cast<double>(whole)) * 10));
  if (tenth == 0 || tenth == 10) {
    return GroupedInteger(whole + (tenth == 10 ? 1 : 0)) + " B";
  }
  return GroupedInteger(whole) + "." + std::to_string(tenth) + " B";
}

std::string RunName(const FitRunFigures& run) {
  return run.dir + " (micro-batch " + std::to_string(run.micro_batch) + ")";
}

// Each model-state category flat across the runs, or InputError with the
// figures.
void RequireFlatModelState(const std::vector<FitRunFigures>& runs) {
  struct Category {
    const char* name;
    int64_t FitRunFigures::*bytes;
  };
  const Category categories[] = {
      {"weights", &FitRunFigures::weights_bytes},
      {"gradients", &FitRunFigures::gradients_bytes},
      {"optimizer state", &FitRunFigures::optimizer_state_bytes},
      {"DDP buckets", &FitRunFigures::ddp_buckets_bytes}};
  for (const Category& c : categories) {
    const FitRunFigures& first = runs.front();
    for (const FitRunFigures& run : runs) {
      if (run.*c.bytes == first.*c.bytes) continue;
      throw InputError(
          std::string(
              "--runs: the model state changes with the micro-batch: ") +
          c.name + " are " + HumanBytes(first.*c.bytes) + " (" +
          GroupedInteger(first.*c.bytes) + " B) in " + RunName(first) +
          " but " + HumanBytes(run.*c.bytes) + " (" +
          GroupedInteger(run.*c.bytes) + " B) in " + RunName(run) +
          "; weights, gradients, optimizer state and DDP buckets depend on "
          "the parameters and the optimizer alone, so a fit against the "
          "micro-batch cannot hold: check what the program tracks (a tensor "
          "sized by the batch tracked as a parameter or optimizer state), "
          "and fit runs of one model");
    }
  }
}

// The least-squares line of `bytes` against `micro_batches`, leaving out
// index `skip` (-1: none); false when the rest have fewer than two distinct
// micro-batches.
bool LeastSquares(const std::vector<int64_t>& micro_batches,
                  const std::vector<int64_t>& bytes, int skip, double& base,
                  double& slope) {
  double n = 0, mean_b = 0, mean_y = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (static_cast<int>(i) == skip) continue;
    n += 1;
    mean_b += static_cast<double>(micro_batches[i]);
    mean_y += static_cast<double>(bytes[i]);
  }
  mean_b /= n;
  mean_y /= n;
  double sbb = 0, sby = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (static_cast<int>(i) == skip) continue;
    const double db = static_cast<double>(micro_batches[i]) - mean_b;
    sbb += db * db;
    sby += db * (static_cast<double>(bytes[i]) - mean_y);
  }
  if (sbb == 0) return false;
  slope = sby / sbb;
  base = mean_y - slope * mean_b;
  return true;
}

// A moment's law over the runs. Its residual (Note [Fit from runs]): each
// run against the line through the others, the largest distance.
MomentLaw FitLine(const std::string& name, bool activations_live,
                  const std::vector<int64_t>& micro_batches,
                  const std::vector<int64_t>& bytes) {
  MomentLaw law;
  law.name = name;
  law.activations_live = activations_live;
  LeastSquares(micro_batches, bytes, -1, law.base_bytes, law.slope_bytes);
  for (size_t i = 0; bytes.size() > 2 && i < bytes.size(); ++i) {
    double base = 0, slope = 0;
    if (!LeastSquares(micro_batches, bytes, static_cast<int>(i), base, slope)) {
      continue;  // the others are at one micro-batch: nothing to test it by
    }
    const double line = base + slope * static_cast<double>(micro_batches[i]);
    law.residual_bytes = std::max(
        law.residual_bytes, std::fabs(static_cast<double>(bytes[i]) - line));
  }
  return law;
}

ZeroPricing ZeroOf(const FitRunFigures& run, int64_t n) {
  auto shard = [n](int64_t bytes) { return (bytes + n - 1) / n; };
  const int64_t w = run.weights_bytes;
  const int64_t g = run.gradients_bytes;
  const int64_t o = run.optimizer_state_bytes;
  ZeroPricing z;
  z.plain_bytes = w + g + o;
  z.stage1_bytes = w + g + shard(o);
  z.stage2_bytes = w + shard(g) + shard(o);
  z.stage3_bytes = shard(w) + shard(g) + shard(o);
  z.duplicated_bytes = (n - 1) * (w + g + o);
  return z;
}

}  // namespace

int64_t MomentLaw::At(int64_t micro_batch) const {
  const double bytes =
      base_bytes + slope_bytes * static_cast<double>(micro_batch);
  if (bytes >= static_cast<double>(std::numeric_limits<int64_t>::max())) {
    return std::numeric_limits<int64_t>::max();
  }
  return static_cast<int64_t>(std::ceil(bytes - 1e-6));
}

int64_t PredictedRunsPeak(const std::vector<MomentLaw>& laws,
                          int64_t micro_batch, const MomentLaw** moment) {
  int64_t peak = std::numeric_limits<int64_t>::min();
  for (const MomentLaw& law : laws) {
    const int64_t bytes = law.At(micro_batch);
    if (bytes > peak) {
      peak = bytes;
      if (moment != nullptr) *moment = &law;
    }
  }
  return peak;
}

RunsFit FitRuns(std::vector<FitRunFigures> runs, int64_t budget_bytes,
                int64_t micro_batch, int64_t world_size) {
  std::stable_sort(runs.begin(), runs.end(),
                   [](const FitRunFigures& a, const FitRunFigures& b) {
                     return a.micro_batch < b.micro_batch;
                   });
  std::set<int64_t> distinct;
  for (const FitRunFigures& run : runs) distinct.insert(run.micro_batch);
  if (distinct.size() < 2) {
    const int64_t b = runs.empty() ? 1 : runs.front().micro_batch;
    throw InputError(
        "--runs: " +
        (runs.size() < 2 ? std::string("one run")
                         : "every run is at micro-batch " + std::to_string(b)) +
        ": a law in the micro-batch needs runs at two different "
        "micro-batches at least; run the program again at micro-batch " +
        std::to_string(b + 1) + " and add its directory to --runs");
  }
  RequireFlatModelState(runs);
  const FitRunFigures& first = runs.front();
  for (const FitRunFigures& run : runs) {
    std::set<std::string> names, first_names;
    for (const RunMoment& m : run.moments) names.insert(m.name);
    for (const RunMoment& m : first.moments) first_names.insert(m.name);
    if (names == first_names) continue;
    throw InputError(
        "--runs: " + RunName(run) + " and " + RunName(first) +
        " do not have the same phases and steps (one marks a phase or runs "
        "a step the other does not): fit runs of one program with the same "
        "number of steps, that differ only in the micro-batch");
  }

  RunsFit fit;
  fit.determined = distinct.size() == 2 && runs.size() == 2;
  double largest_slope = 0;
  for (const RunMoment& moment : first.moments) {
    std::vector<int64_t> micro_batches, bytes;
    for (const FitRunFigures& run : runs) {
      for (const RunMoment& m : run.moments) {
        if (m.name != moment.name) continue;
        micro_batches.push_back(run.micro_batch);
        bytes.push_back(m.bytes);
      }
    }
    fit.laws.push_back(
        FitLine(moment.name, moment.activations_live, micro_batches, bytes));
    largest_slope = std::max(largest_slope, fit.laws.back().slope_bytes);
    fit.residual_bytes =
        std::max(fit.residual_bytes, fit.laws.back().residual_bytes);
  }
  fit.residual_limit_bytes = largest_slope / 2;
  if (largest_slope <= 0) {
    throw InputError(
        "--runs: no moment of the step grows with the micro-batch between "
        "micro-batch " +
        std::to_string(first.micro_batch) + " and " +
        std::to_string(runs.back().micro_batch) +
        ", so there is no law to fit: check that the program's batch "
        "follows its micro-batch (the batch given to TrackInputs)");
  }
  for (const MomentLaw& law : fit.laws) {
    if (fit.determined || law.residual_bytes <= fit.residual_limit_bytes) {
      continue;
    }
    std::ostringstream out;
    out << "--runs: the runs do not follow a straight line in the "
           "micro-batch: the "
        << law.name
        << " of a run is off the line through the other runs by up to "
        << FractionalBytes(law.residual_bytes) << " (";
    for (const FitRunFigures& run : runs) {
      for (const RunMoment& m : run.moments) {
        if (m.name != law.name) continue;
        out << (&run == &runs.front() ? "" : ", ") << "micro-batch "
            << run.micro_batch << ": " << GroupedInteger(m.bytes)
            << " B measured, " << GroupedInteger(law.At(run.micro_batch))
            << " B on the line through all";
      }
    }
    out << "), more than half the bytes one more sample adds ("
        << FractionalBytes(fit.residual_limit_bytes)
        << "), past which the largest micro-batch that fits could be off by "
           "one; fit runs whose memory grows evenly with the micro-batch "
           "(the same steps, no shapes that depend on the data), or leave "
           "out the run that is off";
    throw InputError(out.str());
  }

  FitAnswer& a = fit.answer;
  a.device.gpu = first.gpu;
  for (const FitRunFigures& run : runs) {
    a.device.outside_allocator_bytes =
        std::max(a.device.outside_allocator_bytes, run.outside_allocator_bytes);
  }
  const int64_t outside = a.device.gpu ? a.device.outside_allocator_bytes : 0;
  const auto figure = [&](int64_t b, const MomentLaw** moment) {
    return PredictedRunsPeak(fit.laws, b, moment) + outside;
  };
  a.budget_bytes = budget_bytes;
  a.world_size = world_size;
  a.micro_batch = micro_batch;
  a.model_state_bytes = first.ModelStateBytes();
  const MomentLaw* at_requested = nullptr;
  const MomentLaw* at_one = nullptr;
  a.peak_bytes = figure(micro_batch, &at_requested);
  a.requested_peak_bytes = a.peak_bytes;
  a.gpu_bytes = a.device.gpu ? a.peak_bytes : 0;
  a.reserved_bytes = a.device.gpu ? a.peak_bytes - outside : 0;
  fit.peak_moment = at_requested->name;
  a.peak1_bytes = figure(1, &at_one);
  if (a.peak1_bytes <= budget_bytes) {
    a.largest_micro_batch = LargestThat(1, kLargestMicroBatch, [&](int64_t b) {
      return figure(b, nullptr) <= budget_bytes;
    });
    a.largest_peak_bytes = figure(a.largest_micro_batch, nullptr);
    a.split = KeepGlobalBatch(micro_batch, world_size, a.largest_micro_batch,
                              kMaxDdpWorldSize);
    a.split_peak_bytes = figure(a.split.micro_batch, nullptr);
  }
  a.model_state_alone_overflows = a.model_state_bytes + outside > budget_bytes;
  const bool state_at_one =
      a.peak1_bytes > budget_bytes && !at_one->activations_live;
  a.verdict = a.peak_bytes <= budget_bytes ? FitVerdict::kFits
              : a.model_state_alone_overflows || state_at_one
                  ? FitVerdict::kModelStateOverflow
                  : FitVerdict::kActivationOverflow;

  // ZeRO: the measured model state sharded, plus what micro-batch 1 adds
  // beyond the model state (Note [Fit verdicts]); not from runs whose
  // optimizer state is sharded already.
  const bool zero_priced = first.zero_stage == 0;
  const int64_t beyond_state = a.peak1_bytes - a.model_state_bytes;
  int64_t stages[] = {0, 0, 0, 0};
  if (zero_priced) {
    a.zero = ZeroOf(first, world_size);
    stages[1] = a.zero.stage1_bytes;
    stages[2] = a.zero.stage2_bytes;
    stages[3] = a.zero.stage3_bytes;
    // At one rank ZeRO shards nothing: no stage is offered.
    for (int k = 3; k >= 1; --k) {
      a.zero_peak_bytes[k] = stages[k] + beyond_state;
      if (world_size > 1 && a.zero_peak_bytes[k] <= budget_bytes) {
        a.zero_stage = k;
      }
    }
    auto zero3_fits = [&](int64_t n) {
      return ZeroOf(first, n).stage3_bytes + beyond_state <= budget_bytes;
    };
    if (zero3_fits(kLargestWorld)) {
      a.zero3_ranks = SmallestThat(1, kLargestWorld, zero3_fits);
      a.zero_stage_at_ranks = 3;  // runs price stage 3 alone
    }
  }

  // Note [Fit levers], those runs can price.
  if (a.verdict != FitVerdict::kFits) {
    if (!a.model_state_alone_overflows && a.split.micro_batch > 0) {
      a.levers.push_back({"a smaller micro-batch per rank: " +
                              std::to_string(a.split.micro_batch) + " on " +
                              Plural(a.split.ranks, "rank") +
                              " keeps the global batch",
                          "", a.split_peak_bytes});
    }
    const int64_t beyond_requested = a.peak_bytes - a.model_state_bytes;
    for (int k = 1; k <= 3 && world_size > 1 && zero_priced; ++k) {
      const int64_t peak = stages[k] + beyond_requested;
      if (peak > budget_bytes) continue;
      a.levers.push_back({"sharding the model state, ZeRO-" +
                              std::to_string(k) + " at " +
                              Plural(world_size, "rank") +
                              " (priced from the measured model state)",
                          "", peak});
      break;
    }
  }
  fit.runs = std::move(runs);
  return fit;
}

std::string FormatRunsFit(const RunsFit& fit, const std::string& model,
                          bool program) {
  const FitAnswer& a = fit.answer;
  const FitRunFigures& first = fit.runs.front();
  std::ostringstream out;
  out << "memprof fit: " << model << " from " << fit.runs.size() << " runs (";
  for (const FitRunFigures& run : fit.runs) {
    out << (&run == &fit.runs.front() ? "" : ", ") << run.dir
        << " at micro-batch " << run.micro_batch;
  }
  out << "), " << Plural(a.world_size, "rank") << ", budget "
      << HumanBytes(a.budget_bytes) << " (" << GroupedInteger(a.budget_bytes)
      << " B) per rank, micro-batch " << a.micro_batch << " per rank\n";
  if (a.device.gpu) {
    out << "on the GPU every figure below is what the caching allocator "
           "reserves plus the memory outside it ("
        << HumanBytes(a.device.outside_allocator_bytes)
        << ", the most the runs measured)\n";
  }
  out << "model state per rank, measured, the same in every run: weights "
      << HumanBytes(first.weights_bytes) << " + gradients "
      << HumanBytes(first.gradients_bytes) << " + optimizer state "
      << HumanBytes(first.optimizer_state_bytes) << " + DDP buckets "
      << HumanBytes(first.ddp_buckets_bytes) << " = "
      << HumanBytes(a.model_state_bytes) << "\n";
  out << "fitted, per moment (its highest live bytes = base + bytes per "
         "sample x micro-batch; the peak is the largest):\n";
  for (const MomentLaw& law : fit.laws) {
    out << "  " << law.name << ": " << FractionalBytes(law.base_bytes) << " + "
        << FractionalBytes(law.slope_bytes) << " x micro-batch\n";
  }
  out << "residual (each run against the line through the others): "
      << FractionalBytes(fit.residual_bytes);
  if (fit.determined) {
    out << " (two runs determine the law and do not test it: add a run at "
           "micro-batch "
        << fit.runs.back().micro_batch * 2 << " to --runs to test it)\n";
  } else {
    out << " (within the limit of half the largest bytes per sample, "
        << FractionalBytes(fit.residual_limit_bytes) << ")\n";
  }
  out << (a.device.gpu ? "predicted need per rank on the GPU: "
                       : "predicted peak per rank: ")
      << HumanBytes(a.peak_bytes) << " at micro-batch " << a.micro_batch << " ("
      << fit.peak_moment << ")"
      << (a.micro_batch == 1
              ? ""
              : ", " + HumanBytes(a.peak1_bytes) + " at micro-batch 1")
      << "\nlargest micro-batch per rank that fits: ";
  if (a.largest_micro_batch > 0) {
    out << a.largest_micro_batch << " (" << HumanBytes(a.largest_peak_bytes)
        << ")\n";
  } else {
    out << "none\n";
  }
  if (a.world_size > 1 && fit.runs.front().zero_stage > 0) {
    out << "ZeRO: not priced: the runs were made with ZeRO-"
        << fit.runs.front().zero_stage
        << ", their optimizer state already sharded; fit runs made without "
           "ZeRO to price it\n";
  } else if (a.world_size > 1) {
    out << "ZeRO at " << Plural(a.world_size, "rank")
        << ", priced from the measured model state with ideal P/N shards, "
           "per rank at micro-batch 1: ZeRO-1 "
        << HumanBytes(a.zero_peak_bytes[1]) << ", ZeRO-2 "
        << HumanBytes(a.zero_peak_bytes[2]) << ", ZeRO-3 "
        << HumanBytes(a.zero_peak_bytes[3]) << "\n";
  }
  out << "verdict: " << FitVerdictSentence(a) << "\n";
  if (a.verdict != FitVerdict::kFits) {
    out << "levers that fit:" << (a.levers.empty() ? " none\n" : "\n");
    for (const FitLever& lever : a.levers) {
      out << "  " << lever.what << ": " << HumanBytes(lever.peak_bytes)
          << " per rank\n";
    }
    out << (program
                ? "not priced: activation checkpointing, bf16 autocast, a "
                  "shorter sequence: memprof has no size table for a "
                  "program's own model; change the program and fit its new "
                  "runs\n"
                : "not priced from runs: activation checkpointing, bf16 "
                  "autocast, a shorter sequence: memprof fit --config prices "
                  "them from the model's size table\n");
  }
  return out.str();
}

}  // namespace memprof
