#include "profiler/gtest/check_figures.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "profiler/capture/lifetime_analysis.h"

namespace memprof {
namespace {

// A live block with where it was allocated.
struct Block {
  Lifetime lifetime;
  const std::string* scope = nullptr;  // interned; nullptr: none open
  PhaseMark mark;
};

// Replays the session's blocks with their final categories, the named
// scopes and the marks, keeping the blocks live at the moment. With no
// targets it finds the moments (the first highest total, each category's
// first highest); with targets it lists the blocks live at each.
class MomentSink : public CaptureSink {
 public:
  // `targets[i]`: the seq of the moment to list, with its category filter
  // (kNumCategories: every category).
  explicit MomentSink(std::vector<std::pair<int64_t, int>> targets = {})
      : targets_(std::move(targets)) {}

  void OnMark(const PhaseMark& mark, bool kept) override {
    (void)kept;
    mark_ = mark;
  }
  void OnScopeEnter(const std::string& name) override {
    scopes_.push_back(&*names_.insert(name).first);
  }
  void OnScopeExit() override {
    if (!scopes_.empty()) scopes_.pop_back();
  }
  void OnAlloc(const Lifetime& block) override {
    live_[block.address] =
        Block{block, scopes_.empty() ? nullptr : scopes_.back(), mark_};
    const int c = Index(block.category);
    total_ += block.bytes;
    bytes_[c] += block.bytes;
    if (total_ > peak_.total_bytes) peak_ = MomentHere(block.alloc_seq);
    if (bytes_[c] > category_peaks_[c].bytes[c]) {
      category_peaks_[c] = MomentHere(block.alloc_seq);
    }
    for (const auto& [seq, category] : targets_) {
      if (seq == block.alloc_seq) listed_.push_back(List(category));
    }
  }
  void OnFree(const Lifetime& block) override {
    total_ -= block.bytes;
    bytes_[Index(block.category)] -= block.bytes;
    live_.erase(block.address);
  }
  void OnEnd(const std::unordered_map<uint64_t, Lifetime>& live) override {
    (void)live;  // live_ holds the same blocks, with their scopes
    std::vector<const Block*> leaks;
    for (const auto& [address, b] : live_) {
      if (IsOwned(b.lifetime.category)) continue;
      leaked_bytes_ += b.lifetime.bytes;
      ++leaked_blocks_;
      leaks.push_back(&b);
    }
    largest_leaks_ = Largest(std::move(leaks));
  }

  CheckFigures Figures() && {
    CheckFigures f;
    f.peak = std::move(peak_);
    f.category_peaks = std::move(category_peaks_);
    f.leaked_bytes = leaked_bytes_;
    f.leaked_blocks = leaked_blocks_;
    f.largest_leaks = std::move(largest_leaks_);
    return f;
  }
  std::vector<std::vector<ListedBlock>>& listed() { return listed_; }

 private:
  Moment MomentHere(int64_t seq) const {
    Moment m;
    m.seq = seq;
    m.total_bytes = total_;
    m.phase = mark_.phase;
    m.step = mark_.step;
    m.bytes = bytes_;
    return m;
  }

  // The largest blocks live now, of `category` (kNumCategories: any).
  std::vector<ListedBlock> List(int category) const {
    std::vector<const Block*> blocks;
    for (const auto& [address, b] : live_) {
      if (category == kNumCategories || Index(b.lifetime.category) == category)
        blocks.push_back(&b);
    }
    return Largest(std::move(blocks));
  }

  static std::vector<ListedBlock> Largest(std::vector<const Block*> blocks) {
    const size_t n = std::min(blocks.size(), kListedBlocks);
    std::partial_sort(blocks.begin(), blocks.begin() + n, blocks.end(),
                      [](const Block* a, const Block* b) {
                        if (a->lifetime.bytes != b->lifetime.bytes) {
                          return a->lifetime.bytes > b->lifetime.bytes;
                        }
                        return a->lifetime.alloc_seq < b->lifetime.alloc_seq;
                      });
    std::vector<ListedBlock> listed;
    for (size_t i = 0; i < n; ++i) {
      const Block& b = *blocks[i];
      listed.push_back(ListedBlock{b.lifetime.bytes, b.lifetime.category,
                                   b.scope != nullptr ? *b.scope : "",
                                   b.mark.phase, b.mark.step});
    }
    return listed;
  }

  const std::vector<std::pair<int64_t, int>> targets_;
  PhaseMark mark_;
  std::unordered_set<std::string> names_;  // node-based: stable addresses
  std::vector<const std::string*> scopes_;
  std::unordered_map<uint64_t, Block> live_;
  int64_t total_ = 0;
  Breakdown bytes_{};
  Moment peak_;
  std::array<Moment, kNumCategories> category_peaks_;
  int64_t leaked_bytes_ = 0;
  int64_t leaked_blocks_ = 0;
  std::vector<ListedBlock> largest_leaks_;
  std::vector<std::vector<ListedBlock>> listed_;  // in the order reached
};

}  // namespace

bool IsOwned(Category category) {
  switch (category) {
    case Category::kWeights:
    case Category::kGradients:
    case Category::kOptimizerState:
    case Category::kDdpBuckets:
    case Category::kInputs:
      return true;
    default:
      return false;
  }
}

CheckFigures FiguresOf(const Capture& capture) {
  MomentSink find;
  Analyze(capture, {}, {&find});
  CheckFigures f = std::move(find).Figures();
  // The moments in seq order, as the second replay reaches them.
  std::vector<std::pair<int64_t, int>> targets;
  std::vector<Moment*> moments;
  if (f.peak.seq >= 0) {
    targets.emplace_back(f.peak.seq, kNumCategories);
    moments.push_back(&f.peak);
  }
  for (int c = 0; c < kNumCategories; ++c) {
    if (f.category_peaks[c].seq < 0) continue;
    targets.emplace_back(f.category_peaks[c].seq, c);
    moments.push_back(&f.category_peaks[c]);
  }
  std::vector<size_t> order(targets.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return targets[a].first < targets[b].first;
  });
  std::vector<std::pair<int64_t, int>> sorted;
  for (size_t i : order) sorted.push_back(targets[i]);
  MomentSink list(sorted);
  Analyze(capture, {}, {&list});
  for (size_t k = 0; k < order.size() && k < list.listed().size(); ++k) {
    moments[order[k]]->largest = std::move(list.listed()[k]);
  }
  return f;
}

}  // namespace memprof
