#include "profiler/report/summary.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "profiler/base/category.h"
#include "profiler/base/human_bytes.h"
#include "profiler/predict/prediction.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

std::string Cell(const char* format, const std::string& text) {
  char cell[64];
  std::snprintf(cell, sizeof cell, format, text.c_str());
  return cell;
}

// measured - predicted, and that as a percentage of the prediction.
Json ErrorJson(int64_t measured, int64_t predicted) {
  const int64_t error = measured - predicted;
  Json percent = nullptr;  // undefined for a prediction of 0 bytes
  if (predicted != 0) {
    percent =
        100.0 * static_cast<double>(error) / static_cast<double>(predicted);
  } else if (error == 0) {
    percent = 0.0;
  }
  return Json{{"bytes", error}, {"percent", percent}};
}

// The rank whose error is largest in magnitude.
const Json& WorstError(const Json& errors) {
  const Json* worst = &errors[0];
  for (const Json& e : errors) {
    if (std::abs(e["bytes"].get<int64_t>()) >
        std::abs((*worst)["bytes"].get<int64_t>())) {
      worst = &e;
    }
  }
  return *worst;
}

}  // namespace

std::string FormatError(const Json& error) {
  const int64_t bytes = error["bytes"].get<int64_t>();
  std::string text = SignedBytes(bytes);
  if (!error["percent"].is_null()) {
    char percent[32];
    std::snprintf(percent, sizeof percent, " (%+.2f%%)",
                  error["percent"].get<double>());
    text += percent;
  }
  return text;
}

std::string Words(std::string name) {
  for (char& c : name) {
    if (c == '_') c = ' ';
  }
  return name;
}

std::string RedundancySentence(const std::string& category, const Json& entry,
                               int64_t world_size) {
  std::string line = Words(category) + ", " +
                     HumanBytes(entry["bytes"].get<int64_t>()) + " per rank";
  if (world_size == 1) {
    line += ": one rank, nothing held in duplicate";
  } else if (entry["identical_across_ranks"].get<bool>()) {
    line += ", bit-identical on all " + std::to_string(world_size) +
            " ranks: " + HumanBytes(entry["redundant_bytes"].get<int64_t>()) +
            " held in duplicate";
  } else {
    line += ", NOT identical across the " + std::to_string(world_size) +
            " ranks (their hashes differ)";
  }
  return line;
}

Json BuildSummary(const std::vector<Json>& ranks) {
  Json per_rank = Json::array();
  Json categories = Json::object();
  for (Category c : kAllCategories) {
    const std::string name(CategoryName(c));
    Json measured = Json::array(), peak = Json::array(),
         predicted = Json::array(), error = Json::array();
    for (const Json& rank : ranks) {
      const Json& entry = rank["categories"][name];
      measured.push_back(entry["measured_bytes"]);
      peak.push_back(entry["peak_bytes"]);
      predicted.push_back(entry["predicted_bytes"]);
      error.push_back(ErrorJson(entry[ComparedFigure(c)].get<int64_t>(),
                                entry["predicted_bytes"].get<int64_t>()));
    }
    categories[name] = Json{{"measured_bytes", measured},
                            {"peak_bytes", peak},
                            {"predicted_bytes", predicted},
                            {"compared_with", ComparedFigure(c)},
                            {"error", error}};
  }
  for (const Json& rank : ranks) {
    const Json& peak = rank["peak"];
    per_rank.push_back(
        Json{{"rank", rank["context"]["rank"]},
             {"hostname", rank["context"]["hostname"]},
             {"parameters", rank["parameters"]},
             {"micro_batch", rank["micro_batch"]},
             {"peak", peak},
             {"peak_error",
              ErrorJson(peak["total_bytes"].get<int64_t>(),
                        peak["predicted"]["total_bytes"].get<int64_t>())},
             {"steps", rank["steps"]},
             {"redundancy", rank["redundancy"]}});
  }
  const Json& first = ranks.front();
  return Json{
      {"schema", kSummarySchema},
      {"context",
       {{"world_size", ranks.size()},
        {"device", first["context"]["device"]},
        {"backend", first["context"]["backend"]},
        {"libtorch_version", first["context"]["libtorch_version"]},
        {"git_sha", first["context"]["git_sha"]},
        {"config", first["context"]["config"]}}},
      {"parameters", first["parameters"]},
      {"categories", categories},
      {"ranks", per_rank},
  };
}

std::string FormatStepTimes(const Json& rank) {
  std::vector<double> seconds;
  for (const Json& step : rank["steps"]) {
    if (step["steady_state"].get<bool>()) {
      seconds.push_back(step["seconds"].get<double>());
    }
  }
  std::sort(seconds.begin(), seconds.end());
  char line[160];
  std::snprintf(line, sizeof line,
                "memprof: %zu steady-state steps, median %.3f ms per step "
                "(rank 0)\n",
                seconds.size(),
                seconds.empty() ? 0.0 : 1e3 * seconds[seconds.size() / 2]);
  return line;
}

std::string FormatSummaryTable(const Json& summary) {
  const Json& ranks = summary["ranks"];
  const Json& config = summary["context"]["config"];
  const int64_t parameters = summary["parameters"].get<int64_t>();
  const size_t world = ranks.size();
  std::ostringstream out;
  out << "memprof: " << config["model"].get<std::string>() << ", " << parameters
      << " parameters, " << world << " rank" << (world == 1 ? "" : "s") << " ("
      << summary["context"]["backend"].get<std::string>() << ", "
      << summary["context"]["device"].get<std::string>() << "), micro-batch "
      << ranks[0]["micro_batch"].get<int64_t>() << " per rank, "
      << config["train"]["steps"].get<int64_t>() << " steps\n"
      << "each category's largest live bytes in a steady-state step "
         "(temporaries: at the peak), predicted and measured; error = "
         "measured - predicted (largest over ranks)\n\n";

  out << Cell("%-16s", "category") << Cell(" %11s", "predicted");
  for (const Json& rank : ranks) {
    out << Cell(" %11s", "rank " + std::to_string(rank["rank"].get<int>()));
  }
  out << Cell(" %-22s", "error") << Cell("%8s", "bytes/P") << "\n";
  for (Category c : kAllCategories) {
    const std::string name(CategoryName(c));
    const Json& entry = summary["categories"][name];
    out << Cell("%-16s", name)
        << Cell(" %11s",
                HumanBytes(entry["predicted_bytes"][0].get<int64_t>()));
    for (const Json& bytes : entry[ComparedFigure(c)]) {
      out << Cell(" %11s", HumanBytes(bytes.get<int64_t>()));
    }
    out << Cell(" %-22s", FormatError(WorstError(entry["error"])));
    const bool model_state = IsModelState(c);
    if (model_state && parameters > 0) {
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%8.2f",
                    entry["peak_bytes"][0].get<double>() /
                        static_cast<double>(parameters));
      out << ratio;
    }
    out << "\n";
  }
  Json peak_errors = Json::array();
  for (const Json& rank : ranks) peak_errors.push_back(rank["peak_error"]);
  out << Cell("%-16s", "peak (all)")
      << Cell(" %11s",
              HumanBytes(
                  ranks[0]["peak"]["predicted"]["total_bytes"].get<int64_t>()));
  for (const Json& rank : ranks) {
    out << Cell(" %11s",
                HumanBytes(rank["peak"]["total_bytes"].get<int64_t>()));
  }
  out << Cell(" %-22s", FormatError(WorstError(peak_errors)));
  out << "\n" << Cell("%-16s", "step 1 peak") << Cell(" %11s", "");
  for (const Json& rank : ranks) {
    out << Cell(" %11s",
                HumanBytes(rank["steps"][0]["peak_bytes"].get<int64_t>()));
  }
  const Json& peak = ranks[0]["peak"];
  out << "\n\nsteady-state peak (rank 0): "
      << HumanBytes(peak["total_bytes"].get<int64_t>()) << " ("
      << peak["total_bytes"].get<int64_t>() << " B) in step "
      << peak["step"].get<int>() << ", " << peak["phase"].get<std::string>()
      << "; predicted "
      << HumanBytes(peak["predicted"]["total_bytes"].get<int64_t>()) << " in "
      << peak["predicted"]["phase"].get<std::string>()
      << " (steady state: steps " << peak["first_step"].get<int>()
      << " on; step 1 creates the gradients and optimizer state, DDP "
         "rebuilds its buckets once in step 2)\n";
  for (const auto& [name, entry] : ranks[0]["redundancy"].items()) {
    out << "redundancy: " << RedundancySentence(name, entry, world) << "\n";
  }
  return out.str();
}

}  // namespace memprof
