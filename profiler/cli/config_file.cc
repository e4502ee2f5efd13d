#include "profiler/cli/config_file.h"

#include <algorithm>

#include "profiler/base/errors.h"

namespace memprof {
namespace {

bool StartsWith(const std::string& text, const char* prefix, size_t size) {
  return text.compare(0, size, prefix, size) == 0;
}

// Calls `each(line, number)` for every line of `text` (lines ending in
// "\n", numbered from 1) until it returns false.
template <typename Each>
void ForEachLine(const std::string& text, Each each) {
  int number = 0;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    if (!each(text.substr(begin, end - begin), ++number)) return;
    begin = end + 1;
  }
}

// `text` with each "; comment" that follows a value after a space or tab
// cut (the parser cuts "#" comments itself), so that "hidden = 64 ; wider"
// reads 64. A line that starts with ";" stays: the parser skips it.
std::string WithoutSemicolonComments(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  ForEachLine(text, [&](std::string line, int) {
    const size_t first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line[first] != ';') {
      for (size_t i = first + 1; i < line.size(); ++i) {
        if (line[i] == ';' && (line[i - 1] == ' ' || line[i - 1] == '\t')) {
          line.erase(i);
          break;
        }
      }
    }
    out += line + "\n";
    return true;
  });
  return out;
}

}  // namespace

ConfigFileText ConfigFileTextOf(const std::string& path, std::string raw) {
  if (StartsWith(raw, "\xFF\xFE", 2) || StartsWith(raw, "\xFE\xFF", 2) ||
      StartsWith(raw, "\x00\x00\xFE\xFF", 4)) {
    throw InputError(path +
                     ": the file is UTF-16 or UTF-32 text (it starts with "
                     "that byte order mark); save it as UTF-8");
  }
  if (StartsWith(raw, "\xEF\xBB\xBF", 3)) raw.erase(0, 3);
  ConfigFileText file;
  file.text.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\r') {
      file.text.push_back(raw[i]);
    } else if (i + 1 >= raw.size() || raw[i + 1] != '\n') {
      file.text.push_back('\n');
    }
  }
  // A NUL would cut the error message that quotes its value (the message
  // is a C string), and a line of a megabyte would be quoted whole: both
  // are refused by their line, quoting nothing.
  int number = 1;
  size_t line_start = 0;
  for (size_t i = 0; i <= file.text.size(); ++i) {
    if (i == file.text.size() || file.text[i] == '\n') {
      if (i - line_start > kMaxConfigLineBytes) {
        throw InputError(path + ":" + std::to_string(number) + ": " +
                         std::to_string(i - line_start) +
                         " bytes on one line, more than the " +
                         std::to_string(kMaxConfigLineBytes) +
                         " a line of 'key = value' takes");
      }
      ++number;
      line_start = i + 1;
    } else if (file.text[i] == '\0') {
      throw InputError(path + ":" + std::to_string(number) +
                       ": a NUL byte (binary data, not a config file); save "
                       "the config as text");
    }
  }
  file.text = WithoutSemicolonComments(file.text);
  std::string section;
  ForEachLine(file.text, [&](const std::string& line, int number) {
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#' ||
        line[first] == ';') {
      return true;
    }
    if (line[first] == '[') {
      const size_t close = line.find(']', first);
      section = line.substr(first + 1, close == std::string::npos
                                           ? std::string::npos
                                           : close - first - 1);
      file.sections.emplace_back(section, number);
      return true;
    }
    std::string name = line.substr(first, line.find('=') - first);
    name.erase(name.find_last_not_of(" \t") + 1);
    const std::string key = section.empty() ? name : section + "." + name;
    if (!file.key_lines.emplace(key, number).second) {
      file.repeat_lines.emplace(key, number);
    }
    return true;
  });
  return file;
}

int LineReadAs(const ConfigFileText& file, const std::string& invalid) {
  int found = 0;
  ForEachLine(file.text, [&](std::string line, int number) {
    line.erase(std::min(line.find('#'), line.size()));
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) return true;
    line = line.substr(first, line.find_last_not_of(" \t") - first + 1);
    if (line != invalid) return true;
    found = number;
    return false;
  });
  return found;
}

}  // namespace memprof
