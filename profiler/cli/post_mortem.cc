#include "profiler/cli/post_mortem.h"

#include <filesystem>
#include <optional>
#include <regex>
#include <stdexcept>

#include "profiler/base/atomic_file.h"
#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"
#include "profiler/capture/capture_file.h"
#include "profiler/report/rank_report.h"
#include "profiler/report/report_text.h"
#include "profiler/session/rank_run.h"

namespace memprof {
namespace {

// Why the report at `report_path` is not the one the session that wrote
// `capture_path` wrote, or recovered from it (another run's, another
// process's, unreadable); nullopt when it is, or when the capture cannot
// tell.
struct OtherReport {
  std::string why;
  // The report's session began after the capture's: the capture is the
  // leftover (of an earlier run, or copied in), the report the run's own.
  bool newer = false;
};
std::optional<OtherReport> OtherSession(const std::string& report_path,
                                        const std::string& capture_path) {
  int64_t pid = 0, begin_unix_us = 0;
  try {
    const CaptureReader capture(capture_path);
    begin_unix_us = capture.header().begin_unix_us;
    const nlohmann::ordered_json meta = nlohmann::ordered_json::parse(
        capture.header().meta_json, nullptr, false);
    if (!meta.is_object() || !meta.contains("context") ||
        !meta["context"].is_object() || !meta["context"].contains("pid") ||
        !meta["context"]["pid"].is_number_integer()) {
      return std::nullopt;
    }
    pid = meta["context"]["pid"].get<int64_t>();
  } catch (const InputError&) {
    return std::nullopt;
  }
  try {
    const RankReport report = ReadRankReport(report_path);
    const bool newer = report.context.session_start_unix_us > begin_unix_us;
    if (report.context.pid != pid) {
      return OtherReport{"written by pid " +
                             std::to_string(report.context.pid) +
                             ", the capture by pid " + std::to_string(pid),
                         newer};
    }
    if (report.context.session_start_unix_us != begin_unix_us) {
      return OtherReport{
          "of a session that began at " +
              std::to_string(report.context.session_start_unix_us) +
              " us, the capture's at " + std::to_string(begin_unix_us) + " us",
          newer};
    }
    return std::nullopt;
  } catch (const InputError& e) {
    return OtherReport{std::string("unreadable: ") + e.what()};
  }
}

}  // namespace

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
    const std::string report_path = RankReportPath(dir, rank);
    if (fs::exists(report_path)) {
      const std::optional<OtherReport> other =
          OtherSession(report_path, entry.path().string());
      if (!other) continue;  // the rank's own report
      if (other->newer) {    // a finished run's report is never replaced
        err << "memprof: rank " << rank << ": " << name << " is older than "
            << report_path << " (" << other->why
            << "): a leftover of another run, not recovered; delete it\n";
        continue;
      }
      err << "memprof: rank " << rank << ": " << report_path
          << " is not the report of " << name << " (" << other->why
          << "); recovering it from " << name << "\n";
    }
    const auto signal = killed_by.find(rank);
    try {
      const RankReport report = RecoverRankReport(
          entry.path().string(),
          signal == killed_by.end() ? kUnknownEnding : signal->second);
      WriteFileAtomically(report_path, ToJson(report).dump(2) + "\n");
      const PostMortemFigures& p = *report.post_mortem;
      err << "memprof: rank " << rank << " " << EndingOf(p.killed_by)
          << ": recovered " << report_path << " from " << name << ": "
          << HumanBytes(Sum(p.live_bytes)) << " live at its last recorded "
          << "event (" << LastMomentOf(report) << "), highest live total "
          << HumanBytes(report.run_peak.total_bytes)
          << (p.cut_short
                  ? "; " + name +
                        " was cut short: these are the "
                        "figures of its " +
                        std::to_string(p.records) + " records before the cut"
                  : "")
          << "\n";
      ++recovered;
    } catch (const std::runtime_error& e) {  // InputError included
      err << "memprof: rank " << rank << ": cannot recover from " << name
          << ": " << e.what() << "\n";
    }
  }
  return recovered;
}

}  // namespace memprof
