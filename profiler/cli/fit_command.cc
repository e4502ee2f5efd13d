#include "profiler/cli/fit_command.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "models/config_validation.h"
#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"
#include "profiler/cli/command_child.h"
#include "profiler/cli/local_world_size.h"
#include "profiler/cli/profile_child.h"
#include "profiler/predict/fit.h"
#include "profiler/predict/fit_search.h"
#include "profiler/report/report_text.h"

namespace memprof {
namespace fs = std::filesystem;
namespace {

// The last error line of a child's log, as command_main writes it
// ("memprof: error: ...", or "memprof: rank 0 on HOST (pid N): error: ..."
// from a rank), without its prefix; "" when there is none. Reads the log's
// last 64 KiB at most.
std::string LastErrorOf(const std::string& log_path) {
  constexpr std::streamoff kTail = 64 << 10;
  std::ifstream log(log_path, std::ios::binary);
  if (!log) return "";
  log.seekg(0, std::ios::end);
  const std::streamoff size = log.tellg();
  log.seekg(std::max<std::streamoff>(0, size - kTail));
  const std::string prefix = "memprof: ", marker = "error: ";
  std::string line, error;
  while (std::getline(log, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    const size_t at = line.find(marker, prefix.size());
    // Nothing between the two, or a rank's origin ending in "): ".
    if (at == prefix.size() ||
        (at != std::string::npos && line.compare(at - 3, 3, "): ") == 0)) {
      error = line.substr(at + marker.size());
    }
  }
  return error;
}

// Micro-batches tried above the predicted largest before binary search.
constexpr int64_t kLargestMeasured = int64_t{1} << 20;

// One measured run: it completed (with its steady-state peak) or it ran out
// of memory (with where and how; the predicted verdict for the budget is
// printed once, above the runs).
struct MeasuredRun {
  int64_t micro_batch = 0;
  bool completed = false;
  int64_t peak_bytes = 0;  // the steady state's
  // The run's highest, when above the steady state's (DDP's start-up copy
  // of the weights, step 1): what the budget held too; "" otherwise.
  std::string higher;
  std::string out_of_memory;  // OutOfMemoryMessage, when it ran out
  // Where it ran out, and the prediction for the run (its own fit).
  Phase oom_phase = Phase::kIdle;
  int oom_step = 0;
  int64_t model_state_bytes = 0;
};

// Note [Measured verdicts]
// Micro-batch 1 ran out of memory on the measured rank: the verdict follows
// where, as the predicted one does (Note [Fit verdicts]):
// - model-state-overflow: the model state alone (the run's own prediction
//   at one rank, exact to the byte) is over the budget, or the run ran out
//   in an optimizer step, where no activation is live;
// - start-up-overflow: it ran out before step 1 with the model state
//   within the budget: DDP's start-up broadcast of the weights holds a
//   flat copy of them (up to 250 MiB a chunk), which no micro-batch and no
//   number of ranks changes, and the prediction leaves out;
// - activation-overflow: otherwise (inputs, forward, backward): what
//   micro-batch 1 adds to a model state that fits is over the rest.
std::string MeasuredAtOneVerdict(const MeasuredRun& one, int64_t budget,
                                 std::ostream& why) {
  why << "micro-batch 1 ran out of memory (" << one.out_of_memory << "): ";
  const std::string state = "the model state, " +
                            HumanBytes(one.model_state_bytes) +
                            " on one rank, ";
  if (one.model_state_bytes > budget) {
    why << state
        << "is alone over the budget, as on every data-parallel "
           "rank (ZeRO's shards are priced above)";
    return FitVerdictName(FitVerdict::kModelStateOverflow);
  }
  if (one.oom_phase == Phase::kOptimizer) {
    why << state
        << "fits alone, but not with the optimizer step's update "
           "workspace, with no activation live";
    return FitVerdictName(FitVerdict::kModelStateOverflow);
  }
  if (one.oom_step == 0) {
    why << state
        << "fits, but DDP's start-up broadcast holds a flat copy "
           "of the weights (up to 250 MiB a chunk) beside them for a "
           "moment, which the prediction leaves out: no micro-batch and no "
           "number of ranks changes it";
    return "start-up-overflow";
  }
  why << state
      << "fits, but what micro-batch 1 adds to it (activations, "
         "inputs, workspace) does not, and no smaller micro-batch per rank "
         "exists: only what shrinks the activations or shards the model "
         "state can help";
  return FitVerdictName(FitVerdict::kActivationOverflow);
}

// `words` with "--key VALUE" (or "--key=VALUE") for the lever's flags
// ("--gpt.seq_len 498") in place of any the user gave for the same key.
std::vector<std::string> WithLever(std::vector<std::string> words,
                                   const std::string& flags) {
  std::istringstream in(flags);
  std::vector<std::string> lever{std::istream_iterator<std::string>(in),
                                 std::istream_iterator<std::string>()};
  for (size_t i = 0; i + 1 < lever.size(); i += 2) {
    std::vector<std::string> kept;
    for (size_t j = 0; j < words.size(); ++j) {
      if (words[j] == lever[i]) {
        ++j;  // and its value
      } else if (words[j].rfind(lever[i] + "=", 0) != 0) {
        kept.push_back(words[j]);
      }
    }
    words = std::move(kept);
  }
  words.insert(words.end(), lever.begin(), lever.end());
  return words;
}

// Runs one rank at a micro-batch under the budget, once per micro-batch
// (with `lever_flags`, the run's own config changed by a lever), into
// DIR/<prefix>micro-batch-<b>.
class Measurer {
 public:
  Measurer(const FitArgs& args, std::string dir, std::string lever_flags = "",
           std::string prefix = "")
      : args_(args),
        dir_(std::move(dir)),
        lever_flags_(std::move(lever_flags)),
        prefix_(std::move(prefix)) {}

  const MeasuredRun& Run(int64_t micro_batch) {
    for (const MeasuredRun& run : runs_) {
      if (run.micro_batch == micro_batch) return run;
    }
    runs_.push_back(Measure(micro_batch));
    const MeasuredRun& run = runs_.back();
    std::cout << "  micro-batch " << micro_batch << ": "
              << (run.completed ? "ran to completion, peak " +
                                      HumanBytes(run.peak_bytes) +
                                      " (steady state)" + run.higher
                                : run.out_of_memory)
              << "\n"
              << std::flush;
    return run;
  }

 private:
  // Throws RunFailure when the run failed for another reason than memory.
  MeasuredRun Measure(int64_t micro_batch) const {
    ProfileChildRequest request;
    request.config_words = lever_flags_.empty()
                               ? args_.profile_words
                               : WithLever(args_.profile_words, lever_flags_);
    request.world_size = 1;
    request.micro_batch = micro_batch;
    request.global_batch = 0;
    request.memory_limit_bytes = args_.budget_bytes;
    request.out_dir = (fs::path(dir_) /
                       (prefix_ + "micro-batch-" + std::to_string(micro_batch)))
                          .string();
    const ProfileChildResult child = RunProfileChild(request);
    const RankReport* report =
        child.reports.empty() ? nullptr : &child.reports.front();
    MeasuredRun run;
    run.micro_batch = micro_batch;
    if (child.exit_code == kExitOk && report != nullptr) {
      run.completed = true;
      run.peak_bytes = report->peak.total_bytes;
      const PeakFigures& highest = report->run_peak;
      if (highest.total_bytes > run.peak_bytes) {
        run.higher =
            "; " + HumanBytes(highest.total_bytes) + " at its highest, in " +
            std::string(PhaseName(highest.phase)) +
            (highest.step > 0 ? " of step " + std::to_string(highest.step)
                              : std::string());
      }
    } else if (child.exit_code == kExitRunFailed && report != nullptr &&
               report->out_of_memory) {
      const OutOfMemoryFigures& oom = *report->out_of_memory;
      run.out_of_memory = OutOfMemoryMessage(oom);
      run.oom_phase = oom.phase;
      run.oom_step = oom.step;
      run.model_state_bytes = oom.fit.model_state_bytes;
    } else if (const std::string error = LastErrorOf(child.log_path);
               child.exit_code == kExitBadInput && !error.empty()) {
      // Refused before it ran (no GPU, more memory than the machine has):
      // the user's to fix, as profile would say.
      throw InputError(
          "the measured run at micro-batch " + std::to_string(micro_batch) +
          " refused its input: " + error + " (" + child.log_path + ")");
    } else {
      throw RunFailure("the measured run at micro-batch " +
                       std::to_string(micro_batch) + " failed (exit " +
                       std::to_string(child.exit_code) +
                       "), not for memory; see " + child.log_path);
    }
    return run;
  }

  const FitArgs& args_;
  std::string dir_;
  std::string lever_flags_;
  std::string prefix_;
  std::vector<MeasuredRun> runs_;
};

// The largest micro-batch that runs to completion under the budget, from
// `guess` (the prediction's); 0 when micro-batch 1 does not.
int64_t LargestMeasured(Measurer& measure, int64_t guess) {
  if (!measure.Run(1).completed) return 0;
  int64_t good = 1;
  int64_t bad = 0;  // 0: none found yet
  int64_t b = std::max<int64_t>(1, guess);
  if (measure.Run(b).completed) {
    good = b;
    for (int64_t step = 1; good < kLargestMeasured; step *= 2) {
      const int64_t next = std::min(kLargestMeasured, good + step);
      if (!measure.Run(next).completed) {
        bad = next;
        break;
      }
      good = next;
    }
    if (bad == 0) return good;
  } else {
    bad = b;
  }
  while (bad - good > 1) {
    const int64_t mid = good + (bad - good) / 2;
    (measure.Run(mid).completed ? good : bad) = mid;
  }
  return good;
}

}  // namespace

int RunFitCommand(const FitArgs& args) {
  // The measured runs train here, under the budget as --memory-limit: on a
  // CPU the budget must be memory this machine has (as profile checks,
  // Note [Local world size]), or the first run would be refused with a
  // flag fit does not take.
  if (args.measure && args.config.train.device == "cpu") {
    const int64_t available = AvailableMemoryBytes();
    if (available > 0 && args.budget_bytes > available - kRankProcessBytes) {
      throw InputError(
          "--measure: the measured runs train one rank on this machine "
          "under a memory limit of the budget, " +
          HumanBytes(args.budget_bytes) + ", and with the " +
          HumanBytes(kRankProcessBytes) +
          " the process takes that is more than the " + HumanBytes(available) +
          " this machine has available; measure a --budget of at most " +
          HumanBytes(std::max<int64_t>(0, available - kRankProcessBytes)) +
          " here, or leave out --measure for the prediction alone");
    }
  }
  const FitAnswer answer =
      Fit(args.config, args.budget_bytes,
          FitDeviceOf(args.config, args.outside_allocator_bytes));
  std::cout << FormatFit(answer, args.config) << std::flush;
  if (!args.measure) {
    return answer.verdict == FitVerdict::kFits ? kExitOk : kExitCheckFailed;
  }

  const std::string dir = MeasuredRunsDir(args.out_dir);
  std::cout << "\nmeasured (one rank under a memory limit of "
            << HumanBytes(args.budget_bytes) << ", runs in " << dir << "):\n";
  Measurer measure(args, dir);
  const int64_t largest = LargestMeasured(measure, answer.largest_micro_batch);
  bool fits = false;
  std::string verdict;
  std::ostringstream why;
  if (largest == 0) {
    verdict = MeasuredAtOneVerdict(measure.Run(1), args.budget_bytes, why);
  } else {
    fits = answer.micro_batch <= largest;
    verdict = FitVerdictName(fits ? FitVerdict::kFits
                                  : FitVerdict::kActivationOverflow);
    why << "the largest micro-batch per rank that ran to completion is "
        << largest << " (peak " << HumanBytes(measure.Run(largest).peak_bytes)
        << measure.Run(largest).higher << ")";
    if (largest != answer.largest_micro_batch &&
        answer.largest_micro_batch < kLargestMeasured) {
      why << ", where the prediction said " << answer.largest_micro_batch;
    }
    if (largest < kLargestMeasured) {
      why << "; micro-batch " << largest + 1 << " ran out of memory";
    }
    if (!fits) {
      const GlobalBatchSplit split = KeepGlobalBatch(
          answer.micro_batch, answer.world_size, largest, kMaxDdpWorldSize);
      why << "; the requested micro-batch " << answer.micro_batch
          << " does not fit";
      if (split.micro_batch > 0) {
        why << ": run it as micro-batch " << split.micro_batch << " on "
            << Plural(split.ranks, "rank") << " for the same global batch";
      }
    }
  }
  std::cout << "measured verdict: " << verdict << ": " << why.str() << "\n";
  if (fits) return kExitOk;

  // The first lever that changes one rank's run itself, and the LoRA
  // lever when it is not that one, each run at the requested micro-batch
  // under the budget.
  bool measured_one = false;
  for (const FitLever& lever : answer.levers) {
    if (!lever.one_rank || (measured_one && !lever.adapters)) continue;
    measured_one = true;
    std::cout << "\nmeasured lever: " << lever.what << " (" << lever.flags
              << "), predicted peak " << HumanBytes(lever.peak_bytes) << ":\n";
    Measurer with_lever(args, dir, lever.flags,
                        lever.adapters ? "lora-" : "lever-");
    const MeasuredRun& run = with_lever.Run(answer.micro_batch);
    std::cout << "measured lever verdict: " << lever.what
              << (run.completed ? " fits the budget"
                                : " does not fit the budget")
              << "\n";
    if (lever.adapters) break;
  }
  return kExitCheckFailed;
}

}  // namespace memprof
