#include "profiler/profile_command.h"

#include <filesystem>
#include <iostream>

#include "profiler/atomic_file.h"
#include "profiler/errors.h"
#include "profiler/trainer.h"

namespace memprof {
namespace fs = std::filesystem;

namespace {

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

}  // namespace

int RunProfileCommand(const ProfileArgs& args) {
  if (args.config.ddp.world_size != 1) {
    throw InputError("--world-size: only 1 rank is supported so far");
  }
  PrepareOutDir(args.out_dir);
  const RankReport report = RunRank(args.config, RankContext{});
  const std::string path =
      (fs::path(args.out_dir) /
       ("rank-" + std::to_string(report.context.rank) + ".json"))
          .string();
  try {
    WriteFileAtomically(path, ToJson(report).dump(2) + "\n");
  } catch (const std::runtime_error& e) {
    throw RunFailure(e.what());
  }
  std::cout << FormatTable(report) << "report: " << path << "\n";
  return kExitOk;
}

}  // namespace memprof
