#include "profiler/capture/memory_snapshot.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/base/category.h"
#include "profiler/base/category_palette.h"
#include "profiler/base/schema_version.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

// The blocks live at the end, by seq.
std::vector<const Lifetime*> BySeq(
    const std::unordered_map<uint64_t, Lifetime>& live) {
  std::vector<const Lifetime*> blocks;
  for (const auto& [address, block] : live) blocks.push_back(&block);
  std::sort(blocks.begin(), blocks.end(),
            [](const Lifetime* a, const Lifetime* b) {
              return a->alloc_seq < b->alloc_seq;
            });
  return blocks;
}

void CpuSegments(DocumentWriter& out,
                 const std::vector<const Lifetime*>& live) {
  for (const Lifetime* life : live) {
    out.Value(Json{
        {"device", 0},
        {"address", life->address},
        {"total_size", life->bytes},
        {"allocated_size", life->bytes},
        {"active_size", life->bytes},
        {"requested_size", life->bytes},
        {"stream", 0},
        {"segment_type", "large"},
        {"blocks",
         Json::array({Json{{"size", life->bytes},
                           {"requested_size", life->bytes},
                           {"state", "active_allocated"},
                           {"seq", life->alloc_seq},
                           {"category", CategoryName(life->category)}}})}});
  }
}

void GpuSegments(DocumentWriter& out, const std::vector<CudaSegmentView>& views,
                 const std::unordered_map<uint64_t, Lifetime>& live) {
  for (const CudaSegmentView& segment : views) {
    int64_t allocated = 0, active = 0, requested = 0;
    Json blocks = Json::array();
    for (const CudaBlockView& block : segment.blocks) {
      const std::string state = block.state;
      Json entry{{"address", block.address},
                 {"size", block.bytes},
                 {"requested_size", block.requested},
                 {"state", state}};
      if (state != "inactive") {
        active += block.bytes;
        requested += block.requested;
      }
      if (state == "active_allocated") {
        allocated += block.bytes;
        const auto it = live.find(block.address);
        // Blocks from before the session (the warm-up's workspaces) have
        // no category.
        entry["category"] =
            it == live.end() ? "unknown"
                             : std::string(CategoryName(it->second.category));
      }
      blocks.push_back(std::move(entry));
    }
    out.Value(Json{{"device", 0},
                   {"address", segment.address},
                   {"total_size", segment.bytes},
                   {"allocated_size", allocated},
                   {"active_size", active},
                   {"requested_size", requested},
                   {"stream", 0},
                   {"segment_type", segment.small ? "small" : "large"},
                   {"blocks", std::move(blocks)}});
  }
}

}  // namespace

SnapshotWriter::SnapshotWriter(
    const std::string& path, DocumentFormat format, int rank, int64_t begin_seq,
    const std::vector<CudaSegmentView>* cuda_segments)
    : out_(path, format),
      rank_(rank),
      begin_seq_(begin_seq),
      cuda_segments_(cuda_segments) {
  out_.BeginObject();
  out_.Key("device_traces");
  out_.BeginArray();
  out_.BeginArray();
  // One `snapshot` event per palette slot, so that the viewer numbers the
  // categories in slot order (Note [Category colours]).
  for (std::string_view name : PaletteNames()) {
    out_.Value(Json{{"action", "snapshot"},
                    {"addr", 0},
                    {"size", 0},
                    {"stream", 0},
                    {"frames", Json::array()},
                    {"seq", begin_seq},
                    {"category", name}});
  }
}

void SnapshotWriter::Event(const char* action, const Lifetime& block,
                           int64_t seq) {
  out_.Value(Json{{"action", action},
                  {"addr", block.address},
                  {"size", block.bytes},
                  {"stream", 0},
                  {"frames", Json::array()},
                  {"seq", seq},
                  {"category", CategoryName(block.category)}});
}

void SnapshotWriter::OnMark(const PhaseMark& mark, bool kept) {
  kept_ = kept;
  if (kept && mark.step >= 1 &&
      (kept_steps_.empty() || kept_steps_.back() != mark.step)) {
    kept_steps_.push_back(mark.step);
  }
}

void SnapshotWriter::OnAlloc(const Lifetime& block) {
  if (!kept_) return;
  if (cuda_segments_ == nullptr) {
    Event("segment_alloc", block, block.alloc_seq);
  }
  Event("alloc", block, block.alloc_seq);
}

void SnapshotWriter::OnFree(const Lifetime& block) {
  if (!kept_) return;
  Event("free_requested", block, block.free_seq);
  Event("free_completed", block, block.free_seq);
  if (cuda_segments_ == nullptr) {
    Event("segment_free", block, block.free_seq);
  }
}

void SnapshotWriter::OnEnd(const std::unordered_map<uint64_t, Lifetime>& live) {
  out_.EndArray();
  out_.EndArray();
  out_.Key("segments");
  out_.BeginArray();
  if (cuda_segments_ != nullptr) {
    GpuSegments(out_, *cuda_segments_, live);
  } else {
    CpuSegments(out_, BySeq(live));
  }
  out_.EndArray();
}

void SnapshotWriter::Finish(int64_t end_seq) {
  out_.Key("memprof");
  out_.Value(Json{{"schema", kSnapshotSchema},
                  {"rank", rank_},
                  {"device", cuda_segments_ ? "cuda" : "cpu"},
                  {"begin_seq", begin_seq_},
                  {"end_seq", end_seq},
                  {"kept_steps", kept_steps_}});
  out_.EndObject();
  out_.Commit();
}

}  // namespace memprof
