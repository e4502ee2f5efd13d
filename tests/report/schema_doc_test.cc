// reports/SCHEMA.md against the struct it documents: every member the
// rank-report writer (ToJson(RankReport)) emits is named in the
// "rank-<r>.json" section's tables, and every name in those tables is
// emitted. Names are compared by their dotted components ("context.rank"
// is "context" and "rank"; "mlp.input / hidden" names "mlp", "input",
// "hidden").
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "profiler/report/rank_report.h"
#include "tests/text_file.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

const std::string kSchema = MEMPROF_SOURCE_DIR "/reports/SCHEMA.md";
const std::string kFixture =
    MEMPROF_SOURCE_DIR "/tests/data/run-mlp-tiny-ws2/rank-0.json";

// The keys of every object in `node`, at any depth, except the category
// names of breakdowns (documented once, in "Categories").
void CollectKeys(const Json& node, std::set<std::string>& keys) {
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      if (!CategoryFromName(key)) keys.insert(key);
      CollectKeys(value, keys);
    }
  } else if (node.is_array()) {
    for (const Json& item : node) CollectKeys(item, keys);
  }
}

// What the writer emits, with every optional part present: an
// out-of-memory object, the CUDA replay, a GPU run's section (with a
// self-check, a moment and the allocator's refusal), ZeRO-1's partition,
// activation checkpointing's figures, a named scope and each model's config
// section (a program's too).
std::set<std::string> EmittedKeys() {
  RankReport report = ReadRankReport(kFixture);
  report.out_of_memory = OutOfMemoryFigures{};
  report.cuda_replay = CudaReplay{};
  report.cuda_run = CudaRun{};
  report.cuda_run->checks.push_back(CudaSelfCheck{});
  report.cuda_run->moments.push_back(CudaMoment{"cuda_context", 1, 0, 0});
  report.cuda_run->out_of_memory = true;
  report.zero = ZeroFigures{};
  report.checkpointing = CheckpointingFigures{};
  report.scopes.push_back(ScopeReport{"h.0", 0, 0, 0});
  report.post_mortem = PostMortemFigures{};
  std::set<std::string> keys;
  for (const char* model : {"mlp", "gpt", "llama", "resnet", "program"}) {
    report.context.config.model = model;
    CollectKeys(ToJson(report), keys);
  }
  return keys;
}

// The components of every `name` in the first column of the tables of the
// rank-report section.
std::set<std::string> DocumentedKeys() {
  const std::string text = ReadFile(kSchema);
  const size_t begin = text.find("\n## rank-<r>.json");
  const size_t end = text.find("\n## ", begin + 1);
  EXPECT_NE(begin, std::string::npos) << kSchema;
  std::istringstream section(text.substr(begin, end - begin));
  std::set<std::string> keys;
  static const std::regex kName("`([a-z0-9_.<>\\[\\]]+)`");
  std::string line;
  while (std::getline(section, line)) {
    if (line.rfind("| `", 0) != 0) continue;
    const std::string cell = line.substr(1, line.find(" |", 1));
    for (std::sregex_iterator it(cell.begin(), cell.end(), kName), last;
         it != last; ++it) {
      std::istringstream parts((*it)[1].str());
      std::string part;
      while (std::getline(parts, part, '.')) {
        if (part.empty() || part[0] == '<' || CategoryFromName(part)) continue;
        if (part.size() > 2 && part.substr(part.size() - 2) == "[]") {
          part.resize(part.size() - 2);
        }
        keys.insert(part);
      }
    }
  }
  return keys;
}

TEST(SchemaDoc, EveryEmittedMemberIsDocumented) {
  const std::set<std::string> documented = DocumentedKeys();
  ASSERT_GT(documented.size(), 50u);
  for (const std::string& key : EmittedKeys()) {
    EXPECT_TRUE(documented.count(key))
        << "'" << key << "' is written to rank-<r>.json but not documented "
        << "in the rank-<r>.json section of reports/SCHEMA.md";
  }
}

TEST(SchemaDoc, EveryDocumentedMemberIsEmitted) {
  const std::set<std::string> emitted = EmittedKeys();
  for (const std::string& key : DocumentedKeys()) {
    EXPECT_TRUE(emitted.count(key))
        << "reports/SCHEMA.md documents '" << key
        << "' in rank-<r>.json, but the writer does not emit it";
  }
}

}  // namespace
}  // namespace memprof
