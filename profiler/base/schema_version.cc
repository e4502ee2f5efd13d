#include "profiler/base/schema_version.h"

#include <cctype>

namespace memprof {
namespace {

struct Version {
  std::string family;
  std::string major;  // digits
};

// False unless `text` is "<family>/<digits>" or "<family>/<digits>.<digits>".
bool Parse(const std::string& text, Version& out) {
  const size_t slash = text.rfind('/');
  if (slash == std::string::npos || slash == 0) return false;
  out.family = text.substr(0, slash);
  const std::string version = text.substr(slash + 1);
  const size_t dot = version.find('.');
  out.major = version.substr(0, dot);
  auto digits = [](const std::string& s) {
    if (s.empty()) return false;
    for (char c : s) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    }
    return true;
  };
  return digits(out.major) &&
         (dot == std::string::npos || digits(version.substr(dot + 1)));
}

}  // namespace

std::string SchemaMismatch(const std::string& found,
                           const std::string& expected) {
  Version want, got;
  Parse(expected, want);
  const std::string shown =
      found.size() > 60 ? found.substr(0, 57) + "..." : found;
  if (!Parse(found, got) || got.family != want.family) {
    return "is '" + shown + "', expected '" + expected + "'";
  }
  if (got.major != want.major) {
    return "is '" + shown + "', major version " + got.major + " of " +
           want.family + "; this memprof reads version " + want.major + " only";
  }
  return "";
}

}  // namespace memprof
