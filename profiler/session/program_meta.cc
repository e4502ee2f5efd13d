#include "profiler/session/program_meta.h"

#include <filesystem>

#include "profiler/base/atomic_file.h"
#include "profiler/base/errors.h"
#include "profiler/base/json_reader.h"
#include "profiler/base/regular_file.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kRemedy =
    "delete it; 'memprof report --run' then recovers the rank without its "
    "predictions";
// A program's table: a row per tracked tensor, a few hundred bytes each.
constexpr int64_t kMaxMetaBytes = int64_t{256} << 20;
// An ending's text at most: an exception's what() can be long (a
// LibTorch error carries its stack).
constexpr size_t kMaxEndingText = 4096;

const char* KindName(RowKind kind) {
  return kind == RowKind::kBuffer ? "buffer" : "parameter";
}

Dtype DtypeNamed(const JsonReader& r, const std::string& where,
                 const std::string& name) {
  for (Dtype d :
       {Dtype::kFloat32, Dtype::kInt64, Dtype::kBool, Dtype::kBFloat16}) {
    if (name == DtypeName(d)) return d;
  }
  r.Fail(where, "unknown dtype '" + name + "'");
}

}  // namespace

std::string ProgramMetaPath(const std::string& capture_path) {
  std::filesystem::path path(capture_path);
  path.replace_extension(".program.json");
  return path.string();
}

std::string ProgramEndingPath(const std::string& capture_path) {
  std::filesystem::path path(capture_path);
  path.replace_extension(".ending");
  return path.string();
}

void WriteProgramEnding(const std::string& path, int64_t pid,
                        int64_t session_start_unix_us,
                        const std::string& text) {
  try {
    WriteFileAtomically(path, std::to_string(pid) + " " +
                                  std::to_string(session_start_unix_us) + "\n" +
                                  text.substr(0, kMaxEndingText));
  } catch (...) {
  }
}

std::string ReadProgramEnding(const std::string& path, int64_t pid,
                              int64_t session_start_unix_us) {
  std::string text;
  try {
    text = ReadRegularFile(path, "", kMaxEndingText + 64, "");
  } catch (const std::exception&) {
    return "";
  }
  const std::string session =
      std::to_string(pid) + " " + std::to_string(session_start_unix_us) + "\n";
  if (text.rfind(session, 0) != 0) return "";
  return text.substr(session.size());
}

void WriteProgramMeta(const ProgramMeta& meta, const std::string& path) {
  Json rows = Json::array();
  for (const SizeRow& row : meta.table.rows) {
    rows.push_back({{"name", row.name},
                    {"kind", KindName(row.kind)},
                    {"shape", row.shape},
                    {"dtype", DtypeName(row.dtype)},
                    {"frozen", row.frozen}});
  }
  const Json doc = {{"context", ContextJson(meta.context)},
                    {"micro_batch", meta.micro_batch},
                    {"reducer", meta.reducer},
                    {"rows", rows}};
  WriteFileAtomically(path, doc.dump() + "\n");
}

std::optional<ProgramMeta> ReadProgramMeta(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return std::nullopt;
  const JsonReader r(path, kRemedy);
  const Json doc =
      r.Parse(ReadRegularFile(path, "program meta", kMaxMetaBytes, kRemedy));
  ProgramMeta meta;
  meta.context = ContextFromJson(r.Object(doc, "", "context"), path);
  meta.micro_batch = r.Bytes(doc, "", "micro_batch");
  meta.reducer = r.Bool(doc, "", "reducer");
  meta.table.symbols = "the program's tracked parameters and buffers";
  const Json& rows = r.Array(doc, "", "rows");
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string where = JsonElement("rows", i);
    const Json& row = r.ObjectAt(rows, where, i);
    const std::string kind = r.String(row, where, "kind");
    if (kind != "parameter" && kind != "buffer") {
      r.Fail(JsonPath(where, "kind"), "expected parameter or buffer");
    }
    std::vector<int64_t> shape;
    const Json& dims = r.Array(row, where, "shape");
    for (size_t d = 0; d < dims.size(); ++d) {
      shape.push_back(r.Integer(dims[d],
                                JsonElement(JsonPath(where, "shape"), d), 0,
                                kMaxCountableBytes));
    }
    meta.table.Add(
        r.String(row, where, "name"),
        kind == "buffer" ? RowKind::kBuffer : RowKind::kParameter,
        std::move(shape), "",
        DtypeNamed(r, JsonPath(where, "dtype"), r.String(row, where, "dtype")));
    meta.table.rows.back().frozen = r.Bool(row, where, "frozen");
  }
  return meta;
}

Prediction PredictProgram(const RunConfig& config, SizeTable table,
                          int64_t micro_batch, int rank, bool reducer) {
  Prediction p = PredictFromTable(config, std::move(table), micro_batch, rank);
  if (!reducer) {
    const int buckets = Index(Category::kDdpBuckets);
    p.bytes[buckets] = 0;
    for (PredictedMoment* m : p.Moments()) {
      m->bytes[buckets] = 0;
    }
    p.model_state_bytes_per_parameter =
        p.parameters > 0
            ? static_cast<double>(ModelStateBytes(p.bytes)) / p.parameters
            : 0;
  }
  return p;
}

}  // namespace memprof
