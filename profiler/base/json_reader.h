// Checked reading of one JSON document: every accessor either returns a
// value of the expected type and range or throws InputError
// "ORIGIN: WHERE: REASON; REMEDY", ORIGIN naming the file and WHERE the JSON
// path ("steps[2].breakdown.weights"). The one way memprof reads its own
// JSON files (rank reports, baselines), so every reader refuses the same
// inputs with the same words. No input crashes it: containers are never
// dumped into a message.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

namespace memprof {

// Arrays and objects inside one another, at most (rank reports nest 4,
// baselines 5).
inline constexpr int kMaxJsonDepth = 32;

class JsonReader {
 public:
  using Json = nlohmann::ordered_json;

  JsonReader(std::string origin, std::string remedy)
      : origin_(std::move(origin)), remedy_(std::move(remedy)) {}

  [[noreturn]] void Fail(const std::string& where,
                         const std::string& reason) const;

  // "the file ends early (truncated?)", "not valid JSON" (also for a NUL
  // byte), "nested deeper than kMaxJsonDepth" (memprof's files nest a few
  // levels; a deeper document, a 100,000-deep array, stops where it goes
  // past, so that nothing recursive ever walks it), or a member named twice
  // (Note [JSON members]), whichever comes first in the text.
  Json Parse(const std::string& text) const;

  // Requires an object whose "schema" is of `expected`'s family and major
  // version (schema_version.h).
  void Schema(const Json& doc, const std::string& expected) const;

  const Json& Member(const Json& object, const std::string& where,
                     const std::string& key) const;
  const Json& Object(const Json& object, const std::string& where,
                     const std::string& key) const;
  const Json& Array(const Json& object, const std::string& where,
                    const std::string& key) const;
  // The element itself when it is an object (arrays of records).
  const Json& ObjectAt(const Json& array, const std::string& where,
                       size_t i) const;
  std::string String(const Json& object, const std::string& where,
                     const std::string& key) const;
  bool Bool(const Json& object, const std::string& where,
            const std::string& key) const;
  // A finite number (integers included).
  double Number(const Json& object, const std::string& where,
                const std::string& key) const;
  int64_t Integer(const Json& object, const std::string& where,
                  const std::string& key, int64_t min, int64_t max) const;
  int64_t Integer(const Json& value, const std::string& where, int64_t min,
                  int64_t max) const;
  // A byte count: an integer in [0, INT64_MAX].
  int64_t Bytes(const Json& object, const std::string& where,
                const std::string& key) const {
    return Integer(object, where, key, 0, std::numeric_limits<int64_t>::max());
  }

  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  std::string remedy_;
};

// "where.key", or "key" at the top.
std::string JsonPath(const std::string& where, const std::string& key);
// "where[i]".
std::string JsonElement(const std::string& where, size_t i);
// A JSON value in an error message ("'abc'", "42", "an object").
std::string DescribeJson(const nlohmann::ordered_json& value);

}  // namespace memprof
