#include "profiler/base/frozen_parameters.h"

#include <utility>

#include "profiler/base/comma_list.h"
#include "profiler/base/errors.h"

namespace memprof {

std::vector<std::string> FreezePrefixes(const std::string& freeze) {
  std::vector<std::string> prefixes;
  if (freeze.empty() || FreezesAll(freeze)) return prefixes;
  for (std::string& item :
       CommaItems(freeze, "train.freeze", "prefixes", "h.0,h.1")) {
    if (item == "all") {
      throw ConfigError(
          "train.freeze",
          "train.freeze '" + freeze +
              "': 'all' (every base weight, beside [lora]) stands alone; "
              "write either all or the prefixes to freeze");
    }
    prefixes.push_back(std::move(item));
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
