#include "profiler/capture/memory_snapshot.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/base/category.h"
#include "profiler/base/category_palette.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

Json Event(const char* action, const Lifetime& life, int64_t seq) {
  return Json{{"action", action},
              {"addr", life.address},
              {"size", life.bytes},
              {"stream", 0},
              {"frames", Json::array()},
              {"seq", seq},
              {"category", CategoryName(life.category)}};
}

Json CpuSegments(const std::vector<const Lifetime*>& by_alloc) {
  Json segments = Json::array();
  for (const Lifetime* life : by_alloc) {
    if (life->free_seq != kLive) continue;
    segments.push_back(Json{
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
  return segments;
}

Json GpuSegments(const std::vector<CudaSegmentView>& views,
                 const std::vector<const Lifetime*>& by_alloc) {
  std::map<uint64_t, const Lifetime*> live;
  for (const Lifetime* life : by_alloc) {
    if (life->free_seq == kLive) live[life->address] = life;
  }
  Json segments = Json::array();
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
                             : std::string(CategoryName(it->second->category));
      }
      blocks.push_back(std::move(entry));
    }
    segments.push_back(Json{{"device", 0},
                            {"address", segment.address},
                            {"total_size", segment.bytes},
                            {"allocated_size", allocated},
                            {"active_size", active},
                            {"requested_size", requested},
                            {"stream", 0},
                            {"segment_type", segment.small ? "small" : "large"},
                            {"blocks", std::move(blocks)}});
  }
  return segments;
}

}  // namespace

Json MemorySnapshotJson(const Capture& capture, int rank,
                        const std::vector<CudaSegmentView>* cuda_segments) {
  std::vector<const Lifetime*> by_alloc;
  std::vector<const Lifetime*> by_free;
  for (const Lifetime& life : capture.lifetimes) {
    by_alloc.push_back(&life);
    if (life.free_seq != kLive) by_free.push_back(&life);
  }
  std::sort(by_alloc.begin(), by_alloc.end(),
            [](const Lifetime* a, const Lifetime* b) {
              return a->alloc_seq < b->alloc_seq;
            });
  std::sort(by_free.begin(), by_free.end(),
            [](const Lifetime* a, const Lifetime* b) {
              return a->free_seq < b->free_seq;
            });

  Json trace = Json::array();
  // One `snapshot` event per palette slot, so that the viewer numbers the
  // categories in slot order (Note [Category colours]).
  for (std::string_view name : PaletteNames()) {
    trace.push_back(Json{{"action", "snapshot"},
                         {"addr", 0},
                         {"size", 0},
                         {"stream", 0},
                         {"frames", Json::array()},
                         {"seq", capture.begin_seq},
                         {"category", name}});
  }
  // Merge the two seq-ordered lists; seqs are unique across both.
  size_t a = 0, f = 0;
  while (a < by_alloc.size() || f < by_free.size()) {
    const bool take_alloc =
        f == by_free.size() ||
        (a < by_alloc.size() && by_alloc[a]->alloc_seq < by_free[f]->free_seq);
    if (take_alloc) {
      const Lifetime& life = *by_alloc[a++];
      if (!cuda_segments) {
        trace.push_back(Event("segment_alloc", life, life.alloc_seq));
      }
      trace.push_back(Event("alloc", life, life.alloc_seq));
    } else {
      const Lifetime& life = *by_free[f++];
      trace.push_back(Event("free_requested", life, life.free_seq));
      trace.push_back(Event("free_completed", life, life.free_seq));
      if (!cuda_segments) {
        trace.push_back(Event("segment_free", life, life.free_seq));
      }
    }
  }

  const Json segments = cuda_segments ? GpuSegments(*cuda_segments, by_alloc)
                                      : CpuSegments(by_alloc);
  return Json{{"segments", segments},
              {"device_traces", Json::array({trace})},
              {"memprof",
               {{"schema", kSnapshotSchema},
                {"rank", rank},
                {"device", cuda_segments ? "cuda" : "cpu"},
                {"begin_seq", capture.begin_seq},
                {"end_seq", capture.end_seq}}}};
}

}  // namespace memprof
