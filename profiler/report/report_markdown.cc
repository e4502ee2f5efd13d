#include "profiler/report/report_markdown.h"

#include <sstream>

namespace memprof {
namespace {

// A table cell: pipes escaped, no line breaks.
std::string Cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

void Table(std::ostringstream& out, const ReportTable& table) {
  out << "## " << table.title << "\n\n";
  if (!table.caption.empty()) out << table.caption << "\n\n";
  out << "|";
  for (const std::string& name : table.header) out << " " << Cell(name) << " |";
  out << "\n|";
  for (size_t i = 0; i < table.header.size(); ++i) {
    out << (i < table.numeric.size() && table.numeric[i] ? " ---: |"
                                                         : " :--- |");
  }
  out << "\n";
  for (const std::vector<std::string>& row : table.rows) {
    out << "|";
    for (const std::string& cell : row) out << " " << Cell(cell) << " |";
    out << "\n";
  }
  out << "\n";
  for (const std::string& note : table.notes) out << note << "\n\n";
}

}  // namespace

std::string FormatReportMarkdown(const ReportText& text) {
  std::ostringstream out;
  out << "# " << text.title << "\n\n";
  if (!text.headline.empty()) out << "**" << text.headline << "**\n\n";
  // A quoted block: the title in bold, what it means, one item per line.
  const auto warning = [&](const char* title, const char* meaning,
                           const std::vector<std::string>& lines) {
    if (lines.empty()) return;
    out << "> **" << title << ":**" << meaning << "\n";
    for (const std::string& line : lines) out << "> - " << line << "\n";
    out << "\n";
  };
  warning("Incomplete",
          " some rank reports could not be read; every figure below covers "
          "the other ranks only.",
          text.incomplete);
  warning("Out of memory", "", text.out_of_memory);
  warning("Killed", "", text.killed);
  for (const auto& [name, value] : text.context) {
    out << "- **" << name << "**: " << value << "\n";
  }
  if (!text.context.empty()) out << "\n";
  for (const ReportTable& table : text.tables) Table(out, table);
  if (!text.redundancy.empty()) {
    out << "## Redundancy\n\n"
           "Model state every rank holds, hashed on each rank and "
           "compared:\n\n";
    for (const std::string& line : text.redundancy) out << "- " << line << "\n";
    out << "\n";
  }
  std::string markdown = out.str();
  while (markdown.size() >= 2 && markdown[markdown.size() - 2] == '\n') {
    markdown.pop_back();  // one trailing newline
  }
  return markdown;
}

}  // namespace memprof
