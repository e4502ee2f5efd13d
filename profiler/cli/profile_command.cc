#include "profiler/cli/profile_command.h"

#include <filesystem>
#include <iostream>
#include <memory>

#include "profiler/base/atomic_file.h"
#include "profiler/gate/gate_run.h"
#include "profiler/train/ddp_engine.h"
#include "models/config_validation.h"
#include "profiler/base/errors.h"
#include "profiler/cli/launcher.h"
#include "profiler/capture/memory_snapshot.h"
#include "profiler/base/rank_env.h"
#include "profiler/report/run_reports.h"
#include "profiler/report/summary.h"
#include "profiler/train/trainer.h"

namespace memprof {
namespace fs = std::filesystem;

namespace {

void Write(const fs::path& path, const std::string& text) {
  try {
    WriteFileAtomically(path.string(), text);
  } catch (const std::runtime_error& e) {
    throw RunFailure(e.what());
  }
}

// The single-rank job of a plain `memprof profile`: a group of one on a
// free loopback port.
std::unique_ptr<ProcessGroup> SoloGroup(int64_t timeout_s) {
  for (int attempt = 1;; ++attempt) {
    RankTopology solo;
    solo.master_port = FreeLocalPort();
    try {
      return std::make_unique<ProcessGroup>(solo, timeout_s);
    } catch (const PortBusy&) {
      if (attempt == kPortAttempts) throw;
    }
  }
}

// Returns every rank's report (rank 0) or nothing (other ranks).
std::vector<std::string> RunThisRank(const RunConfig& config,
                                     const std::string& out_dir,
                                     ProcessGroup& group, bool no_hook,
                                     int64_t memory_limit_bytes) {
  const RankReport report = RunRank(config, group, memory_limit_bytes);
  if (!report.hooked && !no_hook) {
    throw RunFailure("the allocator hook is not installed");  // a bug
  }
  nlohmann::ordered_json rank = ToJson(report);
  const std::string rank_json = rank.dump(2) + "\n";
  Write(fs::path(out_dir) / ("rank-" + std::to_string(group.rank()) + ".json"),
        rank_json);
  if (!no_hook) {
    Write(fs::path(out_dir) /
              ("snapshot-" + std::to_string(group.rank()) + ".json"),
          MemorySnapshotJson(report.capture, group.rank()).dump() + "\n");
  }
  if (report.RanOutOfMemory()) {
    const std::string line = OutOfMemoryLine(rank["out_of_memory"]);
    // A job of one renders its reports, the out-of-memory first (unless it
    // ran out before the first step: then its report is all); in a larger
    // job the peers are mid-step: nothing more is exchanged (the launcher,
    // or the external one, stops them; `memprof report` renders what was
    // written).
    if (group.size() == 1 && !rank["steps"].empty()) {
      std::vector<nlohmann::ordered_json> ranks;
      ranks.push_back(std::move(rank));
      RenderRunReports(RunViewOf(out_dir, std::move(ranks)), std::cout,
                       std::cerr);
    }
    throw RunFailure(line + "; see " + out_dir + "/rank-" +
                     std::to_string(group.rank()) + ".json");
  }
  // Rank 0 gets every report through the group, so the summary needs no
  // shared filesystem.
  std::vector<std::string> all = group.AllGather(rank_json);
  if (group.rank() != 0) return {};
  if (no_hook) {
    std::cout << FormatStepTimes(nlohmann::ordered_json::parse(all[0]))
              << "reports: " << out_dir << "/ (--no-hook: step times only)\n"
              << std::flush;
    return all;
  }
  std::vector<nlohmann::ordered_json> ranks;
  for (const std::string& text : all) {
    ranks.push_back(nlohmann::ordered_json::parse(text));
  }
  const RunView view = RunViewOf(out_dir, std::move(ranks));
  Write(fs::path(out_dir) / "summary.json", view.summary.dump(2) + "\n");
  std::cout << FormatSummaryTable(view.summary);
  try {
    RenderRunReports(view, std::cout, std::cerr);
  } catch (const InputError& e) {
    throw RunFailure(e.what());
  }
  return all;
}

}  // namespace

int RunProfileCommand(const ProfileArgs& args) {
  RunConfig config = args.config;
  const std::optional<RankTopology> topology = TopologyFromEnvironment();
  // --check runs where summary.json is written (a job of one, rank 0 of a
  // job started by torchrun/srun/mpirun) or in the local launcher once every
  // rank succeeded; the ranks the launcher starts leave it to the launcher.
  // The baseline is read first, so a bad one fails before any training.
  std::optional<Baseline> baseline;
  const bool checker =
      !topology || (topology->rank == 0 && !topology->launched_by_memprof);
  if (!args.check.baseline_path.empty() && checker) {
    baseline = LoadBaseline(args.check.baseline_path);
  }
  if (!topology && config.ddp.world_size > 1) {
    CreateOutputDirectory("--out", args.out_dir);  // before any training
    const int code = LaunchLocalRanks(static_cast<int>(config.ddp.world_size),
                                      args.words, args.out_dir);
    if (code != kExitOk || !baseline) return code;
    return GateRun(*baseline, LoadRun(args.out_dir), args.out_dir, args.check);
  }
  if (topology) {
    // The launcher's world size is the truth; batch arithmetic follows it.
    config.ddp.world_size = topology->world_size;
    try {
      ValidateRunConfig(config);
    } catch (const ConfigError& e) {
      throw InputError("WORLD_SIZE=" + std::to_string(topology->world_size) +
                       ": " + e.what());
    }
  }
  CreateOutputDirectory("--out", args.out_dir);  // before any training
  std::unique_ptr<ProcessGroup> group;
  if (topology) {
    try {
      group = std::make_unique<ProcessGroup>(*topology, config.ddp.timeout_s);
    } catch (const PortBusy& e) {
      if (topology->launched_by_memprof) return kExitPortBusy;
      throw RunFailure(std::string(e.what()) + "; choose another MASTER_PORT");
    }
  } else {
    group = SoloGroup(config.ddp.timeout_s);
  }
  std::vector<std::string> reports;
  try {
    reports = RunThisRank(config, args.out_dir, *group, args.no_hook,
                          args.memory_limit_bytes);
  } catch (...) {
    group->Abandon();  // peers may be gone: do not wait for them in teardown
    throw;
  }
  if (!baseline || reports.empty()) return kExitOk;
  return GateRun(*baseline, RunFromReportTexts(reports, args.out_dir),
                 args.out_dir, args.check);
}

}  // namespace memprof
