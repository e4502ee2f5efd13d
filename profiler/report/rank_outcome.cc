#include "profiler/report/rank_outcome.h"

namespace memprof {
namespace {

// "in step 2 of 300", "before step 1 of 300".
std::string StepOf(int step, int64_t configured) {
  return (step > 0 ? "in step " + std::to_string(step)
                   : std::string("before step 1")) +
         " of " + std::to_string(configured);
}

}  // namespace

std::string UnfinishedReason(const RankReport& report) {
  const int64_t configured = report.context.config.train.steps;
  if (report.out_of_memory) {
    return "ran out of memory " +
           StepOf(report.out_of_memory->step, configured);
  }
  if (report.post_mortem) {
    return "was killed (" + report.post_mortem->killed_by + ") " +
           StepOf(report.post_mortem->step, configured) +
           "; its report was recovered from its capture (post-mortem)";
  }
  for (const StepReport& step : report.steps) {
    if (!step.completed) {
      return "did not complete step " + std::to_string(step.step) + " of " +
             std::to_string(configured);
    }
  }
  if (static_cast<int64_t>(report.steps.size()) < configured) {
    return "ran " + std::to_string(report.steps.size()) + " of " +
           std::to_string(configured) + " steps";
  }
  return "";
}

bool ReachedSteadyState(const RankReport& report) {
  for (const StepReport& step : report.steps) {
    if (step.completed && step.step >= report.steady_first_step) return true;
  }
  return false;
}

}  // namespace memprof
