// Whole files as strings, for tests: the contents ("" when unreadable), and
// a file written whole.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace memprof {

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void WriteFile(const std::filesystem::path& path,
                      const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace memprof
