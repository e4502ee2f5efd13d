#include "models/size_table.h"

#include <algorithm>
#include <string>

#include "models/frozen_rows.h"
#include "models/lora_rows.h"
#include "profiler/base/cpu_threads.h"
#include "profiler/base/frozen_parameters.h"
#include "profiler/base/human_bytes.h"

namespace memprof {

int64_t DtypeBytes(Dtype dtype) {
  switch (dtype) {
    case Dtype::kFloat32:
      return 4;
    case Dtype::kInt64:
      return 8;
    case Dtype::kBool:
      return 1;
    case Dtype::kBFloat16:
      return 2;
  }
  return 0;
}

const char* DtypeName(Dtype dtype) {
  switch (dtype) {
    case Dtype::kFloat32:
      return "float32";
    case Dtype::kInt64:
      return "int64";
    case Dtype::kBool:
      return "bool";
    case Dtype::kBFloat16:
      return "bfloat16";
  }
  return "?";
}

namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return text + "]";
}

}  // namespace

// Note [Countable sizes]
// Every figure memprof predicts or writes is a byte count that must fit
// exactly where it goes: an int64 here, and a JSON number in the reports,
// which most readers (JavaScript, jq, Python's float paths) hold exactly
// only up to 2^53. The config's size keys are bounded first (each at most
// 2^31 - 1, layer counts at most 10,000: models/config_validation.cc), so
// that a shape's own entries (3d, B*h, B*T) cannot overflow; each row's
// elements and bytes are multiplied here with overflow checks, and the
// table as a whole must stay within kMaxCountableBytes / 16, so that
// everything derived from it (Adam's 16 bytes per parameter, the peak, a
// sum over categories) stays within 2^53.
int64_t SizeRow::Elements() const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, d, &n) || n > kMaxCountableBytes) {
      throw SizeOverflow("'" + name + "' " + terms + " = " + ShapeText(shape) +
                         " holds more than 2^53 elements");
    }
  }
  return n;
}

int64_t SizeRow::Bytes() const {
  int64_t bytes = 0;
  if (__builtin_mul_overflow(Elements(), DtypeBytes(dtype), &bytes) ||
      bytes > kMaxCountableBytes) {
    throw SizeOverflow("'" + name + "' " + terms + " = " + ShapeText(shape) +
                       " takes more than 2^53 bytes");
  }
  return bytes;
}

void SizeTable::Add(std::string name, RowKind kind, std::vector<int64_t> shape,
                    std::string terms, Dtype dtype) {
  SizeRow row;
  row.name = std::move(name);
  row.kind = kind;
  row.shape = std::move(shape);
  row.terms = std::move(terms);
  row.dtype = dtype;
  rows.push_back(std::move(row));
  try {
    (void)rows.back().Bytes();  // Note [Countable sizes]
  } catch (const SizeOverflow& e) {
    throw SizeOverflow(std::string(e.what()) + ", where " + symbols);
  }
}

namespace {

// A sum of row figures, refused past kMaxCountableBytes.
int64_t CheckedSum(int64_t sum, int64_t more, const char* what) {
  if (__builtin_add_overflow(sum, more, &sum) || sum > kMaxCountableBytes) {
    throw SizeOverflow(std::string("the model's ") + what +
                       " add up to more than 2^53");
  }
  return sum;
}

}  // namespace

void SizeTable::SetBlock(size_t first, int32_t block) {
  for (size_t r = first; r < rows.size(); ++r) rows[r].block = block;
}

void SizeTable::SetStage(size_t first, int32_t stage) {
  for (size_t r = first; r < rows.size(); ++r) rows[r].stage = stage;
}

void SizeTable::FreedAfter(int32_t stage) { rows.back().freed_after = stage; }

void SizeTable::SetScope(size_t first, const std::string& scope) {
  for (size_t r = first; r < rows.size(); ++r) rows[r].scope = scope;
}

int64_t SizeTable::Elements(RowKind kind) const {
  int64_t n = 0;
  for (const SizeRow& row : rows) {
    if (row.kind == kind) n = CheckedSum(n, row.Elements(), "elements");
  }
  return n;
}

int64_t SizeTable::TrainedElements() const {
  int64_t n = 0;
  for (const SizeRow& row : rows) {
    if (row.kind == RowKind::kParameter && !row.frozen)
      n = CheckedSum(n, row.Elements(), "elements");
  }
  return n;
}

void SizeTable::NeededWhen(std::string upstream,
                           std::vector<std::string> needed_for) {
  rows.back().upstream = std::move(upstream);
  rows.back().needed_for = std::move(needed_for);
}

int64_t SizeTable::Bytes(RowKind kind) const {
  int64_t n = 0;
  for (const SizeRow& row : rows) {
    if (row.kind == kind) n = CheckedSum(n, row.Bytes(), "bytes");
  }
  return n;
}

void SizeTable::RequireCountable() const {
  int64_t total = 0;
  for (const SizeRow& row : rows)
    total = CheckedSum(total, row.Bytes(), "bytes");
  if (total > kMaxCountableBytes / 16) {
    throw SizeOverflow(
        "its tensors take " + HumanBytes(total) + ", more than the " +
        HumanBytes(kMaxCountableBytes / 16) +
        " (2^53 / 16 bytes) memprof counts exactly, so that every figure "
        "derived from them (gradients, Adam's state, the sums over "
        "categories) stays within 2^53");
  }
}

int64_t SizeTable::LargestParameterBytes(bool trained) const {
  int64_t largest = 0;
  for (const SizeRow& row : rows) {
    if (row.kind == RowKind::kParameter && !(trained && row.frozen))
      largest = std::max(largest, row.Bytes());
  }
  return largest;
}

Precision PrecisionOf(const TrainConfig& train) {
  if (train.dtype == "bf16-autocast") return Precision::kAutocast;
  if (train.dtype == "bfloat16") return Precision::kBfloat16;
  return Precision::kFloat32;
}

namespace {

SizeTable ModelSizeTable(const RunConfig& config, int64_t micro_batch,
                         int cpu_threads) {
  const bool checkpoint_blocks =
      config.train.activation_checkpointing == "blocks";
  const Precision precision = PrecisionOf(config.train);
  if (config.model == "gpt") {
    return GptSizeTable(config.gpt, micro_batch, checkpoint_blocks, precision);
  }
  if (config.model == "llama") {
    const int threads =
        config.train.device != "cpu"
            ? 0
            : (cpu_threads > 0 ? cpu_threads
                               : CpuThreadsPerRank(config.ddp.world_size));
    return LlamaSizeTable(config.llama, micro_batch, checkpoint_blocks,
                          precision, threads);
  }
  if (config.model == "resnet") {
    return ResnetSizeTable(config.resnet, micro_batch, checkpoint_blocks,
                           precision);
  }
  return MlpSizeTable(config.mlp, micro_batch, precision);
}

}  // namespace

SizeTable BuildSizeTable(const RunConfig& config, int64_t micro_batch,
                         int cpu_threads) {
  SizeTable table = ModelSizeTable(config, micro_batch, cpu_threads);
  if (config.lora.rank > 0) ApplyLora(config, table);
  const std::vector<std::string> frozen = FreezePrefixes(config.train.freeze);
  if (!frozen.empty()) ApplyFreezing(frozen, table);
  return table;
}

}  // namespace memprof
