#include "profiler/base/frozen_parameters.h"

#include "profiler/base/errors.h"

namespace memprof {

std::vector<std::string> FreezePrefixes(const std::string& freeze) {
  std::vector<std::string> prefixes;
  if (freeze.empty() || FreezesAll(freeze)) return prefixes;
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
          "train.freeze '" + freeze +
              "': 'all' (every base weight, beside [lora]) stands alone; "
              "write either all or the prefixes to freeze");
    }
    prefixes.push_back(item);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return prefixes;
}

bool FreezesAll(const std::string& freeze) {
  const size_t first = freeze.find_first_not_of(" \t");
  const size_t last = freeze.find_last_not_of(" \t");
  return first != std::string::npos &&
         freeze.substr(first, last - first + 1) == "all";
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
