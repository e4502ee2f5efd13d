#include "profiler/report/gpu_tables.h"

#include <cstdio>
#include <string>

#include "profiler/base/human_bytes.h"

namespace memprof {
namespace {

std::vector<const RankReport*> GpuRanks(const RunView& view) {
  std::vector<const RankReport*> ranks;
  for (const RankReport& rank : view.ranks) {
    if (rank.cuda_run) ranks.push_back(&rank);
  }
  return ranks;
}

std::string RankName(const RankReport& rank) {
  return "rank " + std::to_string(rank.context.rank);
}

// "+3.1%" of measured, or "" when there is nothing to compare.
std::string Percent(int64_t predicted, int64_t measured) {
  if (measured == 0) return "";
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%",
                100.0 * static_cast<double>(predicted - measured) /
                    static_cast<double>(measured));
  return text;
}

ReportTable AllocatorTable(const std::vector<const RankReport*>& ranks) {
  const CudaRun& first = *ranks.front()->cuda_run;
  ReportTable table;
  table.id = "gpu-allocator";
  table.title = "On the GPU: the caching allocator";
  table.caption =
      "The CUDA caching allocator's figures at the steady state's allocated "
      "peak, as memprof follows them from the allocator's own trace, "
      "predicted (the size table replayed through the allocator's rules) "
      "and measured. The categories count each tensor's request rounded to "
      "512 B; allocated counts whole blocks, reserved the segments, "
      "inactive split the free bytes stranded in partly used segments.";
  table.header = {"figure", "predicted"};
  for (const RankReport* rank : ranks) table.header.push_back(RankName(*rank));
  table.numeric.assign(table.header.size(), true);
  table.numeric[0] = false;
  const auto row = [&](const std::string& name, const std::string& predicted,
                       auto measured) {
    std::vector<std::string> cells = {name, predicted};
    for (const RankReport* rank : ranks) cells.push_back(measured(*rank));
    table.rows.push_back(std::move(cells));
  };
  const CudaAllocatorFigures& p = first.predicted_at_peak;
  row("categories (rounded requests)",
      HumanBytes(ranks.front()->predicted_peak.total_bytes),
      [](const RankReport& r) { return HumanBytes(r.peak.total_bytes); });
  row("requested", HumanBytes(p.requested), [](const RankReport& r) {
    return HumanBytes(r.cuda_run->at_allocated_peak.requested);
  });
  row("allocated", HumanBytes(p.allocated), [](const RankReport& r) {
    return HumanBytes(r.cuda_run->at_allocated_peak.allocated);
  });
  row("reserved", HumanBytes(p.reserved), [](const RankReport& r) {
    return HumanBytes(r.cuda_run->at_allocated_peak.reserved);
  });
  row("inactive split", HumanBytes(p.inactive_split), [](const RankReport& r) {
    return HumanBytes(r.cuda_run->at_allocated_peak.inactive_split);
  });
  row("most reserved", HumanBytes(first.predicted_peak_reserved),
      [](const RankReport& r) {
        return HumanBytes(r.cuda_run->peak_reserved);
      });
  row("allocator's own peaks (allocated / reserved)", "",
      [](const RankReport& r) {
        return HumanBytes(r.cuda_run->allocator_peak_allocated) + " / " +
               HumanBytes(r.cuda_run->allocator_peak_reserved);
      });
  row("self-check (phase marks agreeing)", "", [](const RankReport& r) {
    const CudaRun& c = *r.cuda_run;
    const int64_t n = static_cast<int64_t>(c.checks.size());
    return std::to_string(n - c.FailedChecks()) + " of " + std::to_string(n);
  });
  for (const RankReport* rank : ranks) {
    const CudaRun& c = *rank->cuda_run;
    std::string note = RankName(*rank) + " (" + c.device_name + ", GPU " +
                       std::to_string(c.device) + "): reserved peak " +
                       HumanBytes(c.peak_reserved) + ", predicted " +
                       HumanBytes(c.predicted_peak_reserved) + " (" +
                       Percent(c.predicted_peak_reserved, c.peak_reserved) +
                       "); ";
    note +=
        c.PeaksMatch() && c.FailedChecks() == 0 && c.mismatches == 0
            ? "memprof's figures equal the allocator's own at every "
              "check and at the peaks."
            : "memprof's figures DIFFER from the allocator's (" +
                  std::to_string(c.FailedChecks()) + " phase marks, peaks " +
                  (c.PeaksMatch() ? "equal" : "different") + ", " +
                  std::to_string(c.mismatches) + " trace entries not followed" +
                  (c.first_mismatch.empty() ? "" : ": " + c.first_mismatch) +
                  ").";
    if (c.before_session_allocated > 0) {
      note +=
          " Allocated before the session (cuBLAS workspaces, in no "
          "category): " +
          HumanBytes(c.before_session_allocated) + ".";
    }
    table.notes.push_back(note);
  }
  return table;
}

ReportTable OutsideTable(const std::vector<const RankReport*>& ranks) {
  ReportTable table;
  table.id = "gpu-outside";
  table.title = "On the GPU: memory outside the allocator";
  table.caption =
      "The device's used memory (cudaMemGetInfo) minus what this process's "
      "allocator reserved, at each moment: the CUDA context, the libraries' "
      "handles and workspaces outside the allocator, NCCL's buffers, and "
      "any other process on the GPU.";
  table.header = {"moment"};
  for (const RankReport* rank : ranks) table.header.push_back(RankName(*rank));
  table.numeric.assign(table.header.size(), true);
  table.numeric[0] = false;
  const std::vector<CudaMoment>& moments = ranks.front()->cuda_run->moments;
  for (size_t i = 0; i < moments.size(); ++i) {
    std::vector<std::string> row = {moments[i].moment};
    for (const RankReport* rank : ranks) {
      const std::vector<CudaMoment>& own = rank->cuda_run->moments;
      row.push_back(i < own.size() && own[i].moment == moments[i].moment
                        ? HumanBytes(own[i].outside())
                        : "");
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

}  // namespace

std::vector<ReportTable> GpuTables(const RunView& view) {
  const std::vector<const RankReport*> ranks = GpuRanks(view);
  if (ranks.empty()) return {};
  return {AllocatorTable(ranks), OutsideTable(ranks)};
}

}  // namespace memprof
