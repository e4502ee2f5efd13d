#include "profiler/gate/tolerance.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "profiler/base/category.h"
#include "profiler/base/errors.h"

namespace memprof {
namespace {

constexpr double kDefaultPercent = 1.0;
constexpr int64_t kMaxBytes = std::numeric_limits<int64_t>::max();

std::string Quoted(const std::string& text) {
  constexpr size_t kShown = 40;
  return "'" + (text.size() > kShown ? text.substr(0, kShown) + "..." : text) +
         "'";
}

}  // namespace

int64_t AllowedBytes(const Tolerance& tolerance, int64_t baseline_bytes) {
  const long double relative = std::floor(
      static_cast<long double>(tolerance.percent) / 100 * baseline_bytes);
  const int64_t from_percent = relative >= static_cast<long double>(kMaxBytes)
                                   ? kMaxBytes
                                   : static_cast<int64_t>(relative);
  return std::max(tolerance.bytes, from_percent);
}

Tolerance ParseTolerance(const std::string& text) {
  const std::string expected =
      "; expected a percentage such as 2% or 0.5%, or bytes such as 4096";
  if (text.empty()) throw InputError("empty tolerance" + expected);
  if (text[0] == '-') {
    throw InputError("tolerance " + Quoted(text) +
                     " is negative: a tolerance is the growth allowed, 0 or "
                     "more" +
                     expected);
  }
  Tolerance tolerance;
  if (text.back() == '%') {
    const std::string number = text.substr(0, text.size() - 1);
    char* end = nullptr;
    errno = 0;
    const double percent = std::strtod(number.c_str(), &end);
    const bool plain =
        !number.empty() &&
        number.find_first_not_of("0123456789.") == std::string::npos &&
        std::isdigit(static_cast<unsigned char>(number[0]));
    if (!plain || end != number.c_str() + number.size() || errno != 0 ||
        !std::isfinite(percent)) {
      throw InputError("tolerance " + Quoted(text) + " is not a percentage" +
                       expected);
    }
    tolerance.percent = percent;
    return tolerance;
  }
  for (char c : text) {
    if (c < '0' || c > '9') {
      throw InputError("tolerance " + Quoted(text) + " is not a number" +
                       expected);
    }
  }
  errno = 0;
  const long long bytes = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE) {
    throw InputError("tolerance " + Quoted(text) + " is out of range" +
                     expected);
  }
  tolerance.bytes = bytes;
  return tolerance;
}

std::string FormatTolerance(const Tolerance& tolerance) {
  // The shortest text that reads back as the same double.
  char number[40];
  for (int digits = 6; digits <= 17; ++digits) {
    std::snprintf(number, sizeof number, "%.*g", digits, tolerance.percent);
    if (std::strtod(number, nullptr) == tolerance.percent) break;
  }
  const std::string percent = std::string(number) + "%";
  const std::string bytes = std::to_string(tolerance.bytes);
  if (tolerance.percent > 0 && tolerance.bytes > 0) {
    return percent + " or " + bytes + " B";
  }
  return tolerance.percent > 0 ? percent : bytes;
}

const std::vector<std::string>& ToleranceKeys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> names;
    for (Category c : kAllCategories) names.emplace_back(CategoryName(c));
    names.emplace_back("peak");
    return names;
  }();
  return keys;
}

bool IsToleranceKey(const std::string& key) {
  for (const std::string& known : ToleranceKeys()) {
    if (known == key) return true;
  }
  return false;
}

void RequireToleranceKey(const std::string& key) {
  if (IsToleranceKey(key)) return;
  std::string known;
  for (const std::string& name : ToleranceKeys()) {
    known += (known.empty() ? "" : ", ") + name;
  }
  throw InputError("unknown tolerance key " + Quoted(key) +
                   "; known: " + known);
}

bool HasRelativeDefault(const std::string& key) {
  return key == "activations" || key == "temporaries" || key == "peak";
}

Tolerance DefaultTolerance(const std::string& key) {
  Tolerance tolerance;
  if (HasRelativeDefault(key)) tolerance.percent = kDefaultPercent;
  return tolerance;
}

std::map<std::string, Tolerance> ResolveTolerances(
    const ToleranceSettings& command_line,
    const std::map<std::string, Tolerance>& baseline) {
  std::map<std::string, Tolerance> resolved;
  for (const std::string& key : ToleranceKeys()) {
    Tolerance tolerance = DefaultTolerance(key);
    if (HasRelativeDefault(key)) {
      if (command_line.percent) tolerance.percent = *command_line.percent;
      if (command_line.bytes) tolerance.bytes = *command_line.bytes;
    }
    if (auto it = baseline.find(key); it != baseline.end()) {
      tolerance = it->second;
    }
    if (auto it = command_line.per_key.find(key);
        it != command_line.per_key.end()) {
      tolerance = it->second;
    }
    resolved[key] = tolerance;
  }
  return resolved;
}

}  // namespace memprof
