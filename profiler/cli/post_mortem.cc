#include "profiler/cli/post_mortem.h"

#include <filesystem>
#include <regex>
#include <stdexcept>

#include "profiler/base/atomic_file.h"
#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"
#include "profiler/capture/capture_file.h"
#include "profiler/report/rank_report.h"
#include "profiler/train/rank_run.h"

namespace memprof {

int RecoverKilledRanks(const std::string& dir,
                       const std::map<int, std::string>& killed_by,
                       std::ostream& err) {
  namespace fs = std::filesystem;
  static const std::regex kCapture("capture-(0|[1-9][0-9]{0,5})\\.bin");
  std::error_code error;
  int recovered = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    std::smatch match;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, match, kCapture)) continue;
    const int rank = std::stoi(match[1].str());
    if (fs::exists(RankReportPath(dir, rank))) continue;
    const auto signal = killed_by.find(rank);
    try {
      const RankReport report = RecoverRankReport(
          entry.path().string(),
          signal == killed_by.end() ? "unknown" : signal->second);
      WriteFileAtomically(RankReportPath(dir, rank),
                          ToJson(report).dump(2) + "\n");
      const PostMortemFigures& p = *report.post_mortem;
      err << "memprof: rank " << rank << " killed (" << p.killed_by
          << "): recovered " << RankReportPath(dir, rank) << " from " << name
          << ": " << HumanBytes(Sum(p.live_bytes))
          << " live at its last recorded event (step " << p.step << ", "
          << PhaseName(p.phase) << "), highest live total "
          << HumanBytes(report.run_peak.total_bytes) << "\n";
      ++recovered;
    } catch (const std::runtime_error& e) {  // InputError included
      err << "memprof: rank " << rank << ": cannot recover from " << name
          << ": " << e.what() << "\n";
    }
  }
  return recovered;
}

}  // namespace memprof
