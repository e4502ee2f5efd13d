// The hook's share of a training step: the same gpt-tiny run with the hook
// (`memprof profile`) and without it (`--no-hook`), as separate processes in
// alternation, so drift on a noisy machine hits both alike. Prints the
// median steady-state step time of each and their ratio. Target: <= 1.01.
//
//   step_overhead_bench [--rounds 10] [--steps 40] [--config FILE]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "profiler/base/statistics.h"
#include "profiler/report/rank_report.h"

namespace {

namespace fs = std::filesystem;

// Steady-state step seconds of one run, or exits on failure.
std::vector<double> RunOnce(const std::string& config, int steps, bool hook,
                            const fs::path& out) {
  std::string command = std::string(MEMPROF_BINARY) + " profile --config " +
                        config + " --steps " + std::to_string(steps) +
                        " --out " + out.string() + (hook ? "" : " --no-hook") +
                        " > /dev/null";
  if (std::system(command.c_str()) != 0) {
    std::cerr << "step_overhead_bench: failed: " << command << "\n";
    std::exit(1);
  }
  const memprof::RankReport report =
      memprof::ReadRankReport(memprof::RankReportPath(out.string(), 0));
  std::vector<double> seconds;
  for (const memprof::StepReport& step : report.steps) {
    if (step.steady_state) seconds.push_back(step.seconds);
  }
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 10, steps = 40;
  std::string config = MEMPROF_SOURCE_DIR "/configs/gpt-tiny.ini";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--rounds") {
      rounds = std::atoi(argv[i + 1]);
    } else if (flag == "--steps") {
      steps = std::atoi(argv[i + 1]);
    } else if (flag == "--config") {
      config = argv[i + 1];
    } else {
      std::cerr << "usage: step_overhead_bench [--rounds N] [--steps N] "
                   "[--config FILE]\n";
      return 2;
    }
  }
  const fs::path dir = fs::temp_directory_path() /
                       ("memprof-step-bench-" + std::to_string(::getpid()));
  std::vector<double> with_hook, without_hook, round_ratios;
  for (int round = 0; round < rounds; ++round) {
    // Alternate which goes first, so neither always runs on a warm cache.
    const bool hook_first = round % 2 == 0;
    std::vector<double> a = RunOnce(config, steps, hook_first, dir / "a");
    std::vector<double> b = RunOnce(config, steps, !hook_first, dir / "b");
    std::vector<double>& on = hook_first ? a : b;
    std::vector<double>& off = hook_first ? b : a;
    round_ratios.push_back(memprof::Median(on) / memprof::Median(off));
    with_hook.insert(with_hook.end(), on.begin(), on.end());
    without_hook.insert(without_hook.end(), off.begin(), off.end());
  }
  fs::remove_all(dir);
  const double on = memprof::Median(with_hook),
               off = memprof::Median(without_hook);
  std::printf("config %s, %d rounds x %d steps (steady state only)\n",
              config.c_str(), rounds, steps);
  std::printf("median step: hook %.3f ms, no hook %.3f ms\n", 1e3 * on,
              1e3 * off);
  std::printf(
      "ratio hook / no hook: %.4f (median of per-round ratios %.4f, "
      "min %.4f, max %.4f); target <= 1.01\n",
      on / off, memprof::Median(round_ratios),
      *std::min_element(round_ratios.begin(), round_ratios.end()),
      *std::max_element(round_ratios.begin(), round_ratios.end()));
  return 0;
}
