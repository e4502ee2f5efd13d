#include "profiler/predict/prediction.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "profiler/base/cuda_allocator_model.h"
#include "profiler/base/human_bytes.h"
#include "profiler/base/zero_partition.h"

namespace memprof {
namespace {

// Adam and AdamW keep exp_avg and exp_avg_sq per parameter (x2); SGD one
// momentum buffer (x1, created in step 1 as a clone of the gradient), or
// nothing without momentum.
int64_t OptimizerStateMultiplier(const TrainConfig& train) {
  if (KeepsMoments(train)) return 2;
  return train.momentum > 0 ? 1 : 0;  // SGD's buffer; none: nothing
}

// Note [Predicted on a GPU]
// With train.device cuda every tensor takes its request rounded to the
// caching allocator's 512 B (Note [Rounded categories]): each row of the
// table is one tensor, so each is rounded on its own; the DDP buckets are
// the Reducer's, one for step 1 and the rebuilt ones afterwards.
class Sizes {
 public:
  Sizes(const SizeTable& table, bool cuda) : table_(table), cuda_(cuda) {}
  int64_t Of(int64_t bytes) const {
    return cuda_ && bytes > 0 ? CudaRoundSize(bytes) : bytes;
  }
  int64_t Sum(RowKind kind) const {
    int64_t sum = 0;
    for (const SizeRow& row : table_.rows) {
      if (row.kind == kind) sum += Of(row.Bytes());
    }
    return sum;
  }
  // The trained parameters (Note [Frozen parameters]).
  int64_t Trained() const {
    int64_t sum = 0;
    for (const SizeRow& row : table_.rows) {
      if (row.kind == RowKind::kParameter && !row.frozen)
        sum += Of(row.Bytes());
    }
    return sum;
  }
  // The workspace early in backward (kEveryBlock), in the output
  // projection's (kHead) or late in backward (kNoBlock); a block's stages
  // are BlockStages'.
  int64_t Workspace(int32_t block = SizeRow::kEveryBlock) const {
    int64_t sum = 0;
    for (const SizeRow& row : table_.rows) {
      if (row.kind == RowKind::kWorkspace && row.block == block) {
        sum += Of(row.Bytes());
      }
    }
    return sum;
  }
  // The kSaved rows held through every block's backward (kEveryBlock),
  // still held late in backward.
  int64_t HeldThroughTheBlocks() const {
    int64_t sum = 0;
    for (const SizeRow& row : table_.rows) {
      if (row.kind == RowKind::kSaved && row.block == SizeRow::kEveryBlock) {
        sum += Of(row.Bytes());
      }
    }
    return sum;
  }
  // bf16-autocast: the weights' copies held early in backward (kEveryBlock:
  // every copy the graph holds) or late in backward (kNoBlock: those held
  // until after every block's); the cache's copies are gone by then (Note
  // [Weight casts]). In a block's backward: BlockStages.
  int64_t CastsInBackward(int32_t moment) const {
    int64_t sum = 0;
    for (const SizeRow& row : table_.rows) {
      if (row.kind == RowKind::kWeightCast &&
          row.block != SizeRow::kForwardOnly &&
          (moment == SizeRow::kEveryBlock ||
           row.block == SizeRow::kEveryBlock)) {
        sum += Of(row.Bytes());
      }
    }
    return sum;
  }
  // At the output projection's backward (Note [Head backward]): the saved
  // rows and weight copies not yet freed.
  int64_t AtHead(RowKind kind) const {
    int64_t sum = 0;
    for (const SizeRow& row : table_.rows) {
      if (row.kind == kind && row.block != SizeRow::kHead &&
          row.block != SizeRow::kForwardOnly)
        sum += Of(row.Bytes());
    }
    return sum;
  }
  // The steady state's buckets, as the Reducer rebuilds them.
  int64_t Buckets(const RunConfig& config) const {
    int64_t sum = 0;
    for (int64_t bucket : RebuiltBuckets(table_, config)) sum += Of(bucket);
    return sum;
  }

 private:
  const SizeTable& table_;
  bool cuda_;
};

// What is live at each stage of each block's backward (Note [Block
// stages]), from one pass over the rows: a model of L blocks has rows in
// proportion to L, and summing every row for each (block, stage) took
// time in L squared (minutes at 10,000 layers).
class BlockStages {
 public:
  BlockStages(const SizeTable& t, const Sizes& sizes)
      : blocks_(t.blocks),
        stages_(static_cast<int32_t>(std::max<size_t>(1, t.stages.size()))),
        activations_(blocks_, stages_),
        casts_(blocks_, stages_),
        workspace_(static_cast<size_t>(blocks_) * stages_) {
    for (const SizeRow& row : t.rows) {
      const int64_t bytes = sizes.Of(row.Bytes());
      const bool in_block = row.block >= 0 && row.block < blocks_;
      switch (row.kind) {
        case RowKind::kSaved:  // the kSaved rows still held
          activations_.Add(row.block, row.freed_after, bytes);
          break;
        case RowKind::kRecomputed:  // the block's own, not yet freed
          if (in_block) activations_.Own(row.block, row.freed_after, bytes);
          break;
        case RowKind::kWeightCast:  // as kSaved rows
          casts_.Add(row.block, row.freed_after, bytes);
          break;
        case RowKind::kRecomputedCast:
          if (in_block) casts_.Own(row.block, row.freed_after, bytes);
          break;
        case RowKind::kWorkspace:
          if (in_block && row.stage < stages_) {
            workspace_[Cell(row.block, row.stage)] += bytes;
          }
          break;
        default:
          break;
      }
    }
    activations_.Finish();
    casts_.Finish();
  }
  int32_t stages() const { return stages_; }
  int64_t Activations(int32_t block, int32_t stage) const {
    return activations_.At(block, stage);
  }
  int64_t Casts(int32_t block, int32_t stage) const {
    return casts_.At(block, stage);
  }
  int64_t Workspace(int32_t block, int32_t stage) const {
    return workspace_[Cell(block, stage)];
  }
  int64_t Live(int32_t block, int32_t stage) const {
    return Activations(block, stage) + Casts(block, stage) +
           Workspace(block, stage);
  }

 private:
  size_t Cell(int32_t block, int32_t stage) const {
    return static_cast<size_t>(block) * stages_ + stage;
  }
  // Rows held into the blocks' backward: through every block's
  // (kEveryBlock), or saved by block b, held through every later block's
  // and through its own stages up to `last` (SizeRow::freed_after).
  class HeldRows {
   public:
    HeldRows(int32_t blocks, int32_t stages)
        : blocks_(blocks),
          stages_(stages),
          earlier_(static_cast<size_t>(blocks) + 1),
          own_(static_cast<size_t>(blocks) * stages) {}
    void Add(int32_t block, int32_t last, int64_t bytes) {
      if (block == SizeRow::kEveryBlock) {
        always_ += bytes;
      } else if (block >= 0 && block < blocks_) {
        earlier_[block + 1] += bytes;
        Own(block, last, bytes);
      }
    }
    void Own(int32_t block, int32_t last, int64_t bytes) {
      for (int32_t k = 0; k < stages_ && k <= last; ++k) {
        own_[static_cast<size_t>(block) * stages_ + k] += bytes;
      }
    }
    void Finish() {  // earlier_[b]: the blocks' before block b
      for (size_t b = 1; b < earlier_.size(); ++b)
        earlier_[b] += earlier_[b - 1];
    }
    int64_t At(int32_t block, int32_t stage) const {
      return always_ + earlier_[block] +
             own_[static_cast<size_t>(block) * stages_ + stage];
    }

   private:
    int32_t blocks_, stages_;
    int64_t always_ = 0;
    std::vector<int64_t> earlier_, own_;
  };
  int32_t blocks_, stages_;
  HeldRows activations_, casts_;
  std::vector<int64_t> workspace_;
};

// A moment of the step: the model state and inputs live throughout, with
// these activations and temporaries.
PredictedMoment MomentOf(Phase phase, std::string what, const Breakdown& state,
                         int64_t activations, int64_t temporaries,
                         int64_t weight_casts = 0) {
  PredictedMoment m;
  m.phase = phase;
  m.what = std::move(what);
  m.bytes = state;
  m.bytes[Index(Category::kActivations)] = activations;
  m.bytes[Index(Category::kTemporaries)] = temporaries;
  m.bytes[Index(Category::kWeightCasts)] = weight_casts;
  return m;
}

}  // namespace

// Note [Accumulated bucket views]
// With ddp.gradient_as_bucket_view the gradients are views of the DDP
// buckets, which the Reducer keeps for the whole run. zero_grad with
// set_to_none drops the views; under accumulation the micro-batches before
// the last run without DDP's all-reduce and make fresh gradients, which
// the last micro-batch's backward copies into the buckets only when each
// bucket is ready. So through that backward every trained parameter's
// gradient is held twice: the fresh one and its bucket. Measured:
// gpt-tiny, micro-batch 2, SGD, --grad-accum 2 --train.zero_grad_set_to_none
// true --ddp.gradient_as_bucket_view true: gradients 948,224 B at the peak
// (twice the trained parameters), the prediction 474,112 B under before.
bool FreshGradientsBesideBuckets(const RunConfig& config) {
  return config.ddp.gradient_as_bucket_view &&
         config.train.zero_grad_set_to_none && config.train.grad_accum > 1;
}

// As the Reducer's rebuild: trained parameters in reverse order (gradients
// become ready roughly so), a bucket closing once it holds at least its
// cap.
std::vector<int64_t> RebuiltBuckets(const SizeTable& table,
                                    const RunConfig& config) {
  constexpr int64_t kFirstBucketBytes = 1 << 20;
  const auto cap = static_cast<int64_t>(config.ddp.bucket_cap_mb * (1 << 20));
  std::vector<int64_t> buckets;
  int64_t open = 0;
  for (auto row = table.rows.rbegin(); row != table.rows.rend(); ++row) {
    if (row->kind != RowKind::kParameter || row->frozen) continue;
    open += row->Bytes();
    const int64_t limit =
        buckets.empty() ? std::min(kFirstBucketBytes, cap) : cap;
    if (open >= limit) {
      buckets.push_back(open);
      open = 0;
    }
  }
  if (open > 0) buckets.push_back(open);
  return buckets;
}

Prediction Predict(const RunConfig& config, int rank, int cpu_threads) {
  const int64_t micro_batch = MicroBatch(config);
  return PredictFromTable(config,
                          BuildSizeTable(config, micro_batch, cpu_threads),
                          micro_batch, rank);
}

Prediction PredictFromTable(const RunConfig& config, SizeTable table,
                            int64_t micro_batch, int rank) {
  Prediction p;
  p.rank = rank;
  p.micro_batch = micro_batch;
  p.world_size = config.ddp.world_size;
  p.table = std::move(table);
  const SizeTable& t = p.table;
  const Sizes sizes(t, config.train.device == "cuda");
  p.parameters = t.Elements(RowKind::kParameter);
  p.trained_parameters = t.TrainedElements();
  p.buffer_bytes = sizes.Sum(RowKind::kBuffer);
  const int64_t param_bytes = sizes.Sum(RowKind::kParameter);
  // Gradients, optimizer state and buckets are the trained parameters'.
  const int64_t trained_bytes = sizes.Trained();

  // The trained parameters whose optimizer state this rank holds: all of
  // them, or its partition under ZeRO-1 (the state's bytes and the largest
  // owned parameter, which sizes Adam's workspace).
  int64_t owned_bytes = trained_bytes;
  int64_t largest_owned = t.LargestParameterBytes(/*trained=*/true);
  if (config.ddp.zero_stage == 1) {
    std::vector<int64_t> row_bytes, row_elements;
    for (const SizeRow& row : t.rows) {
      if (row.kind != RowKind::kParameter || row.frozen) continue;
      row_bytes.push_back(row.Bytes());
      row_elements.push_back(row.Elements());
    }
    const int n = static_cast<int>(config.ddp.world_size);
    p.owners = PartitionParameters(row_bytes, n);
    p.owned_parameters = OwnedBytes(row_elements, p.owners, n);
    owned_bytes = 0;
    largest_owned = 0;
    for (size_t i = 0; i < row_bytes.size(); ++i) {
      if (p.owners[i] != rank) continue;
      owned_bytes += sizes.Of(row_bytes[i]);
      largest_owned = std::max(largest_owned, row_bytes[i]);
    }
  }

  Breakdown state{};  // live through the whole step
  state[Index(Category::kWeights)] = param_bytes + p.buffer_bytes;
  state[Index(Category::kGradients)] = trained_bytes;
  state[Index(Category::kOptimizerState)] =
      OptimizerStateMultiplier(config.train) * owned_bytes;
  // The buckets: the parameters' bytes, split into the rebuilt buckets (on
  // a GPU each rounded). With gradient_as_bucket_view the gradients are the
  // buckets.
  const int64_t bucket_bytes = sizes.Buckets(config);
  if (config.ddp.gradient_as_bucket_view) {
    state[Index(Category::kGradients)] = bucket_bytes;
  } else {
    state[Index(Category::kDdpBuckets)] = bucket_bytes;
  }
  state[Index(Category::kInputs)] = sizes.Sum(RowKind::kInput);
  // In backward, the gradients: Note [Accumulated bucket views].
  Breakdown backward_state = state;
  if (FreshGradientsBesideBuckets(config)) {
    backward_state[Index(Category::kGradients)] += trained_bytes;
  }
  p.model_state_bytes_per_parameter =
      p.parameters > 0
          ? static_cast<double>(ModelStateBytes(state)) / p.parameters
          : 0;

  // Early in backward: every saved tensor and the model's workspace rows.
  p.early_backward =
      MomentOf(Phase::kBackward,
               "early in backward: every saved tensor and the workspace rows",
               backward_state, sizes.Sum(RowKind::kSaved), sizes.Workspace(),
               sizes.CastsInBackward(SizeRow::kEveryBlock));

  // The output projection's backward (Note [Head backward]), in tables
  // with rows for it.
  if (sizes.Workspace(SizeRow::kHead) > 0) {
    p.head_backward = MomentOf(
        Phase::kBackward,
        "output projection's backward: its weight and input gradients",
        backward_state, sizes.AtHead(RowKind::kSaved),
        sizes.Workspace(SizeRow::kHead), sizes.AtHead(RowKind::kWeightCast));
  }

  // Adam's step: denom = exp_avg_sq.sqrt() / sqrt(bias_correction2) makes
  // two temporaries the size of the parameter, live together; the largest
  // parameter decides. The loss (4 bytes) is still held by the loop.
  p.optimizer_step = MomentOf(
      Phase::kOptimizer,
      "optimizer step: two temporaries the size of the largest parameter",
      state, sizes.Of(4),
      !KeepsMoments(config.train) || largest_owned == 0
          ? 0
          : 2 * sizes.Of(largest_owned));

  const int64_t n = config.ddp.world_size;
  auto shard = [n](int64_t bytes) { return (bytes + n - 1) / n; };
  const int64_t w = state[Index(Category::kWeights)];
  const int64_t g = state[Index(Category::kGradients)];
  // Priced from full replication, whatever this run's stage.
  const int64_t o = OptimizerStateMultiplier(config.train) * trained_bytes;
  p.zero.plain_bytes = w + g + o;
  p.zero.stage1_bytes = w + g + shard(o);
  p.zero.stage2_bytes = w + shard(g) + shard(o);
  p.zero.stage3_bytes = shard(w) + shard(g) + shard(o);
  p.zero.duplicated_bytes = (n - 1) * (w + g + o);

  // Each block's backward (a checkpointed one just after its rerun), at
  // each of its stages (Note [Block stages]); the busiest (the first
  // rerun, for GPT).
  int64_t most_block_activations = 0;
  if (t.blocks > 0) {
    const BlockStages live(t, sizes);
    int32_t busiest = 0, stage = 0;
    for (int32_t block = 0; block < t.blocks; ++block) {
      most_block_activations =
          std::max(most_block_activations, live.Activations(block, 0));
      for (int32_t k = 0; k < live.stages(); ++k) {
        if (live.Live(block, k) > live.Live(busiest, stage)) {
          busiest = block;
          stage = k;
        }
      }
    }
    const bool checkpointed = config.train.activation_checkpointing == "blocks";
    const std::string at =
        t.stages.empty() ? std::string() : ", " + t.stages[stage];
    p.busiest_block = busiest;
    p.busiest_stage = stage;
    p.block_backward = MomentOf(
        Phase::kBackward,
        checkpointed
            ? "backward of checkpointed block " + std::to_string(busiest) + at +
                  ", just after its rerun: the blocks' inputs held "
                  "until then, the block's saved tensors and its "
                  "backward's workspace rows"
            : "backward of block " + std::to_string(busiest) + at +
                  ": the saved tensors still held and its "
                  "workspace rows",
        backward_state, live.Activations(busiest, stage),
        live.Workspace(busiest, stage), live.Casts(busiest, stage));
  }

  // Late in backward: the rows outside the blocks still saved, and the
  // late workspace rows.
  if (sizes.Workspace(SizeRow::kNoBlock) > 0) {
    p.late_backward = MomentOf(
        Phase::kBackward,
        "late in backward, after every block's: the late workspace rows",
        backward_state, sizes.HeldThroughTheBlocks(),
        sizes.Workspace(SizeRow::kNoBlock),
        sizes.CastsInBackward(SizeRow::kNoBlock));
  }

  p.bytes = state;
  p.bytes[Index(Category::kGradients)] =
      backward_state[Index(Category::kGradients)];
  p.bytes[Index(Category::kActivations)] =
      std::max(p.early_backward.bytes[Index(Category::kActivations)],
               most_block_activations);
  p.bytes[Index(Category::kTemporaries)] =
      p.Peak().bytes[Index(Category::kTemporaries)];
  // Their own largest: every copy, when the forward ends (the cache's
  // still held), or a checkpointed block's rerun's, whichever is larger.
  p.bytes[Index(Category::kWeightCasts)] =
      std::max(sizes.Sum(RowKind::kWeightCast),
               p.block_backward.bytes[Index(Category::kWeightCasts)]);
  return p;
}

std::map<int, std::vector<int64_t>> OwnedRowBytes(const Prediction& p) {
  std::map<int, std::vector<int64_t>> owned;
  size_t i = 0;
  for (const SizeRow& row : p.table.rows) {
    if (row.kind != RowKind::kParameter || row.frozen) continue;
    owned[p.owners[i++]].push_back(row.Bytes());
  }
  for (auto& [rank, sizes] : owned) std::sort(sizes.begin(), sizes.end());
  return owned;
}

std::vector<int> DistinctRanks(const Prediction& p) {
  // A rank's prediction follows from the sizes of the rows it owns: one
  // rank for each distinct list, and the lowest rank owning none; at most
  // one more than the trained rows, however many ranks.
  if (p.owners.empty()) return {p.rank};
  const std::map<int, std::vector<int64_t>> owned = OwnedRowBytes(p);
  std::set<std::vector<int64_t>> seen;
  std::vector<int> ranks;
  for (const auto& [rank, sizes] : owned) {
    if (seen.insert(sizes).second) ranks.push_back(rank);
  }
  for (int r = 0; r < static_cast<int>(p.world_size); ++r) {
    if (owned.count(r) == 0) {
      ranks.push_back(r);
      break;
    }
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

Prediction PredictBusiestRank(const RunConfig& config) {
  Prediction busiest = Predict(config, 0);
  if (config.ddp.zero_stage != 1) return busiest;
  for (int r : DistinctRanks(busiest)) {
    if (r == 0) continue;
    Prediction p = Predict(config, r);
    if (p.Peak().Total() > busiest.Peak().Total()) busiest = std::move(p);
  }
  return busiest;
}

BytesPerParameter BytesPerParameterOf(const RunConfig& config) {
  const int64_t e = config.train.dtype == "bfloat16" ? 2 : 4;
  BytesPerParameter b;
  b.weights = e;
  b.gradients = e;
  b.optimizer = OptimizerStateMultiplier(config.train) * e;
  b.buckets = config.ddp.gradient_as_bucket_view ? 0 : e;
  b.casts = config.train.dtype == "bf16-autocast" ? 2 : 0;
  return b;
}

std::string BytesPerParameterNote(const RunConfig& config) {
  const BytesPerParameter b = BytesPerParameterOf(config);
  const TrainConfig& t = config.train;
  const std::string optimizer = t.optimizer == "adam"    ? "Adam"
                                : t.optimizer == "adamw" ? "AdamW"
                                : t.optimizer == "none"  ? "no optimizer"
                                : t.momentum > 0         ? "momentum SGD"
                                                         : "SGD";
  const std::string dtype = t.dtype == "float32" ? "fp32"
                            : t.dtype == "bf16-autocast"
                                ? "fp32 + bf16 autocast"
                                : "bf16";
  const std::string state =
      KeepsMoments(t) ? std::to_string(b.optimizer) + " for the moments"
      : t.momentum > 0
          ? std::to_string(b.optimizer) + " for the momentum buffer"
      : t.optimizer == "none" ? "0 for the optimizer (none tracked)"
                              : "0 for the optimizer (no state)";
  std::string note = dtype + " + " + optimizer + ": " +
                     std::to_string(b.weights) +
                     " each for weights and gradients, " + state + ", " +
                     std::to_string(b.weights) +
                     " for DDP buckets unless gradient_as_bucket_view";
  if (b.casts > 0) {
    note +=
        "; and up to 2 more, outside model state, for the weights' bfloat16 "
        "copies in forward and backward (weight_casts)";
  }
  return note;
}

std::string TrainedFrozenSentence(int64_t parameters, int64_t trained,
                                  const RunConfig& config, bool buckets) {
  if (trained >= parameters) return "";
  BytesPerParameter b = BytesPerParameterOf(config);
  if (!buckets) b.buckets = 0;
  std::string each = std::to_string(b.State()) + " bytes each: weights " +
                     std::to_string(b.weights) + " + gradients " +
                     std::to_string(b.gradients) + " + optimizer " +
                     std::to_string(b.optimizer);
  if (b.buckets > 0) each += " + DDP buckets " + std::to_string(b.buckets);
  if (config.ddp.zero_stage == 1) each += ", before ZeRO-1's partition";
  if (config.lora.rank > 0) {
    // Note [LoRA adapters]: the trained parameters are the adapters; under
    // bf16-autocast the frozen base is stored in bfloat16.
    const int64_t base_bytes =
        config.train.dtype == "bf16-autocast" ? 2 : b.weights;
    return "base " + GroupedInteger(parameters - trained) +
           " parameters frozen (" + std::to_string(base_bytes) +
           " bytes each: the weight alone); adapters " +
           GroupedInteger(trained) + " parameters trained (" + each + ")";
  }
  return GroupedInteger(parameters) +
         " parameters: " + GroupedInteger(trained) + " trained (" + each +
         "), " + GroupedInteger(parameters - trained) + " frozen (" +
         std::to_string(b.weights) + " bytes each: the weight alone)";
}

const char* ComparedFigure(Category category) {
  return category == Category::kTemporaries ? "measured_bytes" : "peak_bytes";
}

}  // namespace memprof
