#include "profiler/report/report_text.h"

#include <cstdio>
#include <set>

#include "profiler/base/category.h"
#include "profiler/base/human_bytes.h"
#include "profiler/predict/prediction.h"
#include "profiler/report/summary.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

std::string Plural(int64_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::string Bytes(const Json& value) {
  return HumanBytes(value.get<int64_t>());
}

std::string Scalar(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_float()) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", value.get<double>());
    return text;
  }
  return value.dump();
}

std::string RankHeader(const Json& rank) {
  return "rank " + std::to_string(rank["context"]["rank"].get<int>());
}

// "4", or "4 configured, stopped in step 2 (out of memory)".
std::string StepsRun(const Json& rank, int64_t configured) {
  const Json& steps = rank["steps"];
  const Json& last = steps.back();
  if (last.value("completed", true)) return std::to_string(configured);
  return std::to_string(configured) + " configured, stopped in step " +
         std::to_string(last["step"].get<int>()) + " (out of memory)";
}

std::vector<std::pair<std::string, std::string>> Context(const RunView& view) {
  const Json& first = view.ranks.front();
  const Json& context = first["context"];
  const Json& config = context["config"];
  const std::string model = config["model"].get<std::string>();
  std::string shape;
  if (config.contains(model) && config[model].is_object()) {
    for (const auto& [key, value] : config[model].items()) {
      shape += (shape.empty() ? "" : ", ") + key + " " + Scalar(value);
    }
  }
  std::set<std::string> hosts;
  for (const Json& rank : view.ranks) {
    hosts.insert(rank["context"]["hostname"].get<std::string>());
  }
  std::string host_list;
  for (const std::string& host : hosts) {
    host_list += (host_list.empty() ? "" : ", ") + host;
  }
  const Json& train = config["train"];
  const Json& ddp = first.value("ddp", Json::object());
  const int64_t steady_from = first["peak"]["first_step"].get<int64_t>();
  std::vector<std::pair<std::string, std::string>> out = {
      {"config", config.value("source", std::string("(flags)"))},
      {"model", model + (shape.empty() ? "" : ": " + shape)},
      {"parameters",
       GroupedInteger(first["parameters"].get<int64_t>()) + " (predicted " +
           GroupedInteger(first["predicted_parameters"].get<int64_t>()) + ")"},
      {"ranks", std::to_string(view.world_size) + " (" +
                    context["backend"].get<std::string>() + ", " +
                    context["device"].get<std::string>() + ") on " +
                    Plural(static_cast<int64_t>(hosts.size()), "host") + ": " +
                    host_list},
      {"micro-batch",
       std::to_string(first["micro_batch"].get<int64_t>()) + " per rank"},
      {"steps", StepsRun(first, train["steps"].get<int64_t>()) +
                    "; steady state from step " + std::to_string(steady_from)},
      {"optimizer",
       train["optimizer"].get<std::string>() +
           (train.contains("dtype") ? ", " + Scalar(train["dtype"]) : "")},
  };
  if (ddp.is_object() && ddp.contains("buckets")) {
    out.emplace_back("DDP", Plural(ddp["buckets"].get<int64_t>(), "bucket") +
                                ", bucket_cap_mb " +
                                Scalar(ddp["bucket_cap_mb"]) +
                                ", gradient_as_bucket_view " +
                                Scalar(ddp["gradient_as_bucket_view"]));
  }
  out.emplace_back("libtorch", context["libtorch_version"].get<std::string>());
  out.emplace_back("git", context["git_sha"].get<std::string>());
  return out;
}

ReportTable CategoriesTable(const RunView& view) {
  const Json& summary = view.summary;
  ReportTable table;
  table.id = "categories";
  table.title = "Memory by category";
  table.caption =
      "Each category's largest live bytes in a steady-state step "
      "(temporaries: their value at the peak), predicted and measured on each "
      "rank; error = measured - predicted.";
  table.header = {"category", "predicted"};
  for (const Json& rank : view.ranks) {
    table.header.push_back(RankHeader(rank));
    table.header.push_back("error");
  }
  table.header.push_back("bytes/P");
  table.numeric.assign(table.header.size(), true);
  table.numeric[0] = false;
  const int64_t parameters = summary["parameters"].get<int64_t>();
  for (Category c : kAllCategories) {
    const std::string name(CategoryName(c));
    const Json& entry = summary["categories"][name];
    std::vector<std::string> row = {name, Bytes(entry["predicted_bytes"][0])};
    for (size_t i = 0; i < view.ranks.size(); ++i) {
      row.push_back(Bytes(entry[ComparedFigure(c)][i]));
      row.push_back(FormatError(entry["error"][i]));
    }
    const bool model_state = IsModelState(c);
    std::string ratio;
    if (model_state && parameters > 0) {
      char text[32];
      std::snprintf(text, sizeof text, "%.2f",
                    entry["peak_bytes"][0].get<double>() /
                        static_cast<double>(parameters));
      ratio = text;
    }
    row.push_back(ratio);
    table.rows.push_back(row);
  }
  std::vector<std::string> peak = {
      "peak (all)",
      Bytes(summary["ranks"][0]["peak"]["predicted"]["total_bytes"])};
  for (const Json& rank : summary["ranks"]) {
    peak.push_back(Bytes(rank["peak"]["total_bytes"]));
    peak.push_back(FormatError(rank["peak_error"]));
  }
  peak.push_back("");
  table.rows.push_back(peak);
  table.notes.push_back(
      "bytes/P: bytes per parameter on rank " +
      std::to_string(view.ranks.front()["context"]["rank"].get<int>()) +
      " (fp32 + Adam: 4 each for weights and gradients, 8 for the moments, 4 "
      "for DDP buckets unless gradient_as_bucket_view). Model state does not "
      "shrink with more ranks; only activations follow the per-rank "
      "micro-batch.");
  return table;
}

ReportTable PeakTable(const RunView& view) {
  ReportTable table;
  table.id = "peak";
  table.title = "Peak";
  const Json& first = view.ranks.front();
  const Json& predicted = first["peak"]["predicted"];
  table.caption =
      "Live bytes by category at each rank's steady-state peak "
      "(steps " +
      std::to_string(first["peak"]["first_step"].get<int>()) +
      " on), next to the predicted peak.";
  table.header = {"category", "predicted"};
  for (const Json& rank : view.ranks) table.header.push_back(RankHeader(rank));
  table.numeric.assign(table.header.size(), true);
  table.numeric[0] = false;
  for (Category c : kAllCategories) {
    const std::string name(CategoryName(c));
    std::vector<std::string> row = {name, Bytes(predicted["breakdown"][name])};
    for (const Json& rank : view.ranks) {
      row.push_back(Bytes(rank["peak"]["breakdown"][name]));
    }
    table.rows.push_back(row);
  }
  std::vector<std::string> total = {"total", Bytes(predicted["total_bytes"])};
  for (const Json& rank : view.ranks) {
    total.push_back(Bytes(rank["peak"]["total_bytes"]));
  }
  table.rows.push_back(total);
  for (const Json& rank : view.ranks) {
    const Json& peak = rank["peak"];
    table.notes.push_back(
        RankHeader(rank) + ": " + Bytes(peak["total_bytes"]) + " (" +
        GroupedInteger(peak["total_bytes"].get<int64_t>()) + " B) in step " +
        std::to_string(peak["step"].get<int>()) + ", " +
        Words(peak["phase"].get<std::string>()) + ", at event " +
        GroupedInteger(peak["seq"].get<int64_t>()) + ".");
  }
  table.notes.push_back("predicted: " + Bytes(predicted["total_bytes"]) +
                        " in " + Words(predicted["phase"].get<std::string>()) +
                        " (" + predicted["what"].get<std::string>() + ").");
  return table;
}

ReportTable StepsTable(const RunView& view) {
  ReportTable table;
  table.id = "steps";
  table.title = "Steps";
  const Json& first = view.ranks.front();
  const int steady_from = first["peak"]["first_step"].get<int>();
  table.caption =
      "The peak of every step. Step 1 creates the gradients and the optimizer "
      "state, DDP rebuilds its buckets once in step 2; the steady state starts "
      "at step " +
      std::to_string(steady_from) + ".";
  table.header = {"step", "state"};
  for (const Json& rank : view.ranks) {
    table.header.push_back(RankHeader(rank) + " peak");
    table.header.push_back("in");
    table.header.push_back("time");
  }
  table.numeric.assign(table.header.size(), true);
  table.numeric[1] = false;
  for (size_t i = 2; i < table.numeric.size(); i += 3) {
    table.numeric[i + 1] = false;
  }
  size_t steps = first["steps"].size();
  for (const Json& rank : view.ranks) {
    steps = std::min(steps, rank["steps"].size());
  }
  for (size_t s = 0; s < steps; ++s) {
    const Json& step = first["steps"][s];
    std::vector<std::string> row = {
        std::to_string(step["step"].get<int>()),
        step["steady_state"].get<bool>() ? "steady" : "warm-up"};
    for (const Json& rank : view.ranks) {
      const Json& figures = rank["steps"][s];
      char ms[32];
      std::snprintf(ms, sizeof ms, "%.1f ms",
                    1e3 * figures["seconds"].get<double>());
      row.push_back(Bytes(figures["peak_bytes"]));
      row.push_back(Words(figures["peak_phase"].get<std::string>()));
      row.push_back(ms);
    }
    table.rows.push_back(row);
  }
  const int64_t step1 = first["steps"][0]["peak_bytes"].get<int64_t>();
  const int64_t steady = first["peak"]["total_bytes"].get<int64_t>();
  table.notes.push_back(RankHeader(first) + ": step 1 peaked at " +
                        HumanBytes(step1) + ", the steady state at " +
                        HumanBytes(steady) + " (" +
                        SignedBytes(steady - step1) + ").");
  return table;
}

std::vector<std::string> Redundancy(const RunView& view) {
  std::vector<std::string> out;
  const Json& first = view.ranks.front();
  const int world = view.world_size;
  for (const auto& [name, entry] : first["redundancy"].items()) {
    out.push_back(RedundancySentence(name, entry, world));
  }
  return out;
}

bool RanOutOfMemory(const Json& rank) {
  const auto it = rank.find("out_of_memory");
  return it != rank.end() && it->is_object();
}

// Live bytes by category where each rank ran out of memory.
ReportTable OutOfMemoryTable(const RunView& view) {
  ReportTable table;
  table.id = "out-of-memory";
  table.title = "Out of memory";
  table.caption =
      "Live bytes by category when --memory-limit refused an allocation; the "
      "rank stopped there. The figures in the other tables cover the steps "
      "up to and including the one cut short.";
  table.header = {"category"};
  std::vector<const Json*> failed;
  for (const Json& rank : view.ranks) {
    if (!RanOutOfMemory(rank)) continue;
    failed.push_back(&rank["out_of_memory"]);
    table.header.push_back(RankHeader(rank));
  }
  table.numeric.assign(table.header.size(), true);
  table.numeric[0] = false;
  for (Category c : kAllCategories) {
    const std::string name(CategoryName(c));
    std::vector<std::string> row = {name};
    for (const Json* oom : failed)
      row.push_back(Bytes((*oom)["breakdown"][name]));
    table.rows.push_back(row);
  }
  std::vector<std::string> live = {"live"}, requested = {"refused allocation"},
                           limit = {"limit"};
  for (const Json* oom : failed) {
    live.push_back(Bytes((*oom)["live_bytes"]));
    requested.push_back(Bytes((*oom)["requested_bytes"]));
    limit.push_back(Bytes((*oom)["limit_bytes"]));
  }
  table.rows.push_back(live);
  table.rows.push_back(requested);
  table.rows.push_back(limit);
  return table;
}

}  // namespace

ReportText BuildReportText(const RunView& view) {
  ReportText text;
  const Json& first = view.ranks.front();
  text.title =
      "memprof: " + first["context"]["config"]["model"].get<std::string>() +
      ", " + GroupedInteger(first["parameters"].get<int64_t>()) +
      " parameters, " + Plural(view.world_size, "rank");
  text.context = Context(view);
  for (const RankFileProblem& problem : view.problems) {
    text.incomplete.push_back("rank " + std::to_string(problem.rank) +
                              " is left out: " + problem.path + ": " +
                              problem.reason);
  }
  for (const Json& rank : view.ranks) {
    if (!RanOutOfMemory(rank)) continue;
    const Json& oom = rank["out_of_memory"];
    text.out_of_memory.push_back(RankHeader(rank) + ": " +
                                 oom["message"].get<std::string>() + ". " +
                                 oom["explanation"].get<std::string>() + ".");
  }
  if (!text.out_of_memory.empty())
    text.tables.push_back(OutOfMemoryTable(view));
  for (ReportTable table :
       {CategoriesTable(view), PeakTable(view), StepsTable(view)}) {
    text.tables.push_back(std::move(table));
  }
  text.redundancy = Redundancy(view);
  return text;
}

}  // namespace memprof
