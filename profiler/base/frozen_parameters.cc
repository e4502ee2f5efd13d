#include "profiler/base/frozen_parameters.h"

#include "profiler/base/errors.h"

namespace memprof {

std::vector<std::string> FreezePrefixes(const std::string& freeze) {
  std::vector<std::string> prefixes;
  if (freeze.empty()) return prefixes;
  size_t from = 0;
  while (true) {
    const size_t comma = freeze.find(',', from);
    std::string item = freeze.substr(
        from, comma == std::string::npos ? std::string::npos : comma - from);
    const size_t first = item.find_first_not_of(" \t");
    const size_t last = item.find_last_not_of(" \t");
    item =
        first == std::string::npos ? "" : item.substr(first, last - first + 1);
    if (item.empty()) {
      throw ConfigError("train.freeze",
                        "train.freeze '" + freeze +
                            "' has an empty item; write the prefixes "
                            "separated by single commas, such as h.0,h.1");
    }
    if (item == "all") {
      throw ConfigError(
          "train.freeze",
          "train.freeze 'all' freezes every parameter, which is for "
          "adapters, and memprof has none yet: nothing would be trained; "
          "list the prefixes to freeze and leave at least one parameter "
          "trained (see 'memprof predict --table' for the names)");
    }
    prefixes.push_back(item);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return prefixes;
}

bool PrefixCovers(const std::string& prefix, const std::string& name) {
  return name.size() >= prefix.size() &&
         name.compare(0, prefix.size(), prefix) == 0 &&
         (name.size() == prefix.size() || name[prefix.size()] == '.');
}

bool IsFrozen(const std::vector<std::string>& prefixes,
              const std::string& name) {
  for (const std::string& prefix : prefixes) {
    if (PrefixCovers(prefix, name)) return true;
  }
  return false;
}

}  // namespace memprof
