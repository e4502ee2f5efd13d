#include "profiler/profile_command.h"

#include <filesystem>
#include <iostream>
#include <memory>

#include "profiler/atomic_file.h"
#include "profiler/ddp_engine.h"
#include "profiler/errors.h"
#include "profiler/launcher.h"
#include "profiler/rank_env.h"
#include "profiler/summary.h"
#include "profiler/trainer.h"

namespace memprof {
namespace fs = std::filesystem;

namespace {

constexpr int kPortAttempts = 3;

// Created before any training, so a bad --out fails fast with nothing run.
void PrepareOutDir(const std::string& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error || !fs::is_directory(dir)) {
    throw InputError("--out: cannot create output directory '" + dir +
                     "': " + (error ? error.message() : "not a directory") +
                     "; choose a writable path");
  }
}

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

int RunThisRank(const RunConfig& config, const std::string& out_dir,
                ProcessGroup& group) {
  const RankReport report = RunRank(config, group);
  const std::string rank_json = ToJson(report).dump(2) + "\n";
  Write(fs::path(out_dir) / ("rank-" + std::to_string(group.rank()) + ".json"),
        rank_json);
  // Rank 0 gets every report through the group, so the summary needs no
  // shared filesystem.
  const std::vector<std::string> all = group.AllGather(rank_json);
  if (group.rank() != 0) return kExitOk;
  std::vector<nlohmann::ordered_json> ranks;
  for (const std::string& text : all) {
    ranks.push_back(nlohmann::ordered_json::parse(text));
  }
  const nlohmann::ordered_json summary = BuildSummary(ranks);
  Write(fs::path(out_dir) / "summary.json", summary.dump(2) + "\n");
  std::cout << FormatSummaryTable(summary) << "reports: " << out_dir << "/\n";
  return kExitOk;
}

}  // namespace

int RunProfileCommand(const ProfileArgs& args) {
  RunConfig config = args.config;
  const std::optional<RankTopology> topology = TopologyFromEnvironment();
  if (!topology && config.ddp.world_size > 1) {
    PrepareOutDir(args.out_dir);
    return LaunchLocalRanks(static_cast<int>(config.ddp.world_size),
                            args.words);
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
  PrepareOutDir(args.out_dir);
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
  try {
    return RunThisRank(config, args.out_dir, *group);
  } catch (...) {
    group->Abandon();  // peers may be gone: do not wait for them in teardown
    throw;
  }
}

}  // namespace memprof
