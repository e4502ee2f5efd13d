#include "profiler/cli/profile_command.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <regex>
#include <set>

#include <torch/version.h>

#include "models/config_validation.h"
#include "profiler/base/atomic_file.h"
#include "profiler/base/effective_config.h"
#include "profiler/base/errors.h"
#include "profiler/base/json_reader.h"
#include "profiler/base/rank_env.h"
#include "profiler/capture/capture_file.h"
#include "profiler/cli/launcher.h"
#include "profiler/cli/local_world_size.h"
#include "profiler/cli/progress_reporter.h"
#include "profiler/gate/gate_run.h"
#include "profiler/gate/regression_check.h"
#include "profiler/report/rank_report.h"
#include "profiler/report/report_text.h"
#include "profiler/report/run_files.h"
#include "profiler/report/run_reports.h"
#include "profiler/report/summary.h"
#include "profiler/session/run_outputs.h"
#include "profiler/train/ddp_engine.h"
#include "profiler/train/trainer.h"

namespace memprof {
namespace fs = std::filesystem;

void CheckDevices(const RunConfig& config, int local_ranks,
                  const CudaDeviceStatus& cuda) {
  if (config.train.device != "cuda") return;
  if (!cuda.available) {
    throw InputError("--train.device cuda: no GPU to train on (" + cuda.status +
                     "); use --train.device cpu");
  }
  if (DdpBackend(config) == "nccl" && local_ranks > cuda.devices) {
    throw InputError(
        "--ddp.backend nccl: " + std::to_string(local_ranks) +
        " ranks on this machine but " + std::to_string(cuda.devices) +
        " GPU(s), and NCCL runs one rank per GPU; use --ddp.backend gloo "
        "(ranks share the GPUs, reducing through host memory) or at most " +
        std::to_string(cuda.devices) + " ranks per machine");
  }
}

namespace {

// The GPU of local rank `local_rank`: its own, or shared round-robin
// under Gloo (CheckDevices refused NCCL beyond one rank per GPU).
GroupBackend BackendOf(const RunConfig& config, int local_rank) {
  GroupBackend backend;
  backend.backend = DdpBackend(config);
  backend.cuda = config.train.device == "cuda";
  if (!backend.cuda) return backend;
  backend.device = local_rank % ProbeCudaDevice().devices;
  return backend;
}

// Returns every rank's report (rank 0) or nothing (other ranks).
std::vector<RankReport> RunThisRank(const RunConfig& config,
                                    const std::string& out_dir,
                                    ProcessGroup& group,
                                    const GroupBackend& backend, bool no_hook,
                                    int64_t memory_limit_bytes,
                                    const CaptureOutputs& outputs, bool quiet) {
  // Note [Progress line]: rank 0's, unless --quiet.
  std::optional<ProgressReporter> progress;
  if (group.rank() == 0 && !quiet) {
    progress.emplace(config.train.steps, /*memory=*/!no_hook);
  }
  const RankRun run = RunRank(config, group, memory_limit_bytes, backend.device,
                              /*hook=*/!no_hook, outputs);
  if (progress) {
    int64_t done = 0;
    for (const StepRecord& step : run.step_records) done += step.completed;
    progress->Finish(done, no_hook ? -1 : run.analysis.run_peak.total_bytes);
  }
  if (!run.hooked && !no_hook) {
    throw RunFailure("the allocator hook is not installed");  // a bug
  }
  RunOutputOptions output;
  output.out_dir = out_dir;
  output.no_hook = no_hook;
  if (group.size() > 1) {
    output.all_gather = [&group](const std::string& value) {
      return group.AllGather(value);
    };
  }
  return WriteRunOutputs(run, output);
}

// Note [A run owns its --out]
// A local run (one rank, or the launcher of N ranks) holds an exclusive
// flock on DIR/.memprof.lock from before training until the process ends
// (released by the kernel however it ends): a second run into DIR is
// refused with exit 2 instead of mixing its files in. Holding the lock, it
// removes what an earlier run left there (rank-<r>.json, capture-<r>.bin,
// snapshot-<r>.json or .pickle, summary.json, report.md, report.html,
// trace.json, and the temporaries of any of them, NAME.tmp.<pid>, that a
// process killed while writing left), so that a 1-rank run after a 2-rank
// one does not leave rank-1.json for `memprof report` to read, and says so
// on standard error, naming them (-q too: files were lost). Ranks started by
// torchrun, srun or mpirun share one --out per machine and are neither locked
// nor cleaned here.
void ClaimOutputDirectory(const std::string& dir) {
  const fs::path lock_path = fs::path(dir) / ".memprof.lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw InputError("--out " + dir + ": cannot create " + lock_path.string() +
                     ": " + std::strerror(errno) +
                     "; choose a directory you can write");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    throw InputError(
        "--out " + dir + ": another memprof run is writing there (it holds " +
        lock_path.string() + "); wait for it to end or choose another --out");
  }
  // Kept open, so locked, until the process ends.
  static const std::regex kTemporary("(.*)\\.tmp\\.[0-9]+");
  std::set<std::string> replaced;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    std::smatch written;
    if (std::regex_match(name, written, kTemporary)) name = written[1].str();
    if (!IsRunFileName(name)) continue;
    fs::remove(entry.path());
    replaced.insert(entry.path().filename().string());
  }
  if (replaced.empty()) return;
  std::string names;
  for (const std::string& name : replaced) {
    names += (names.empty() ? "" : ", ") + name;
  }
  std::cerr << "memprof: --out " << dir << ": removed an earlier run's "
            << replaced.size() << (replaced.size() == 1 ? " file" : " files")
            << " (" << names << "); give each run its own --out to keep them\n";
}

// Note [Interrupted run]
// A job of one that ^C or SIGTERM stops dies by the signal, as before, its
// capture left in --out; first it says, on standard error, how to get the
// reports from what it recorded. The handler only writes a message made
// before it was installed, then raises the signal again with its default
// action (async-signal-safe). The local launcher forwards the stop to its
// ranks itself (profiler/cli/stop_signals.h).
char g_interrupted[1024];
size_t g_interrupted_bytes = 0;

extern "C" void SayHowToRecoverAndStop(int signal) {
  ssize_t ignored = ::write(STDERR_FILENO, g_interrupted, g_interrupted_bytes);
  (void)ignored;
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

void SayHowToRecoverWhenStopped(const std::string& dir) {
  const std::string message =
      "\nmemprof: stopped by a signal; 'memprof report --run " + dir +
      "' writes the reports from what the run recorded\n";
  g_interrupted_bytes = std::min(message.size(), sizeof g_interrupted);
  std::memcpy(g_interrupted, message.data(), g_interrupted_bytes);
  for (int signal : {SIGINT, SIGTERM}) {
    struct sigaction action {};
    action.sa_handler = SayHowToRecoverAndStop;
    ::sigemptyset(&action.sa_mask);
    ::sigaction(signal, &action, nullptr);
  }
}

}  // namespace

int RunProfileCommand(const ProfileArgs& args) {
  RunConfig config = args.config;
  const std::optional<RankTopology> topology = TopologyFromEnvironment();
  if (topology) {
    // The launcher's world size is the truth; batch arithmetic follows it.
    config.ddp.world_size = topology->world_size;
    if (!topology->launched_by_memprof) {
      config.origins["ddp.world_size"] = "WORLD_SIZE";
    }
    try {
      ValidateRunConfig(config);
    } catch (const ConfigError& e) {
      throw InputError("WORLD_SIZE=" + std::to_string(topology->world_size) +
                       ": " + e.what());
    }
  }
  // The process that speaks for the run says first what it runs.
  if (!topology || (topology->rank == 0 && !topology->launched_by_memprof)) {
    std::cout << FormatEffectiveConfig(config);
  }
  // --check runs where summary.json is written (a job of one, rank 0 of a
  // job started by torchrun/srun/mpirun) or in the local launcher once every
  // rank succeeded; the ranks the launcher starts leave it to the launcher.
  // The baseline is read first, so a bad one fails before any training.
  std::optional<Baseline> baseline;
  const bool checker =
      !topology || (topology->rank == 0 && !topology->launched_by_memprof);
  if (!args.check.baseline_path.empty() && checker) {
    PrepareCheckOutputs(args.check, args.out_dir);
    baseline = LoadBaseline(args.check.baseline_path);
    // The run's context is known before it trains: a baseline it could
    // not be gated against is refused now, not after the run.
    RunContext now;
    now.world_size = topology ? topology->world_size
                              : static_cast<int>(config.ddp.world_size);
    now.device = config.train.device;
    now.backend = DdpBackend(config);
    now.libtorch_version = TORCH_VERSION;
    now.dtype = config.train.dtype;
    RunConfig effective = config;
    effective.ddp.world_size = now.world_size;
    now.config = ToJson(effective);
    RequireComparableContext(*baseline, args.check.baseline_path, now,
                             args.out_dir, args.check.allow_config_change);
  }
  // Under an external launcher, local ranks 0..LOCAL_RANK are here at least.
  CheckDevices(config,
               topology ? topology->local_rank + 1
                        : static_cast<int>(config.ddp.world_size),
               ProbeCudaDevice());
  if (!topology) {
    CheckLocalWorldSize(config);  // Note [Local world size]
    if (!args.skip_memory_check) {
      // Note [Local memory]: before any model is built, at every world size.
      CheckLocalMemory(config, args.memory_limit_bytes, AvailableMemoryBytes());
    }
  }
  if (!topology && config.ddp.world_size > 1) {
    CreateOutputDirectory("--out", args.out_dir);  // before any training
    ClaimOutputDirectory(args.out_dir);  // Note [A run owns its --out]
    const int code =
        LaunchLocalRanks(static_cast<int>(config.ddp.world_size), args.words,
                         args.out_dir, config.ddp.timeout_s, args.quiet);
    if (code != kExitOk || !baseline) return code;
    return GateRun(*baseline, LoadRun(args.out_dir), args.out_dir, args.check);
  }
  CreateOutputDirectory("--out", args.out_dir);  // before any training
  if (!topology) {
    ClaimOutputDirectory(args.out_dir);
    SayHowToRecoverWhenStopped(args.out_dir);  // Note [Interrupted run]
  }
  const GroupBackend backend =
      BackendOf(config, topology ? topology->local_rank : 0);
  // A job of one serves its own store on 127.0.0.1 at a free port.
  std::unique_ptr<ProcessGroup> group;
  try {
    group = std::make_unique<ProcessGroup>(topology.value_or(RankTopology{}),
                                           config.ddp.timeout_s, backend);
  } catch (const PortBusy& e) {
    throw InputError(std::string("MASTER_PORT: rank 0 cannot serve the "
                                 "rendezvous store, ") +
                     e.what() +
                     " on this host; choose a free MASTER_PORT (or stop what "
                     "holds it)");
  } catch (const InputError&) {
    throw;  // MASTER_ADDR does not resolve
  } catch (const std::runtime_error& e) {
    throw RunFailure(e.what());
  }
  std::vector<RankReport> reports;
  try {
    CaptureOutputs outputs;
    outputs.out_dir = args.no_hook ? "" : args.out_dir;
    outputs.snapshot_format = args.snapshot_format == "pickle"
                                  ? DocumentFormat::kPickle
                                  : DocumentFormat::kJson;
    outputs.keep = args.keep;
    reports = RunThisRank(config, args.out_dir, *group, backend, args.no_hook,
                          args.memory_limit_bytes, outputs, args.quiet);
  } catch (const InputError&) {
    group->Abandon();  // peers may be gone: do not wait for them in teardown
    throw;
  } catch (const RunFailure&) {
    group->Abandon();
    throw;
  } catch (const std::exception& e) {
    // A collective failed (Note [Unanswering ranks]): name the bound, and
    // the peer that stopped answering when there is one.
    const int rank = group->rank();
    const std::string peers = group->UnansweringPeers();
    group->Abandon();
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    if (what.find("Timed out") != std::string::npos) {
      what += " (collectives wait at most --ddp.timeout_s " +
              std::to_string(config.ddp.timeout_s) + " s)";
    }
    throw RunFailure("rank " + std::to_string(rank) + ": " + what +
                     (peers.empty() ? "" : "; " + peers));
  }
  if (!baseline || reports.empty()) return kExitOk;
  return GateRun(*baseline, RunFromReports(reports, args.out_dir), args.out_dir,
                 args.check);
}

}  // namespace memprof
