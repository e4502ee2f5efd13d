// A config file's text as memprof reads it (Note [Config file text]): the
// text Boost.Program_options parses, and where each key and section is, for
// messages that name the line.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace memprof {

// Note [Config file text]
// A config file is UTF-8 text whose lines end in "\n", "\r\n" or a lone
// "\r" (an editor's classic line end, which would otherwise make the whole
// file one comment line); all three are read as line ends, and lines are
// numbered accordingly. A leading UTF-8 byte order mark is skipped. A file
// that starts with a UTF-16 or UTF-32 byte order mark is refused, naming
// the encoding and the remedy. A comment is a line that starts with "#" or
// ";", or the rest of a line from a "#", or from a ";" after a space or
// tab ("hidden = 64  ; wider" is 64).
struct ConfigFileText {
  std::string text;  // without the byte order mark, lines ending in "\n"
  // "section.key" (or "key" before any section) -> its first 1-based line.
  std::map<std::string, int> key_lines;
  // A key given again -> the line of its second appearance.
  std::map<std::string, int> repeat_lines;
  // Each "[section]" header with its 1-based line, in file order.
  std::vector<std::pair<std::string, int>> sections;
};

// The longest line a config file may have: far above any 'key = value'.
inline constexpr size_t kMaxConfigLineBytes = 4096;

// `raw`, the bytes of the file at `path` (named in errors): InputError for
// a UTF-16 or UTF-32 file, a NUL byte or a line over kMaxConfigLineBytes,
// naming the line.
ConfigFileText ConfigFileTextOf(const std::string& path, std::string raw);

// The 1-based line of `file` that the INI parser read as `invalid` (its
// text without a "#" comment, trimmed, as the parser quotes it in a syntax
// error); 0 when no line is.
int LineReadAs(const ConfigFileText& file, const std::string& invalid);

}  // namespace memprof
