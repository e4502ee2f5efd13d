#include "profiler/capture/memory_snapshot.h"

#include <algorithm>
#include <string>
#include <vector>

#include "profiler/base/category.h"

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

}  // namespace

Json MemorySnapshotJson(const Capture& capture, int rank) {
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
  trace.push_back(Json{{"action", "snapshot"},
                       {"addr", 0},
                       {"size", 0},
                       {"stream", 0},
                       {"frames", Json::array()},
                       {"seq", capture.begin_seq},
                       {"category", "unknown"}});
  // Merge the two seq-ordered lists; seqs are unique across both.
  size_t a = 0, f = 0;
  while (a < by_alloc.size() || f < by_free.size()) {
    const bool take_alloc =
        f == by_free.size() ||
        (a < by_alloc.size() && by_alloc[a]->alloc_seq < by_free[f]->free_seq);
    if (take_alloc) {
      const Lifetime& life = *by_alloc[a++];
      trace.push_back(Event("segment_alloc", life, life.alloc_seq));
      trace.push_back(Event("alloc", life, life.alloc_seq));
    } else {
      const Lifetime& life = *by_free[f++];
      trace.push_back(Event("free_requested", life, life.free_seq));
      trace.push_back(Event("free_completed", life, life.free_seq));
      trace.push_back(Event("segment_free", life, life.free_seq));
    }
  }

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
  return Json{{"segments", segments},
              {"device_traces", Json::array({trace})},
              {"memprof",
               {{"schema", kSnapshotSchema},
                {"rank", rank},
                {"device", "cpu"},
                {"begin_seq", capture.begin_seq},
                {"end_seq", capture.end_seq}}}};
}

}  // namespace memprof
