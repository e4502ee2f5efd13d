#include "profiler/report/fit_runs_reader.h"

#include <algorithm>
#include <map>

#include "profiler/base/effective_config.h"
#include "profiler/base/errors.h"

namespace memprof {
namespace {

// The moment's name in the user's words: "backward of step 1",
// "optimizer of the later steps", "model_init" (set-up, step 0).
std::string MomentName(const TimelineSegment& segment) {
  const std::string phase(PhaseName(segment.phase));
  if (segment.step == 0) return phase;
  if (segment.step == 1) return phase + " of step 1";
  return phase + " of the later steps";
}

int64_t Total(const Breakdown& bytes) {
  int64_t total = 0;
  for (int64_t b : bytes) total += b;
  return total;
}

// What must be the same in every run: the config without the keys of the
// batch (and the run length and data, which move no byte of a step).
std::map<std::string, std::string> ComparedConfig(const RunConfig& config) {
  std::map<std::string, std::string> keys;
  for (const ConfigEntry& entry : EffectiveConfig(config)) {
    if (entry.key == "train.micro_batch" || entry.key == "train.global_batch" ||
        entry.key == "train.steps" || entry.key == "train.seed" ||
        entry.key == "train.lr" || entry.key == "ddp.timeout_s") {
      continue;
    }
    keys[entry.key] = entry.value;
  }
  return keys;
}

}  // namespace

FitRunFigures FiguresOfRun(const RunView& view) {
  FitRunFigures run;
  run.dir = view.dir;
  std::vector<std::string> order;  // moments in the order of the run
  std::map<std::string, RunMoment> moments;
  for (const RankReport& rank : view.ranks) {
    run.micro_batch = rank.micro_batch;
    run.zero_stage = rank.context.config.ddp.zero_stage;
    auto most = [&rank](int64_t& bytes, Category c) {
      bytes = std::max(bytes, rank.Of(c).peak_bytes);
    };
    most(run.weights_bytes, Category::kWeights);
    most(run.gradients_bytes, Category::kGradients);
    most(run.optimizer_state_bytes, Category::kOptimizerState);
    most(run.ddp_buckets_bytes, Category::kDdpBuckets);
    std::vector<std::pair<std::string, RunMoment>> of_rank;
    if (rank.cuda_run) {
      // Note [Fit from runs]: on a GPU, one moment, the reserved peak.
      run.gpu = true;
      for (const CudaMoment& m : rank.cuda_run->moments) {
        run.outside_allocator_bytes =
            std::max(run.outside_allocator_bytes, m.outside());
      }
      const std::string name = "reserved peak of the steady state";
      of_rank.push_back(
          {name, RunMoment{name, rank.cuda_run->peak_reserved, true}});
    } else {
      for (const TimelineSegment& segment : rank.timeline) {
        if (segment.phase == Phase::kIdle) continue;
        // A segment that allocated nothing peaks at what it began with.
        const int64_t bytes = segment.peak_seq >= 0
                                  ? segment.peak_bytes
                                  : Total(segment.begin_bytes);
        const bool live = segment.phase == Phase::kInputs ||
                          segment.phase == Phase::kForward ||
                          segment.phase == Phase::kBackward;
        const std::string name = MomentName(segment);
        of_rank.push_back({name, RunMoment{name, bytes, live}});
      }
    }
    for (const auto& [name, moment] : of_rank) {
      auto found = moments.find(name);
      if (found == moments.end()) {
        order.push_back(name);
        moments.emplace(name, moment);
      } else {
        found->second.bytes = std::max(found->second.bytes, moment.bytes);
      }
    }
  }
  for (const std::string& name : order) run.moments.push_back(moments[name]);
  return run;
}

RunsForFit ReadRunsForFit(const std::vector<std::string>& dirs) {
  RunsForFit out;
  const RankReport* first = nullptr;
  std::vector<RunView> views;
  views.reserve(dirs.size());
  for (const std::string& dir : dirs) {
    const std::string remedy =
        "; each of --runs is a finished run's directory (memprof profile "
        "--out, or the out_dir of your program's memprof::Session)";
    try {
      views.push_back(LoadRunView(dir));
    } catch (const InputError& e) {
      std::string reason = e.what();
      const std::string prefix = "--run " + dir + ": ";
      if (reason.rfind(prefix, 0) == 0) reason = reason.substr(prefix.size());
      throw InputError("--runs: " + dir + " is not a run: " + reason + remedy);
    }
    const RunView& view = views.back();
    if (!view.complete()) {
      const RankFileProblem& p = view.problems.front();
      throw InputError("--runs: " + dir + " is not a complete run: rank " +
                       std::to_string(p.rank) + "'s report " + p.path + " is " +
                       p.reason + remedy);
    }
    for (const RankReport& rank : view.ranks) {
      const std::string who =
          "--runs: " + dir + ": rank " + std::to_string(rank.context.rank);
      if (rank.out_of_memory) {
        throw InputError(who +
                         " ran out of memory: fit needs runs that ran to "
                         "completion; run it again without a memory limit, "
                         "or at a smaller micro-batch");
      }
      if (rank.post_mortem) {
        throw InputError(who +
                         " was killed and its report recovered: fit needs "
                         "runs that ran to completion; run it again");
      }
      if (rank.micro_batch < 1) {
        throw InputError(who +
                         " names no micro-batch: set SessionOptions::"
                         "micro_batch, or give the batch to TrackInputs()");
      }
    }
    const RankReport& report = view.ranks.front();
    if (first == nullptr) {
      first = &views.front().ranks.front();
      continue;
    }
    const std::string between = " in " + views.front().dir + " but ";
    if (ModelLabel(report.context.config) !=
        ModelLabel(first->context.config)) {
      throw InputError(
          "--runs: different models: " + ModelLabel(first->context.config) +
          between + ModelLabel(report.context.config) + " in " + dir +
          "; fit runs of one model");
    }
    if (report.context.world_size != first->context.world_size) {
      throw InputError("--runs: different world sizes: " +
                       std::to_string(first->context.world_size) + " ranks" +
                       between + std::to_string(report.context.world_size) +
                       " in " + dir +
                       "; the model state per rank and the batch per rank "
                       "depend on it: fit runs at one world size");
    }
    if (report.context.device != first->context.device) {
      throw InputError("--runs: different devices: " + first->context.device +
                       between + report.context.device + " in " + dir +
                       "; fit runs on one kind of device");
    }
    const auto a = ComparedConfig(first->context.config);
    const auto b = ComparedConfig(report.context.config);
    for (const auto& [key, value] : a) {
      const auto other = b.find(key);
      const std::string theirs = other == b.end() ? "(absent)" : other->second;
      if (theirs == value) continue;
      throw InputError("--runs: the runs differ in " + key +
                       " besides the "
                       "micro-batch: " +
                       value + between + theirs + " in " + dir +
                       "; fit runs that differ in the micro-batch "
                       "alone");
    }
  }
  for (const RunView& view : views) out.runs.push_back(FiguresOfRun(view));
  out.model = ModelLabel(views.front().ranks.front().context.config);
  out.program = views.front().ranks.front().context.config.model == "program";
  out.world_size = views.front().ranks.front().context.world_size;
  return out;
}

}  // namespace memprof
