#include "profiler/cli/fit_runs_command.h"

#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"
#include "profiler/cli/command_child.h"
#include "profiler/cli/local_world_size.h"
#include "profiler/cli/post_mortem.h"
#include "profiler/predict/fit_runs.h"
#include "profiler/report/fit_runs_reader.h"
#include "profiler/report/report_text.h"

namespace memprof {
namespace fs = std::filesystem;
namespace {

// One run of the program at a micro-batch under the budget.
struct ProgramRun {
  bool completed = false;
  int64_t peak_bytes = 0;     // completed: the figure fit compares
  std::string out_of_memory;  // where and how, when it ran out
};

// Runs the command at `micro_batch` into DIR/micro-batch-B. Throws
// RunFailure when it failed for another reason than memory (or ran past
// its timeout), InputError when what it wrote is not a run of the fitted
// model at its world size.
ProgramRun MeasureAt(const FitArgs& args, const RunsForFit& runs,
                     const std::string& dir, int64_t micro_batch) {
  const std::string out =
      (fs::path(dir) / ("micro-batch-" + std::to_string(micro_batch))).string();
  if (fs::exists(out)) {
    throw InputError("--out " + dir + " already holds " + out +
                     ": each measured run writes into a fresh directory; "
                     "give a new --out");
  }
  fs::create_directory(out);
  const std::string line = CommandLineAt(args.command, micro_batch, out);
  const CommandRun command =
      RunCommandChild(line, out, args.budget_bytes, args.command_timeout_s);
  const std::string at = "the command at micro-batch " +
                         std::to_string(micro_batch) + " (" + line + ")";
  if (command.timed_out) {
    throw RunFailure(at + " did not finish within " +
                     std::to_string(args.command_timeout_s) +
                     " s (--command-timeout) and was stopped; see " +
                     command.log_path);
  }
  // A rank that ran out of memory and left its session unfinished left its
  // capture: its report is recovered from it (Note [Post-mortem]).
  std::ostringstream recovery;
  RecoverKilledRanks(out, {}, recovery);
  RunView view;
  bool readable = true;
  try {
    view = LoadRunView(out);
  } catch (const InputError&) {
    readable = false;
  }
  if (readable) {
    const RankReport& first = view.ranks.front();
    if (first.context.world_size != runs.world_size) {
      throw InputError(
          at + " ran " + std::to_string(first.context.world_size) +
          " rank(s), but the runs are at " + std::to_string(runs.world_size) +
          ": launch the ranks in the command (torchrun --standalone "
          "--nproc-per-node " +
          std::to_string(runs.world_size) + " --no-python PROGRAM ...)");
    }
    const RunConfig& config = first.context.config;
    const std::string model = ModelLabel(config);
    if (model != runs.model) {
      throw InputError(at + " ran " + model + ", but the runs are of " +
                       runs.model + ": give the command of the fitted program");
    }
  }
  ProgramRun run;
  for (const RankReport& rank : view.ranks) {
    if (rank.out_of_memory) {
      run.out_of_memory = "rank " + std::to_string(rank.context.rank) + ": " +
                          OutOfMemoryMessage(*rank.out_of_memory);
      return run;
    }
  }
  if (command.exit_code != kExitOk || !readable || !view.complete()) {
    throw RunFailure(
        at +
        (command.exit_code != kExitOk
             ? " failed (exit " + std::to_string(command.exit_code) +
                   "), not for memory"
             : " wrote no complete set of rank reports into " + out +
                   " (the program's memprof::Session writes to "
                   "$MEMPROF_OUT when its out_dir is left empty)") +
        "; see " + command.log_path);
  }
  run.completed = true;
  const FitRunFigures figures = FiguresOfRun(view);
  for (const RunMoment& m : figures.moments) {
    run.peak_bytes = std::max(run.peak_bytes, m.bytes);
  }
  if (figures.gpu) run.peak_bytes += figures.outside_allocator_bytes;
  return run;
}

}  // namespace

int RunFitRunsCommand(const FitArgs& args) {
  const RunsForFit runs = ReadRunsForFit(args.run_dirs);
  const RunsFit fit =
      FitRuns(runs.runs, args.budget_bytes, args.micro_batch, runs.world_size);
  std::cout << FormatRunsFit(fit, runs.model, runs.program) << std::flush;
  const FitAnswer& a = fit.answer;
  const bool fits = a.verdict == FitVerdict::kFits;
  if (!args.measure) return fits ? kExitOk : kExitCheckFailed;

  // Note [Local memory]: the runs may take the budget on every rank.
  const int64_t available = AvailableMemoryBytes();
  if (available > 0 && args.budget_bytes * runs.world_size > available) {
    throw InputError(
        "--measure runs the program under a memory limit of " +
        HumanBytes(args.budget_bytes) + " per rank on " +
        std::to_string(runs.world_size) + " rank(s), more than the " +
        HumanBytes(available) +
        " this machine has available: measure with a budget this machine "
        "can hold, or leave out --measure");
  }
  const std::string dir = MeasuredRunsDir(args.out_dir);
  std::cout << "\nmeasured (the command under a memory limit of "
            << HumanBytes(args.budget_bytes) << " per rank, runs in " << dir
            << "):\n";
  const int64_t largest = a.largest_micro_batch;
  std::map<int64_t, ProgramRun> measured;
  for (int64_t b : largest > 0 ? std::vector<int64_t>{largest, largest + 1}
                               : std::vector<int64_t>{1}) {
    const ProgramRun& run = measured[b] = MeasureAt(args, runs, dir, b);
    const MomentLaw* moment = nullptr;
    const int64_t predicted =
        PredictedRunsPeak(fit.laws, b, &moment) +
        (a.device.gpu ? a.device.outside_allocator_bytes : 0);
    std::cout << "  micro-batch " << b << ": "
              << (run.completed
                      ? "ran to completion, peak " + HumanBytes(run.peak_bytes)
                      : "ran out of memory (" + run.out_of_memory + ")")
              << "; predicted peak " << HumanBytes(predicted) << "\n"
              << std::flush;
  }
  bool confirmed;
  std::ostringstream why;
  if (largest > 0) {
    confirmed = measured[largest].completed && !measured[largest + 1].completed;
    why << "micro-batch " << largest
        << (measured[largest].completed ? " fits" : " does not fit")
        << " and micro-batch " << largest + 1
        << (measured[largest + 1].completed ? " fits" : " runs out of memory");
  } else {
    confirmed = !measured[1].completed;
    why << "micro-batch 1 "
        << (confirmed ? "runs out of memory" : "ran to completion");
  }
  std::cout << "measured: " << why.str() << ": "
            << (confirmed && largest == 0
                    ? std::string("no micro-batch fits, as predicted")
                : confirmed ? "the largest micro-batch per rank that fits is " +
                                  std::to_string(largest) + ", as predicted"
                            : "not as predicted (largest micro-batch " +
                                  std::to_string(largest) +
                                  "); fit from runs nearer the budget")
            << "\n";
  return confirmed && fits ? kExitOk : kExitCheckFailed;
}

}  // namespace memprof
