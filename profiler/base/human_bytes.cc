#include "profiler/base/human_bytes.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace memprof {

std::string HumanBytes(int64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  const bool negative = bytes < 0;
  const uint64_t magnitude =
      negative ? -static_cast<uint64_t>(bytes) : static_cast<uint64_t>(bytes);
  char text[32];
  if (magnitude < 1024) {
    std::snprintf(text, sizeof text, "%s%llu B", negative ? "-" : "",
                  static_cast<unsigned long long>(magnitude));
    return text;
  }
  double value = static_cast<double>(magnitude);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  const char* format = value >= 100  ? "%s%.0f %s"
                       : value >= 10 ? "%s%.1f %s"
                                     : "%s%.2f %s";
  std::snprintf(text, sizeof text, format, negative ? "-" : "", value,
                kUnits[unit]);
  return text;
}

std::string GroupedInteger(int64_t value) {
  const std::string digits = std::to_string(value);
  const size_t first = value < 0 ? 1 : 0;
  std::string out = digits.substr(0, first);
  for (size_t i = first; i < digits.size(); ++i) {
    if (i > first && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string SignedBytes(int64_t bytes) {
  return bytes > 0 ? "+" + HumanBytes(bytes) : HumanBytes(bytes);
}

std::string BytesAndExact(int64_t bytes) {
  if (bytes > -1024 && bytes < 1024) return HumanBytes(bytes);
  return HumanBytes(bytes) + " (" + GroupedInteger(bytes) + " B)";
}

std::string SignedBytesAndExact(int64_t bytes) {
  if (bytes <= 0) return BytesAndExact(bytes);
  return "+" + HumanBytes(bytes) +
         (bytes < 1024 ? "" : " (+" + GroupedInteger(bytes) + " B)");
}

int64_t ParseByteSize(const std::string& text) {
  size_t i = 0;
  while (
      i < text.size() &&
      (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  const std::string number = text.substr(0, i);
  if (number.empty() || number.front() == '.' ||
      number.find('.') != number.rfind('.')) {
    return -1;
  }
  while (i < text.size() && text[i] == ' ') ++i;
  std::string unit;
  for (; i < text.size(); ++i) {
    unit +=
        static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  }
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1},
      {"b", 1},
      {"kib", 1024.0},
      {"mib", 1048576.0},
      {"gib", 1073741824.0},
      {"tib", 1099511627776.0},
      {"k", 1024.0},
      {"m", 1048576.0},
      {"g", 1073741824.0},
      {"t", 1099511627776.0},
      {"ki", 1024.0},
      {"mi", 1048576.0},
      {"gi", 1073741824.0},
      {"ti", 1099511627776.0},
      {"kb", 1e3},
      {"mb", 1e6},
      {"gb", 1e9},
      {"tb", 1e12}};
  for (const auto& [name, factor] : kUnits) {
    if (unit != name) continue;
    // Bytes themselves are whole: "1.5" is not a byte count, 1.5KiB is.
    if (factor == 1 && number.find('.') != std::string::npos) return -1;
    const double bytes =
        std::floor(std::strtod(number.c_str(), nullptr) * factor);
    if (!(bytes >= 1) || bytes > kLargestByteSize) return -1;
    return static_cast<int64_t>(bytes);
  }
  return -1;
}

}  // namespace memprof
