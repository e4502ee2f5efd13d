// A model's size table, after llm.c's fill_in_parameter_sizes and
// fill_in_activation_sizes: one row per parameter tensor, module buffer,
// tensor saved for backward and input tensor, with its shape in the
// config's terms and its dtype, plus the transient tensors live at the
// moment the model's backward peaks (its workspace). The prediction
// (profiler/predict/prediction.h) is a sum over this table; tests keep it in
// step with the built modules. Pure arithmetic: no tensors.
#pragma once

#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "profiler/base/run_config.h"

namespace memprof {

// The largest byte count memprof predicts or writes (Note [Countable
// sizes]): 2^53, the largest integer a JSON number holds exactly.
inline constexpr int64_t kMaxCountableBytes = int64_t{1} << 53;

// A shape or a sum of them past kMaxCountableBytes.
class SizeOverflow : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class RowKind : uint8_t {
  kParameter,  // weights; also gradients x1, Adam x2, DDP buckets x1
  kBuffer,     // module buffer: weights, no gradient
  kSaved,      // saved for backward: activations
  // Saved again by a checkpointed block's rerun in backward (activations
  // while that block's backward runs; SizeRow::block names the block).
  kRecomputed,
  kInput,  // the batch: inputs
  // Transient at a predicted backward peak: temporaries. SizeRow::block
  // kEveryBlock: early in backward; a block: in that checkpointed block's
  // backward, just after its rerun; kNoBlock: late in backward, after
  // every block's.
  kWorkspace,
  // bf16-autocast: a bfloat16 copy of a weight (weight_casts; Note [Weight
  // casts] in profiler/train/weight_casts.h). SizeRow::block: held by the
  // graph until that block's backward, as a kSaved row; kForwardOnly:
  // autocast's cache holds it until the forward's region ends.
  kWeightCast,
  // bf16-autocast: a copy a checkpointed block's rerun makes, held during
  // that block's backward (SizeRow::block).
  kRecomputedCast,
};

enum class Dtype : uint8_t { kFloat32, kInt64, kBool, kBFloat16 };

// train.dtype: float32; bf16-autocast (float32 model state, bfloat16
// copies of the weights and mostly bfloat16 activations); bfloat16 (every
// floating tensor in bfloat16).
enum class Precision : uint8_t { kFloat32, kAutocast, kBfloat16 };

// Expects a validated dtype.
Precision PrecisionOf(const TrainConfig& train);

// The dtypes a table's floating rows take under `precision`.
struct RowDtypes {
  explicit RowDtypes(Precision precision)
      : state(precision == Precision::kBfloat16 ? Dtype::kBFloat16
                                                : Dtype::kFloat32),
        low(precision == Precision::kFloat32 ? Dtype::kFloat32
                                             : Dtype::kBFloat16),
        autocast(precision == Precision::kAutocast) {}
  // Parameters, buffers, float inputs, and what ops outside autocast's
  // lists make from them (layer norm, embeddings, the loss).
  Dtype state;
  // What an op autocast runs in bfloat16 makes (a Linear's output) and
  // what follows from it.
  Dtype low;
  bool autocast;
};

int64_t DtypeBytes(Dtype dtype);
const char* DtypeName(Dtype dtype);

struct SizeRow {
  std::string name;  // parameters and buffers: as named_parameters() names them
  RowKind kind = RowKind::kParameter;
  std::vector<int64_t> shape;
  std::string terms;  // the shape in the config's symbols: "[3d, d]"
  Dtype dtype = Dtype::kFloat32;
  // In tables with blocks (Note [Checkpointed activations]): a kSaved row
  // held until the backward of block `block` (kEveryBlock: until after
  // every block's; kNoBlock: freed before the first; kHead: freed before
  // the output projection's gradients, Note [Head backward]), or the block
  // whose rerun saves a kRecomputed row, or in whose backward a kWorkspace
  // row is live (kHead: the output projection's).
  int32_t block = kEveryBlock;
  static constexpr int32_t kEveryBlock = -1;
  static constexpr int32_t kNoBlock = INT32_MAX;
  static constexpr int32_t kHead = INT32_MAX - 1;
  static constexpr int32_t kForwardOnly = INT32_MIN;  // kWeightCast rows
  // Note [Block stages]: a kWorkspace row of a block is live in stage
  // `stage` of the block's backward; a kSaved or kRecomputed row of a
  // block is held through stage `freed_after` of it (kWholeBlock: through
  // its whole backward).
  int32_t stage = 0;
  int32_t freed_after = kWholeBlock;
  static constexpr int32_t kWholeBlock = INT32_MAX;
  // The named scope whose forward allocates the row: a block's
  // parameter-name prefix ("h.3"), as the model names the scope it runs
  // the block in (models/scope_observer.h); "": outside every block. It
  // can differ from `block`: a block's input is saved by that block but
  // allocated by the block before it.
  std::string scope;
  // kParameter: train.freeze covers it (Note [Frozen parameters] in
  // profiler/base/frozen_parameters.h): weights only.
  bool frozen = false;
  // kParameter: a LoRA adapter's A or B (Note [LoRA adapters] in
  // models/lora_rows.h); trained, in the weights' `adapters` sub-row.
  bool adapter = false;
  // kSaved and kWorkspace rows (Note [Frozen activations] in
  // models/frozen_rows.h): the row is there only while autograd needs it,
  // when a parameter up to `upstream` in the forward
  // (SizeTable::forward_order) is trained, or one of `needed_for`. Both
  // empty: whenever anything is trained.
  std::string upstream;
  std::vector<std::string> needed_for;

  // Both throw SizeOverflow past kMaxCountableBytes.
  int64_t Elements() const;
  int64_t Bytes() const;
};

struct SizeTable {
  std::string symbols;  // what the symbols in `terms` stand for
  std::vector<SizeRow> rows;

  // Throws SizeOverflow when the row's bytes are not countable.
  void Add(std::string name, RowKind kind, std::vector<int64_t> shape,
           std::string terms, Dtype dtype = Dtype::kFloat32);
  // The rows added since row `first` (rows.size() before them) belong to
  // `block` (SizeRow::block).
  void SetBlock(size_t first, int32_t block);
  // The rows added since row `first` are allocated in scope `scope`
  // (SizeRow::scope).
  void SetScope(size_t first, const std::string& scope);
  int64_t Elements(RowKind kind) const;
  int64_t Bytes(RowKind kind) const;
  // Parameter elements that are trained (not SizeRow::frozen).
  int64_t TrainedElements() const;
  // The parameters in the order the forward first uses them; empty: the
  // parameter rows' order (Note [Frozen activations]).
  std::vector<std::string> forward_order;
  // The last row added is needed only when a parameter up to `upstream`
  // in the forward, or one of `needed_for`, is trained (SizeRow::upstream).
  void NeededWhen(std::string upstream,
                  std::vector<std::string> needed_for = {});
  // Blocks whose backward is a predicted moment, 0 .. blocks - 1:
  // checkpointed blocks, GPT's blocks, Llama's layers, or the MLP's hidden
  // layers; 0: none.
  int32_t blocks = 0;
  // Note [Block stages]
  // A block's backward runs node by node: its saved tensors are freed as
  // the nodes that saved them finish, and the gradients each node makes
  // differ. Which node peaks depends on the shapes and on what is frozen
  // (a frozen weight makes no gradient and keeps no input), so a table
  // gives each block the same stages, in the order backward reaches them,
  // each a predicted moment: its kWorkspace rows (SizeRow::stage) beside
  // the block's saved rows not yet freed (SizeRow::freed_after) and every
  // earlier block's. Empty: one stage, 0. The prediction takes the
  // busiest (block, stage).
  std::vector<std::string> stages;
  // The rows added since row `first` are live in stage `stage`.
  void SetStage(size_t first, int32_t stage);
  // The last row added is freed after stage `stage` of its block.
  void FreedAfter(int32_t stage);
  // The largest single parameter tensor, in bytes; `trained`: of the
  // trained ones only.
  int64_t LargestParameterBytes(bool trained = false) const;
  // Throws SizeOverflow unless 16 times the table's bytes is countable.
  void RequireCountable() const;
};

// The table of config.model at `micro_batch` samples per rank. Expects a
// validated config.
// Checkpointed blocks when config.train.activation_checkpointing is blocks;
// train.freeze applied (models/frozen_rows.h). `cpu_threads`: a CPU
// rank's threads where known; 0: CpuThreadsPerRank's
// (profiler/base/cpu_threads.h).
SizeTable BuildSizeTable(const RunConfig& config, int64_t micro_batch,
                         int cpu_threads = 0);

SizeTable MlpSizeTable(const MlpConfig& config, int64_t micro_batch,
                       Precision precision = Precision::kFloat32);
SizeTable GptSizeTable(const GptConfig& config, int64_t micro_batch,
                       bool checkpoint_blocks = false,
                       Precision precision = Precision::kFloat32);
// `cpu_threads`: the threads of a CPU rank (profiler/base/cpu_threads.h),
// whose attention backward takes per-thread buffers; 0 on a GPU.
SizeTable LlamaSizeTable(const LlamaConfig& config, int64_t micro_batch,
                         bool checkpoint_blocks = false,
                         Precision precision = Precision::kFloat32,
                         int cpu_threads = 1);
SizeTable ResnetSizeTable(const ResnetConfig& config, int64_t micro_batch,
                          bool checkpoint_blocks = false,
                          Precision precision = Precision::kFloat32);

}  // namespace memprof
