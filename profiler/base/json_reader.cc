#include "profiler/base/json_reader.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_set>
#include <utility>
#include <vector>

#include "profiler/base/errors.h"
#include "profiler/base/schema_version.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

std::string Shorten(const std::string& text) {
  constexpr size_t kShown = 40;
  return text.size() > kShown ? text.substr(0, kShown) + "..." : text;
}

// nlohmann's message without its "[json.exception.parse_error.101] " tag,
// and at most 300 characters: it quotes the token it stopped at, which can
// be a number of 100,000 digits.
std::string Untagged(const std::string& what) {
  constexpr size_t kShown = 300;
  const size_t end = what.find("] ");
  std::string text = end == std::string::npos ? what : what.substr(end + 2);
  if (text.size() > kShown) {
    text = text.substr(0, kShown / 2) + " [... " +
           std::to_string(text.size() - kShown) + " characters ...] " +
           text.substr(text.size() - kShown / 2);
  }
  return text;
}

// Note [JSON members]
// A document is built by this SAX handler rather than by Json::parse, for
// two reasons. An ordered_json object looks each new member up among the
// ones before it, so parsing an object of n members takes n^2 / 2 string
// comparisons: 200,000 members (3.4 MB) took 31 s, 2 million (38 MB, under
// the rank report's cap) over a minute. And a member named twice would be
// the last one silently: a baseline's "tolerances" with "weights": "0%" and
// then "weights": "1000%" gated at 1000% while a reviewer read 0%. Here
// each object keeps a hash set of its names: a name seen twice is refused
// with its JSON path, and every other member is appended without a search,
// so any document parses in time linear in its size.
class DocumentBuilder : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return Value(nullptr); }
  bool boolean(bool value) override { return Value(value); }
  bool number_integer(number_integer_t value) override { return Value(value); }
  bool number_unsigned(number_unsigned_t value) override {
    return Value(value);
  }
  bool number_float(number_float_t value, const string_t&) override {
    return Value(value);
  }
  bool string(string_t& value) override { return Value(std::move(value)); }
  bool binary(binary_t& value) override {
    return Value(Json::binary(std::move(value)));
  }
  bool start_object(std::size_t) override { return Open(Json::object()); }
  bool key(string_t& name) override {
    Frame& frame = open_.back();
    if (!frame.names.insert(name).second) {
      duplicate_ = JsonPath(frame.where, name);
      return false;
    }
    frame.key = std::move(name);
    return true;
  }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(Json::array()); }
  bool end_array() override { return Close(); }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& e) override {
    // Rethrown as the exception Json::parse would have thrown.
    if (const auto* p = dynamic_cast<const Json::parse_error*>(&e)) throw *p;
    if (const auto* o = dynamic_cast<const Json::out_of_range*>(&e)) throw *o;
    throw std::runtime_error(e.what());
  }

  Json& document() { return document_; }
  // The path of the member named twice, "" when none was.
  const std::string& duplicate() const { return duplicate_; }
  // Arrays and objects opened inside kMaxJsonDepth others.
  bool too_deep() const { return too_deep_; }

 private:
  struct Frame {
    Json* container;
    std::string where;                      // its JSON path
    std::unordered_set<std::string> names;  // an object's members so far
    std::string key;                        // the member being read
  };

  // The JSON path of the next value (made for containers only: a scalar's
  // is never needed).
  std::string NextPath() const {
    if (open_.empty()) return "";
    const Frame& frame = open_.back();
    return frame.container->is_array()
               ? JsonElement(frame.where, frame.container->size())
               : JsonPath(frame.where, frame.key);
  }
  // Where the next value goes: the document, the open array's end, or the
  // open object's member `key` (known new: appended without a search).
  Json& Slot() {
    if (open_.empty()) return document_;
    Frame& frame = open_.back();
    Json& container = *frame.container;
    if (container.is_array()) {
      container.push_back(nullptr);
      return container.back();
    }
    auto& members =
        static_cast<std::vector<std::pair<const std::string, Json>>&>(
            container.get_ref<Json::object_t&>());
    members.emplace_back(frame.key, nullptr);
    return members.back().second;
  }
  template <typename T>
  bool Value(T&& value) {
    Slot() = std::forward<T>(value);
    return true;
  }
  bool Open(Json empty) {
    if (open_.size() >= static_cast<size_t>(kMaxJsonDepth)) {
      too_deep_ = true;
      return false;
    }
    std::string where = NextPath();
    Json& slot = Slot();
    slot = std::move(empty);
    open_.push_back({&slot, std::move(where), {}, {}});
    return true;
  }
  bool Close() {
    open_.pop_back();
    return true;
  }

  Json document_;
  std::vector<Frame> open_;
  std::string duplicate_;
  bool too_deep_ = false;
};

}  // namespace

std::string JsonPath(const std::string& where, const std::string& key) {
  return where.empty() ? key : where + "." + key;
}

std::string JsonElement(const std::string& where, size_t i) {
  return where + "[" + std::to_string(i) + "]";
}

std::string DescribeJson(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case Json::value_t::string:
      return "'" + Shorten(value.get_ref<const std::string&>()) + "'";
    case Json::value_t::number_float: {
      // 64.0, or an integer too large for 64 bits: a number, not a fraction.
      const double number = value.get<double>();
      return (std::isfinite(number) && number == std::floor(number)
                  ? "the number "
                  : "the fraction ") +
             value.dump();
    }
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return value.dump();
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "a binary value";
  }
}

void JsonReader::Fail(const std::string& where,
                      const std::string& reason) const {
  throw InputError(origin_ + ": " + (where.empty() ? "" : where + ": ") +
                   reason + "; " + remedy_);
}

Json JsonReader::Parse(const std::string& text) const {
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    Fail("", "not valid JSON: a NUL byte at byte " + std::to_string(nul) +
                 " (binary data, not JSON text)");
  }
  try {
    // Note [JSON members]. Nesting is counted as it opens: a document
    // nested deeper than kMaxJsonDepth (a 100,000-deep array) stops there,
    // so that nothing recursive ever walks it.
    DocumentBuilder builder;
    if (!Json::sax_parse(text, &builder)) {
      if (builder.too_deep()) {
        Fail("", "arrays and objects nested deeper than " +
                     std::to_string(kMaxJsonDepth) +
                     " levels; memprof's files nest a few");
      }
      Fail(builder.duplicate(),
           "a member named twice; each name once, or which value holds is "
           "a guess");
    }
    return std::move(builder.document());
  } catch (const Json::parse_error& e) {
    // Ended inside a value, not at a wrong closing bracket ("1,}": the
    // '}' after a trailing comma is the file's last byte, yet nothing is
    // missing).
    const size_t last = text.find_last_not_of(" \t\r\n");
    const bool closed = last != std::string::npos &&
                        (text[last] == '}' || text[last] == ']') &&
                        e.byte > last;
    const bool truncated =
        std::string(e.what()).find("unexpected end of input") !=
            std::string::npos ||
        (e.byte >= text.size() && !closed);
    Fail("", std::string(truncated ? "the file ends early (truncated?): "
                                   : "not valid JSON: ") +
                 Untagged(e.what()));
  } catch (const Json::exception& e) {
    // out_of_range 406: a number too large for a double ("1e400").
    Fail("", "not valid JSON: " + Untagged(e.what()));
  }
}

void JsonReader::Schema(const Json& doc, const std::string& expected) const {
  if (!doc.is_object()) {
    Fail("", "expected a JSON object, got " + DescribeJson(doc));
  }
  const std::string found = String(doc, "", "schema");
  const std::string mismatch = SchemaMismatch(found, expected);
  if (mismatch.empty()) return;
  std::string hint;
  if (SchemaMismatch(found, kRankSchema).empty()) {
    hint = " (this is a rank report)";
  } else if (SchemaMismatch(found, kBaselineSchema).empty()) {
    hint = " (this is a baseline)";
  }
  Fail("schema", mismatch + hint);
}

const Json& JsonReader::Member(const Json& object, const std::string& where,
                               const std::string& key) const {
  const auto it = object.find(key);
  if (it == object.end()) Fail(where, "missing '" + key + "'");
  return *it;
}

const Json& JsonReader::Object(const Json& object, const std::string& where,
                               const std::string& key) const {
  const Json& value = Member(object, where, key);
  if (!value.is_object()) {
    Fail(JsonPath(where, key),
         "expected an object, got " + DescribeJson(value));
  }
  return value;
}

const Json& JsonReader::Array(const Json& object, const std::string& where,
                              const std::string& key) const {
  const Json& value = Member(object, where, key);
  if (!value.is_array()) {
    Fail(JsonPath(where, key), "expected an array, got " + DescribeJson(value));
  }
  return value;
}

const Json& JsonReader::ObjectAt(const Json& array, const std::string& where,
                                 size_t i) const {
  const Json& value = array[i];
  if (!value.is_object()) {
    Fail(JsonElement(where, i),
         "expected an object, got " + DescribeJson(value));
  }
  return value;
}

std::string JsonReader::String(const Json& object, const std::string& where,
                               const std::string& key) const {
  const Json& value = Member(object, where, key);
  if (!value.is_string()) {
    Fail(JsonPath(where, key), "expected a string, got " + DescribeJson(value));
  }
  return value.get<std::string>();
}

bool JsonReader::Bool(const Json& object, const std::string& where,
                      const std::string& key) const {
  const Json& value = Member(object, where, key);
  if (!value.is_boolean()) {
    Fail(JsonPath(where, key),
         "expected true or false, got " + DescribeJson(value));
  }
  return value.get<bool>();
}

double JsonReader::Number(const Json& object, const std::string& where,
                          const std::string& key) const {
  const Json& value = Member(object, where, key);
  if (!value.is_number() || !std::isfinite(value.get<double>())) {
    Fail(JsonPath(where, key), "expected a number, got " + DescribeJson(value));
  }
  return value.get<double>();
}

int64_t JsonReader::Integer(const Json& object, const std::string& where,
                            const std::string& key, int64_t min,
                            int64_t max) const {
  return Integer(Member(object, where, key), JsonPath(where, key), min, max);
}

int64_t JsonReader::Integer(const Json& value, const std::string& where,
                            int64_t min, int64_t max) const {
  const std::string range = "an integer in [" + std::to_string(min) + ", " +
                            std::to_string(max) + "]";
  if (!value.is_number_integer()) {
    Fail(where, "expected " + range + ", got " + DescribeJson(value));
  }
  // Parsed non-negative integers are unsigned: compare before narrowing.
  const bool in_range =
      value.is_number_unsigned()
          ? max >= 0 && value.get<uint64_t>() <= static_cast<uint64_t>(max) &&
                (min <= 0 ||
                 value.get<uint64_t>() >= static_cast<uint64_t>(min))
          : value.get<int64_t>() >= min && value.get<int64_t>() <= max;
  if (!in_range) {
    Fail(where, "expected " + range + ", got " + DescribeJson(value));
  }
  return value.get<int64_t>();
}

}  // namespace memprof
