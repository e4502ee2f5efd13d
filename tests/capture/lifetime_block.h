// Hand-made captures (Analyze, the snapshot) and the blocks of a real one,
// for tests.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/capture/lifetime_analysis.h"
#include "profiler/capture/memory_tracker.h"

namespace memprof {

inline Lifetime Block(int64_t alloc, int64_t free, int64_t bytes, Category c,
                      uint64_t address = 0) {
  Lifetime life;
  life.alloc_seq = alloc;
  life.free_seq = free;
  life.bytes = bytes;
  life.category = c;
  life.address = address;
  return life;
}

// A scope opens (`name`) or the innermost closes ("") before the event at
// `seq`, after the marks at it.
struct ScopeEvent {
  int64_t seq = 0;
  std::string name;
};

// Writes the capture file a tracker would have written for these blocks
// (final categories) and marks: each alloc, then the block's category by
// ownership (none for a temporary or an unattributed block: they stay
// pending), each free, the marks before the events at their seq, and the
// end record. A block with address 0 gets a distinct one. `path` "": an
// unnamed temporary file; `ended` false leaves the end record out (a
// killed rank's file). `scopes` in seq order.
inline Capture WriteCapture(std::vector<Lifetime> blocks,
                            const std::vector<PhaseMark>& marks,
                            int64_t begin_seq, int64_t end_seq,
                            const std::string& path = "", bool ended = true,
                            const std::vector<ScopeEvent>& scopes = {}) {
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].address == 0) blocks[i].address = 0x10000 + 0x100 * i;
  }
  CaptureWriter writer;
  writer.Open(path, begin_seq, /*begin_unix_us=*/1, "{}");
  size_t m = 0;
  const auto tag = [](const Lifetime& b, Category c, uint8_t flags) {
    return Tag(b.bytes, c, flags);
  };
  size_t s = 0;
  std::map<std::string, uint32_t> scope_ids;
  // The marks and scope events at or before `seq`, in seq order (a mark
  // first at a tie).
  const auto marks_until = [&](int64_t seq) {
    while (true) {
      const bool mark = m < marks.size() && marks[m].seq <= seq;
      const bool scope = s < scopes.size() && scopes[s].seq <= seq;
      if (mark && (!scope || marks[m].seq <= scopes[s].seq)) {
        const PhaseMark& k = marks[m++];
        writer.Append(RecordKind::kMark, k.seq, MarkWord(k.phase, k.step),
                      static_cast<uint64_t>(k.time_ns));
      } else if (scope) {
        const ScopeEvent& e = scopes[s++];
        if (e.name.empty()) {
          writer.Append(RecordKind::kScopeExit, e.seq, 0, 0);
          continue;
        }
        const auto [it, added] =
            scope_ids.emplace(e.name, static_cast<uint32_t>(scope_ids.size()));
        if (added) AppendScopeName(writer, e.seq, it->second, e.name);
        writer.Append(RecordKind::kScopeEnter, e.seq, it->second, 0);
      } else {
        return;
      }
    }
  };
  std::map<int64_t, std::vector<const Lifetime*>> at;  // events by seq
  for (const Lifetime& b : blocks) {
    at[b.alloc_seq].push_back(&b);
    if (b.free_seq != kLive) at[b.free_seq].push_back(&b);
  }
  for (const auto& [seq, events] : at) {
    marks_until(seq);
    for (const Lifetime* block : events) {
      const Lifetime& b = *block;
      const bool pending_kind = b.category == Category::kTemporaries ||
                                b.category == Category::kUnattributed;
      if (b.alloc_seq == seq) {
        writer.Append(RecordKind::kAlloc, seq, b.address,
                      tag(b, Category::kPending, 0));
        if (!pending_kind) {
          writer.Append(RecordKind::kResolve, seq + 1, b.address,
                        tag(b, b.category, kTagOwned | b.flags));
        }
      } else if (b.free_seq == seq) {
        writer.Append(RecordKind::kFree, seq, b.address,
                      tag(b, pending_kind ? Category::kPending : b.category,
                          pending_kind ? 0 : kTagOwned | b.flags));
      }
    }
  }
  marks_until(end_seq);
  if (ended) writer.Append(RecordKind::kEnd, end_seq, 0, 0);
  Capture capture;
  capture.begin_seq = begin_seq;
  capture.end_seq = end_seq;
  capture.file = std::make_shared<const CaptureFile>(writer.Finish(), path);
  return capture;
}

// Every block of a capture with its final category, in alloc order.
inline std::vector<Lifetime> LifetimesOf(const Capture& capture) {
  struct Collect : CaptureSink {
    std::vector<Lifetime> blocks;
    std::unordered_map<uint64_t, size_t> live;
    void OnAlloc(const Lifetime& block) override {
      live[block.address] = blocks.size();
      blocks.push_back(block);
    }
    void OnFree(const Lifetime& block) override {
      blocks[live.at(block.address)].free_seq = block.free_seq;
      blocks[live.at(block.address)].flags = block.flags;
      live.erase(block.address);
    }
  } collect;
  const Analysis a = Analyze(capture, {}, {&collect});
  (void)a;
  return collect.blocks;
}

}  // namespace memprof
