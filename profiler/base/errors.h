// Exceptions at the boundaries; main() maps them to the documented exit
// codes: InputError -> 2 (bad usage, config or file), RunFailure -> 3 (a rank
// crashed, ran out of memory or timed out). Anything else is a bug (3).
#pragma once

#include <stdexcept>
#include <string>

namespace memprof {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitRunFailed = 3;

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A config value that is well-formed but not acceptable. `key` is the
// dotted config key ("mlp.hidden"), so the CLI can name the file or flag.
class ConfigError : public InputError {
 public:
  ConfigError(std::string key, const std::string& message)
      : InputError(message), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

class RunFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace memprof
