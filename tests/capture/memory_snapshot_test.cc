// snapshot-<r>.json: PyTorch's memory-snapshot layout over a hand-made
// capture, replayed the way the memory viewer replays it.
#include "profiler/capture/memory_snapshot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "profiler/base/category_palette.h"
#include "profiler/base/pickle_writer.h"
#include "profiler/base/schema_version.h"
#include "profiler/capture/lifetime_analysis.h"
#include "profiler/report/svg_chart.h"
#include "tests/capture/lifetime_block.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"
#include "tests/text_file.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

// Weights live throughout, an activation and a temporary freed in the step,
// and a second temporary reusing the first one's address.
Capture Session(uint64_t weights_address = 0x1000) {
  return WriteCapture(
      {
          Block(6, 7, 30, Category::kTemporaries, 0x3000),
          Block(4, kLive, 100, Category::kWeights, weights_address),
          Block(5, 9, 50, Category::kActivations, 0x2000),
          Block(8, kLive, 12, Category::kUnattributed, 0x3000),
      },
      {{4, Phase::kModelInit, 0},
       {5, Phase::kForward, 1},
       {8, Phase::kBackward, 1},
       {10, Phase::kIdle, 0}},
      4, 10);
}

// The snapshot SnapshotWriter writes for `capture` as the analysis reads
// it, read back as JSON (or, for pickle, the file's bytes in `pickled`).
Json MemorySnapshotJson(const Capture& capture, int rank,
                        const std::vector<CudaSegmentView>* segments = nullptr,
                        const KeepSteps& keep = {}) {
  const TempDir dir;
  const std::string path = (dir.path() / "snapshot.json").string();
  SnapshotWriter writer(path, DocumentFormat::kJson, rank, capture.begin_seq,
                        segments);
  AnalysisOptions options;
  options.keep = keep;
  const Analysis a = Analyze(capture, options, {&writer});
  writer.Finish(a.end_seq);
  return Json::parse(ReadFile(path));
}

TEST(MemorySnapshot, TraceIsInSeqOrderWithEveryFieldTheViewerReads) {
  const Json snapshot = MemorySnapshotJson(Session(), /*rank=*/3);
  EXPECT_EQ(snapshot["memprof"]["schema"], kSnapshotSchema);
  EXPECT_EQ(snapshot["memprof"]["rank"], 3);
  ASSERT_EQ(snapshot["device_traces"].size(), 1u);
  const Json& trace = snapshot["device_traces"][0];
  ASSERT_FALSE(trace.empty());
  std::vector<std::string> actions;
  int64_t last_seq = -1;
  for (const Json& e : trace) {
    for (const char* key :
         {"action", "addr", "size", "stream", "frames", "seq", "category"}) {
      EXPECT_TRUE(e.contains(key)) << key << " in " << e.dump();
    }
    EXPECT_TRUE(e["frames"].is_array());
    EXPECT_GE(e["seq"].get<int64_t>(), last_seq);
    last_seq = e["seq"].get<int64_t>();
    actions.push_back(e["action"].get<std::string>() + "@" +
                      std::to_string(e["seq"].get<int64_t>()));
  }
  std::vector<std::string> expected(kPaletteSlots, "snapshot@4");
  expected.insert(
      expected.end(),
      {"segment_alloc@4", "alloc@4", "segment_alloc@5", "alloc@5",
       "segment_alloc@6", "alloc@6", "free_requested@7", "free_completed@7",
       "segment_free@7", "segment_alloc@8", "alloc@8", "free_requested@9",
       "free_completed@9", "segment_free@9"});
  ASSERT_EQ(actions, expected);
  EXPECT_EQ(trace.at(kPaletteSlots + 5)["addr"], 0x3000);
  EXPECT_EQ(trace.at(kPaletteSlots + 5)["category"], "temporaries");
}

// The memory viewer's colouring (Note [Category colours]) replayed: the
// categories in the order they first appear in the trace, `unknown` among
// them, the i-th drawn in the viewer's i-th colour, which must be the
// report's colour of that category. The capture allocates temporaries and
// activations before the weights, which must not move the colours.
TEST(MemorySnapshot, ViewerColoursEveryCategoryAsTheReportDoes) {
  // torch/utils/viz/MemoryViz.js: schemeTableau10.
  const std::vector<std::string> viewer_palette = {
      "#4e79a7", "#f28e2c", "#e15759", "#76b7b2", "#59a14f",
      "#edc949", "#af7aa1", "#ff9da7", "#9c755f", "#bab0ab"};
  const Capture capture =
      WriteCapture({Block(1, 3, 30, Category::kTemporaries, 0x3000),
                    Block(2, kLive, 50, Category::kActivations, 0x2000),
                    Block(4, kLive, 100, Category::kWeights, 0x1000)},
                   {{1, Phase::kIdle, 0}}, 1, 5);
  const Json snapshot = MemorySnapshotJson(capture, 0);
  std::vector<std::string> named;
  for (const Json& e : snapshot["device_traces"][0]) {
    const std::string category = e["category"];
    if (std::find(named.begin(), named.end(), category) == named.end()) {
      named.push_back(category);
    }
  }
  ASSERT_LE(named.size(), viewer_palette.size());
  EXPECT_NE(std::find(named.begin(), named.end(), "unknown"), named.end());
  for (Category c : kAllCategories) {
    const std::string name(CategoryName(c));
    const auto at = std::find(named.begin(), named.end(), name);
    ASSERT_TRUE(at != named.end()) << name << " is not named to the viewer";
    EXPECT_EQ(viewer_palette[at - named.begin()], CategoryColor(c)) << name;
  }
}

TEST(MemorySnapshot, SegmentsAreTheLiveBlocksTiledExactly) {
  const Capture capture = Session();
  const Json snapshot = MemorySnapshotJson(capture, 0);
  const Analysis analysis =
      Analyze(capture, AnalysisOptions{/*one_time_through_step=*/0});
  std::map<std::string, int64_t> live;
  ASSERT_EQ(snapshot["segments"].size(), 2u);
  for (const Json& segment : snapshot["segments"]) {
    EXPECT_EQ(segment["device"], 0);
    int64_t tiled = 0;
    for (const Json& block : segment["blocks"]) {
      EXPECT_EQ(block["state"], "active_allocated");
      EXPECT_EQ(block["size"], block["requested_size"]);
      tiled += block["size"].get<int64_t>();
      live[block["category"]] += block["size"].get<int64_t>();
    }
    EXPECT_EQ(tiled, segment["total_size"].get<int64_t>());
  }
  EXPECT_EQ(snapshot["segments"][0]["address"], 0x1000);
  for (Category c : kAllCategories) {
    const std::string name(CategoryName(c));
    EXPECT_EQ(live[name], analysis.stats[Index(c)].current) << name;
  }
}

TEST(MemorySnapshot, ReplayUpToThePeakGivesThePeakBreakdown) {
  const Capture capture = Session();
  const Json snapshot = MemorySnapshotJson(capture, 0);
  const Analysis analysis =
      Analyze(capture, AnalysisOptions{/*one_time_through_step=*/0});
  std::map<std::string, int64_t> live;
  for (const Json& e : snapshot["device_traces"][0]) {
    if (e["seq"].get<int64_t>() > analysis.steady_peak.seq) break;
    if (e["action"] == "alloc") live[e["category"]] += e["size"].get<int64_t>();
    if (e["action"] == "free_completed") {
      live[e["category"]] -= e["size"].get<int64_t>();
    }
  }
  EXPECT_EQ(analysis.steady_peak.total_bytes, 180);  // seq 6: 100 + 50 + 30
  for (Category c : kAllCategories) {
    const std::string name(CategoryName(c));
    EXPECT_EQ(live[name], analysis.steady_peak.bytes[Index(c)]) << name;
  }
}

}  // namespace
}  // namespace memprof

namespace memprof {
namespace {

// Note [Snapshot of a GPU run]: the allocator's segments as the mirror
// holds them, blocks in their states, allocated ones with the category of
// the live block at their address.
TEST(MemorySnapshot, AGpuRunListsTheAllocatorsRealSegments) {
  constexpr int64_t kMiB = 1 << 20;
  CudaAllocatorModel allocator;
  allocator.SegmentAlloc(0x1000000, 2 * kMiB);
  allocator.Alloc(0x1000000, 100);           // weights (see Session())
  allocator.Alloc(0x1000000 + 512, 12);      // a temporary
  allocator.FreeRequested(0x1000000 + 512);  // pending free: still active
  allocator.SegmentAlloc(0x4000000, 20 * kMiB);
  const Capture capture = Session(/*weights_address=*/0x1000000);
  const std::vector<CudaSegmentView> segments = allocator.Segments();
  const Json snapshot = MemorySnapshotJson(capture, 0, &segments);
  ASSERT_EQ(snapshot["segments"].size(), 2u);
  const Json& small = snapshot["segments"][0];
  EXPECT_EQ(small["address"], 0x1000000);
  EXPECT_EQ(small["total_size"], 2 * kMiB);
  EXPECT_EQ(small["segment_type"], "small");
  EXPECT_EQ(small["allocated_size"], 512);
  EXPECT_EQ(small["active_size"], 1024);
  EXPECT_EQ(small["requested_size"], 112);
  ASSERT_EQ(small["blocks"].size(), 3u);
  EXPECT_EQ(small["blocks"][0]["state"], "active_allocated");
  EXPECT_EQ(small["blocks"][0]["category"], "weights");
  EXPECT_EQ(small["blocks"][1]["state"], "active_pending_free");
  EXPECT_EQ(small["blocks"][2]["state"], "inactive");
  EXPECT_EQ(small["blocks"][2]["size"], 2 * kMiB - 1024);
  EXPECT_EQ(snapshot["segments"][1]["segment_type"], "large");
  EXPECT_EQ(snapshot["memprof"]["device"], "cuda");
  for (const Json& event : snapshot["device_traces"][0]) {
    EXPECT_EQ(event["action"].get<std::string>().rfind("segment_", 0),
              std::string::npos)
        << "the mirror keeps the segments' state, not their history";
  }
}

// Python's pickle.load of PickleOf(value) equals json.load of its JSON
// text: the same dict, keys in the same order, the same numbers.
void ExpectPythonReadsTheSame(const Json& value) {
  const TempDir dir;
  WriteFile(dir.path() / "v.json", value.dump());
  WriteFile(dir.path() / "v.pickle", PickleOf(value));
  const CommandResult r = RunCommand(
      "python3 -c 'import json, pickle, sys\n"
      "p = pickle.load(open(sys.argv[1], \"rb\"))\n"
      "j = json.load(open(sys.argv[2]))\n"
      "def keys(v):\n"
      "    if isinstance(v, dict): return [(k, keys(x)) for k, x in "
      "v.items()]\n"
      "    if isinstance(v, list): return [keys(x) for x in v]\n"
      "    return type(v).__name__\n"
      "sys.exit(0 if p == j and keys(p) == keys(j) else 1)' " +
      (dir.path() / "v.pickle").string() + " " +
      (dir.path() / "v.json").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// Note [Pickle writer]: every JSON type, at the edges of each integer
// encoding, and a snapshot, as `profile --snapshot-format pickle` writes it.
TEST(PickleWriter, PythonLoadsWhatJsonLoads) {
  Json every = Json::object();
  every["text"] = "caf\u00e9, \"quoted\", \\ and a newline\n";
  every["empty"] = "";
  every["ints"] = Json::array();
  for (int64_t v :
       {int64_t{0}, int64_t{-1}, int64_t{INT32_MAX}, int64_t{INT32_MIN},
        int64_t{INT32_MAX} + 1, int64_t{INT32_MIN} - 1, int64_t{1} << 40,
        -(int64_t{1} << 40), int64_t{127}, int64_t{128}, int64_t{INT64_MAX},
        int64_t{INT64_MIN}}) {
    every["ints"].push_back(v);
  }
  every["ints"].push_back(uint64_t{UINT64_MAX});
  every["floats"] = {0.1, -2.5e300, 0.0, 1e-310};
  every["flags"] = {true, false, nullptr};
  every["nested"] = {{"z", Json::array()}, {"a", Json::object()}, {"m", {1}}};
  ExpectPythonReadsTheSame(every);
  ExpectPythonReadsTheSame(MemorySnapshotJson(Session(), /*rank=*/0));
}

// profile --snapshot-format pickle: the writer's pickle, loaded by Python,
// is the structure its JSON is (APPENDS batches of 1000 included).
TEST(PickleWriter, ThePickledSnapshotLoadsAsItsJson) {
  std::vector<Lifetime> blocks = {Block(0, kLive, 64, Category::kWeights)};
  for (int64_t i = 0; i < 1500; ++i) {
    blocks.push_back(
        Block(1 + 2 * i, 2 + 2 * i, 8 + i, Category::kTemporaries));
  }
  const Capture capture = WriteCapture(
      blocks, {{0, Phase::kIdle, 0}, {1, Phase::kForward, 1}}, 0, 3001);
  const TempDir dir;
  for (const char* name : {"s.json", "s.pickle"}) {
    const std::string path = (dir.path() / name).string();
    SnapshotWriter writer(
        path, name[2] == 'j' ? DocumentFormat::kJson : DocumentFormat::kPickle,
        0, capture.begin_seq, nullptr);
    writer.Finish(Analyze(capture, {}, {&writer}).end_seq);
  }
  const CommandResult r = RunCommand(
      "python3 -c 'import json, pickle, sys\n"
      "p = pickle.load(open(sys.argv[1], \"rb\"))\n"
      "j = json.load(open(sys.argv[2]))\n"
      "sys.exit(0 if p == j and len(j[\"device_traces\"][0]) == " +
      std::to_string(kPaletteSlots + 2 + 1500 * 5) + " else 1)' " +
      (dir.path() / "s.pickle").string() + " " +
      (dir.path() / "s.json").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// Note [Snapshot window]: the trace keeps the kept steps' events only; the
// segments still list every block live at the end.
TEST(MemorySnapshot, TheTraceKeepsTheKeptStepsOnly) {
  std::vector<Lifetime> blocks = {Block(0, kLive, 64, Category::kWeights)};
  std::vector<PhaseMark> marks = {{0, Phase::kIdle, 0}};
  for (int32_t step = 1; step <= 6; ++step) {
    const int64_t seq = 1 + 2 * (step - 1);
    marks.push_back({seq, Phase::kForward, step});
    blocks.push_back(Block(seq, seq + 1, 100 * step, Category::kTemporaries));
  }
  const Capture capture = WriteCapture(blocks, marks, 0, 13);
  KeepSteps keep;
  keep.last = 2;
  const Json snapshot = MemorySnapshotJson(capture, 0, nullptr, keep);
  std::set<int64_t> sizes;
  for (const Json& event : snapshot["device_traces"][0]) {
    if (event["action"] == "alloc") sizes.insert(event["size"].get<int64_t>());
  }
  // Step 1, the steady-state peak's step (6, the largest) and steps 5, 6;
  // the set-up's weights.
  EXPECT_EQ(sizes, (std::set<int64_t>{64, 100, 500, 600}));
  EXPECT_EQ(snapshot["memprof"]["kept_steps"], (Json{1, 5, 6}));
  ASSERT_EQ(snapshot["segments"].size(), 1u);
  keep.all = true;
  EXPECT_EQ(
      MemorySnapshotJson(capture, 0, nullptr, keep)["memprof"]["kept_steps"],
      (Json{1, 2, 3, 4, 5, 6}));
}

TEST(PickleWriter, StartsWithProtocolTwoAndEndsWithStop) {
  const std::string bytes = PickleOf(Json{{"a", 1}});
  ASSERT_GE(bytes.size(), 3u);
  EXPECT_EQ(bytes.substr(0, 2), std::string("\x80\x02", 2));
  EXPECT_EQ(bytes.back(), '.');
  EXPECT_EQ(bytes[2], '}');  // JSON's '{' is what old viewers choke on
}

}  // namespace
}  // namespace memprof
