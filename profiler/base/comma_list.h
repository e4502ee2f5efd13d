// The items of a comma-separated config value (train.freeze, lora.targets).
#pragma once

#include <string>
#include <vector>

namespace memprof {

// The items of `value` ("q_proj, v_proj"), trimmed of spaces and tabs, in
// order; none for "". Throws ConfigError(key) for an empty item ("a,,b", a
// trailing comma), naming `what` the items are and an `example` list.
std::vector<std::string> CommaItems(const std::string& value,
                                    const std::string& key,
                                    const std::string& what,
                                    const std::string& example);

}  // namespace memprof
