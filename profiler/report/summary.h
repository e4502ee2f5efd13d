// The summary of a run: every rank's figures side by side, built from the
// rank reports' JSON alone (so it can be rebuilt from files).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace memprof {

inline constexpr const char* kSummarySchema = "memprof.summary/1";

// `ranks` are rank reports (memprof.rank/1), in rank order.
nlohmann::ordered_json BuildSummary(
    const std::vector<nlohmann::ordered_json>& ranks);

// An error object {"bytes", "percent"} as "+1.00 KiB (+0.52%)"; no
// percentage when it is null (a prediction of 0).
std::string FormatError(const nlohmann::ordered_json& error);

// A category or phase name for a sentence: "optimizer_state" ->
// "optimizer state".
std::string Words(std::string name);

// "optimizer state, 86.6 KiB per rank, bit-identical on all 2 ranks:
// 86.6 KiB held in duplicate", from a rank report's redundancy.<category>.
std::string RedundancySentence(const std::string& category,
                               const nlohmann::ordered_json& entry,
                               int64_t world_size);

// One line: the steady-state steps' median time of a rank report (the
// whole output of a --no-hook run).
std::string FormatStepTimes(const nlohmann::ordered_json& rank);

// One row per category, one column per rank, then the peak and the
// redundancy audit in words.
std::string FormatSummaryTable(const nlohmann::ordered_json& summary);

}  // namespace memprof
