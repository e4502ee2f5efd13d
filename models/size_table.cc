#include "models/size_table.h"

#include <algorithm>

namespace memprof {

int64_t DtypeBytes(Dtype dtype) {
  switch (dtype) {
    case Dtype::kFloat32:
      return 4;
    case Dtype::kInt64:
      return 8;
    case Dtype::kBool:
      return 1;
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
  }
  return "?";
}

int64_t SizeRow::Elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t SizeRow::Bytes() const { return Elements() * DtypeBytes(dtype); }

void SizeTable::Add(std::string name, RowKind kind, std::vector<int64_t> shape,
                    std::string terms, Dtype dtype) {
  rows.push_back(SizeRow{std::move(name), kind, std::move(shape),
                         std::move(terms), dtype});
}

int64_t SizeTable::Elements(RowKind kind) const {
  int64_t n = 0;
  for (const SizeRow& row : rows) {
    if (row.kind == kind) n += row.Elements();
  }
  return n;
}

int64_t SizeTable::Bytes(RowKind kind) const {
  int64_t n = 0;
  for (const SizeRow& row : rows) {
    if (row.kind == kind) n += row.Bytes();
  }
  return n;
}

int64_t SizeTable::LargestParameterBytes() const {
  int64_t largest = 0;
  for (const SizeRow& row : rows) {
    if (row.kind == RowKind::kParameter)
      largest = std::max(largest, row.Bytes());
  }
  return largest;
}

SizeTable BuildSizeTable(const RunConfig& config, int64_t micro_batch) {
  if (config.model == "gpt") return GptSizeTable(config.gpt, micro_batch);
  if (config.model == "resnet") {
    return ResnetSizeTable(config.resnet, micro_batch);
  }
  return MlpSizeTable(config.mlp, micro_batch);
}

}  // namespace memprof
