#include "profiler/report/rank_outcome.h"

#include "profiler/report/report_text.h"

namespace memprof {
namespace {

// " of 300", or "" when the steps configured are unknown (0).
std::string OfSteps(int64_t configured) {
  return configured > 0 ? " of " + std::to_string(configured) : "";
}

// "in step 2 of 300", "before step 1 of 300".
std::string StepOf(int step, int64_t configured) {
  return (step > 0 ? "in step " + std::to_string(step)
                   : std::string("before step 1")) +
         OfSteps(configured);
}

}  // namespace

int64_t ConfiguredSteps(const RankReport& report) {
  // A program recovered from its capture: its own loop decided how many
  // steps it would run, and never said.
  if (report.context.config.model == "program" && report.post_mortem) {
    return 0;
  }
  return report.context.config.train.steps;
}

std::string UnfinishedReason(const RankReport& report) {
  const int64_t configured = ConfiguredSteps(report);
  if (report.out_of_memory) {
    return "ran out of memory " +
           StepOf(report.out_of_memory->step, configured);
  }
  if (report.post_mortem) {
    const PostMortemFigures& p = *report.post_mortem;
    // Step 0 after steps: past the loop (writing its outputs, say).
    const std::string when =
        p.step == 0 && !report.steps.empty()
            ? "after step " + std::to_string(report.steps.back().step) +
                  OfSteps(configured)
            : StepOf(p.step, configured);
    return EndingOf(p.killed_by) + " " + when +
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

bool RebuildsDdpBuckets(const RankReport& report) {
  const CategoryFigures& buckets = report.Of(Category::kDdpBuckets);
  return buckets.predicted_bytes > 0 || buckets.peak_bytes > 0 ||
         report.context.config.ddp.gradient_as_bucket_view;
}

std::string OneTimeSteps(const RankReport& report) {
  return std::string("step 1 creates the gradients and optimizer state") +
         (RebuildsDdpBuckets(report)
              ? ", DDP rebuilds its buckets once in step 2"
              : "");
}

bool ReachedSteadyState(const RankReport& report) {
  for (const StepReport& step : report.steps) {
    if (step.completed && step.step >= report.steady_from) return true;
  }
  return false;
}

}  // namespace memprof
