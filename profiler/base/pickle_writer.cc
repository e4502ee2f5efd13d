#include "profiler/base/pickle_writer.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace memprof {
namespace {

// Opcodes of pickle protocol 2 (Python's Lib/pickle.py).
constexpr char kProto = '\x80';
constexpr char kStop = '.';
constexpr char kMark = '(';
constexpr char kEmptyDict = '}';
constexpr char kSetItems = 'u';
constexpr char kEmptyList = ']';
constexpr char kAppends = 'e';
constexpr char kBinUnicode = 'X';
constexpr char kBinInt = 'J';
constexpr char kLong1 = '\x8a';
constexpr char kBinFloat = 'G';
constexpr char kNewTrue = '\x88';
constexpr char kNewFalse = '\x89';
constexpr char kNone = 'N';

void LittleEndian(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>(value >> (8 * i)));
}

void Str(std::string& out, const std::string& text) {
  out.push_back(kBinUnicode);
  LittleEndian(out, text.size(), 4);
  out += text;
}

// A signed integer: BININT when it fits 32 bits, else LONG1.
void Int(std::string& out, int64_t value) {
  if (value >= INT32_MIN && value <= INT32_MAX) {
    out.push_back(kBinInt);
    LittleEndian(out, static_cast<uint32_t>(value), 4);
    return;
  }
  // The fewest bytes whose two's complement holds the value.
  int bytes = 1;
  while (bytes < 8) {
    const int64_t limit = int64_t{1} << (8 * bytes - 1);
    if (value >= -limit && value < limit) break;
    ++bytes;
  }
  out.push_back(kLong1);
  out.push_back(static_cast<char>(bytes));
  LittleEndian(out, static_cast<uint64_t>(value), bytes);
}

void UnsignedInt(std::string& out, uint64_t value) {
  if (value <= INT64_MAX) return Int(out, static_cast<int64_t>(value));
  out.push_back(kLong1);
  out.push_back(9);  // a zero byte on top keeps it positive
  LittleEndian(out, value, 8);
  out.push_back('\0');
}

void Float(std::string& out, double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  out.push_back(kBinFloat);
  for (int i = 7; i >= 0; --i)
    out.push_back(static_cast<char>(bits >> (8 * i)));
}

void Value(std::string& out, const nlohmann::ordered_json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::object:
      out.push_back(kEmptyDict);
      if (value.empty()) return;
      out.push_back(kMark);
      for (const auto& [key, item] : value.items()) {
        Str(out, key);
        Value(out, item);
      }
      out.push_back(kSetItems);
      return;
    case nlohmann::json::value_t::array:
      out.push_back(kEmptyList);
      if (value.empty()) return;
      out.push_back(kMark);
      for (const auto& item : value) Value(out, item);
      out.push_back(kAppends);
      return;
    case nlohmann::json::value_t::string:
      return Str(out, value.get_ref<const std::string&>());
    case nlohmann::json::value_t::number_integer:
      return Int(out, value.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return UnsignedInt(out, value.get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return Float(out, value.get<double>());
    case nlohmann::json::value_t::boolean:
      out.push_back(value.get<bool>() ? kNewTrue : kNewFalse);
      return;
    case nlohmann::json::value_t::null:
      out.push_back(kNone);
      return;
    case nlohmann::json::value_t::binary:
    case nlohmann::json::value_t::discarded:
      break;
  }
  throw std::invalid_argument("a JSON value pickle cannot hold");
}

}  // namespace

void AppendPickled(std::string& out, const nlohmann::ordered_json& value) {
  Value(out, value);
}

std::string PickleOf(const nlohmann::ordered_json& value) {
  std::string out = {kProto, '\x02'};
  Value(out, value);
  out.push_back(kStop);
  return out;
}

}  // namespace memprof
