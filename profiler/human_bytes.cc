#include "profiler/human_bytes.h"

#include <cstdio>
#include <cstdlib>

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

std::string SignedBytes(int64_t bytes) {
  return bytes > 0 ? "+" + HumanBytes(bytes) : HumanBytes(bytes);
}

}  // namespace memprof
