#include "profiler/summary.h"

#include <cstdio>
#include <sstream>

#include "profiler/category.h"
#include "profiler/human_bytes.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

std::string Cell(const char* format, const std::string& text) {
  char cell[64];
  std::snprintf(cell, sizeof cell, format, text.c_str());
  return cell;
}

std::string CategoryWords(const std::string& name) {
  std::string words = name;
  for (char& c : words) {
    if (c == '_') c = ' ';
  }
  return words;
}

}  // namespace

Json BuildSummary(const std::vector<Json>& ranks) {
  Json per_rank = Json::array();
  Json categories = Json::object();
  for (Category c : kAllCategories) {
    const std::string name(CategoryName(c));
    Json measured = Json::array();
    Json peak = Json::array();
    for (const Json& rank : ranks) {
      measured.push_back(rank["categories"][name]["measured_bytes"]);
      peak.push_back(rank["categories"][name]["peak_bytes"]);
    }
    categories[name] = Json{{"measured_bytes", measured}, {"peak_bytes", peak}};
  }
  for (const Json& rank : ranks) {
    per_rank.push_back(Json{{"rank", rank["context"]["rank"]},
                            {"hostname", rank["context"]["hostname"]},
                            {"parameters", rank["parameters"]},
                            {"micro_batch", rank["micro_batch"]},
                            {"peak", rank["peak"]},
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
      << config["train"]["steps"].get<int64_t>() << " steps\n\n";

  out << Cell("%-16s", "category");
  for (const Json& rank : ranks) {
    out << Cell(" %12s", "rank " + std::to_string(rank["rank"].get<int>()));
  }
  out << Cell(" %8s", "bytes/P") << "\n";
  for (Category c : kAllCategories) {
    const std::string name(CategoryName(c));
    const Json& measured = summary["categories"][name]["measured_bytes"];
    out << Cell("%-16s", name);
    for (const Json& bytes : measured) {
      out << Cell(" %12s", HumanBytes(bytes.get<int64_t>()));
    }
    const bool model_state =
        c == Category::kWeights || c == Category::kGradients ||
        c == Category::kOptimizerState || c == Category::kDdpBuckets;
    if (model_state && parameters > 0) {
      char ratio[32];
      std::snprintf(
          ratio, sizeof ratio, " %8.2f",
          measured[0].get<double>() / static_cast<double>(parameters));
      out << ratio;
    }
    out << "\n";
  }
  out << Cell("%-16s", "total at peak");
  for (const Json& rank : ranks) {
    out << Cell(" %12s",
                HumanBytes(rank["peak"]["total_bytes"].get<int64_t>()));
  }
  out << "\n" << Cell("%-16s", "step 1 peak");
  for (const Json& rank : ranks) {
    out << Cell(" %12s",
                HumanBytes(rank["steps"][0]["peak_bytes"].get<int64_t>()));
  }
  const Json& peak = ranks[0]["peak"];
  out << "\n\nsteady-state peak (rank 0): "
      << HumanBytes(peak["total_bytes"].get<int64_t>()) << " ("
      << peak["total_bytes"].get<int64_t>() << " B) in step "
      << peak["step"].get<int>() << ", " << peak["phase"].get<std::string>()
      << " (steady state: steps " << peak["first_step"].get<int>()
      << " on; step 1 creates the gradients and optimizer state, DDP "
         "rebuilds its buckets once in step 2)\n";
  for (const auto& [name, entry] : ranks[0]["redundancy"].items()) {
    out << "redundancy: " << CategoryWords(name) << ", "
        << HumanBytes(entry["bytes"].get<int64_t>()) << " per rank, ";
    if (entry["identical_across_ranks"].get<bool>()) {
      out << "bit-identical on all " << world << " rank"
          << (world == 1 ? "" : "s") << ": "
          << HumanBytes(entry["redundant_bytes"].get<int64_t>())
          << " held in duplicate\n";
    } else {
      out << "NOT identical across ranks\n";
    }
  }
  return out.str();
}

}  // namespace memprof
