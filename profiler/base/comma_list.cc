#include "profiler/base/comma_list.h"

#include "profiler/base/errors.h"

namespace memprof {

std::vector<std::string> CommaItems(const std::string& value,
                                    const std::string& key,
                                    const std::string& what,
                                    const std::string& example) {
  std::vector<std::string> items;
  if (value.empty()) return items;
  size_t from = 0;
  while (true) {
    const size_t comma = value.find(',', from);
    std::string item = value.substr(
        from, comma == std::string::npos ? std::string::npos : comma - from);
    const size_t first = item.find_first_not_of(" \t");
    const size_t last = item.find_last_not_of(" \t");
    item =
        first == std::string::npos ? "" : item.substr(first, last - first + 1);
    if (item.empty()) {
      throw ConfigError(
          key, key + " '" + value + "' has an empty item; write the " + what +
                   " separated by single commas, such as " + example);
    }
    items.push_back(item);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return items;
}

}  // namespace memprof
