// A JSON document written in parts straight to its file, as JSON text or
// as a pickle (Note [Pickle writer]), so that a document of a million
// events costs a buffer, not a tree: the caller opens objects and arrays,
// names keys, and hands over small values whole. Like WriteFileAtomically,
// the content goes to a temporary name and is renamed over the target only
// by Commit: a document is never left half-written.
//
// JSON text puts each element of the outer two levels on its own line;
// pickle batches APPENDS every 1000 items, as Python's pickler does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace memprof {

enum class DocumentFormat { kJson, kPickle };

class DocumentWriter {
 public:
  // Throws std::runtime_error naming the path when it cannot be written.
  DocumentWriter(const std::string& path, DocumentFormat format);
  DocumentWriter(const DocumentWriter&) = delete;
  DocumentWriter& operator=(const DocumentWriter&) = delete;
  ~DocumentWriter();  // without Commit: removes the temporary file

  void BeginObject();
  void EndObject();
  void BeginArray();
  void EndArray();
  // Inside an object: the next value's key.
  void Key(const std::string& key);
  // A whole value (an array element, or the value of the last Key).
  void Value(const nlohmann::ordered_json& value);
  // Flushes, syncs and renames the file onto the target.
  void Commit();
  int64_t bytes_written() const { return written_; }

 private:
  struct Level {
    bool object = false;
    int64_t items = 0;  // in this level (in the current batch for pickle)
  };
  void BeforeItem();  // separators (JSON) or batch marks (pickle)
  void Flush();

  std::string path_;
  std::string temp_;
  DocumentFormat format_;
  int fd_ = -1;
  std::string buffer_;
  std::vector<Level> levels_;
  bool after_key_ = false;
  int64_t written_ = 0;
  bool committed_ = false;
};

}  // namespace memprof
