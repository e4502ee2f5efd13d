// A plain-text table for the console: every column as wide as its widest
// cell (the header included), so a cell of any length keeps the columns
// straight. Columns are two spaces apart; a line has no trailing spaces.
#pragma once

#include <string>
#include <vector>

namespace memprof {

class TextTable {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string header;
    Align align = Align::kLeft;
  };

  explicit TextTable(std::vector<Column> columns);

  // One cell per column; throws std::invalid_argument otherwise.
  void AddRow(std::vector<std::string> cells);

  // The header line, then the rows, each ending in '\n'.
  std::string Render() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace memprof
