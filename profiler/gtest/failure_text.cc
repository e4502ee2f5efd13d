#include "profiler/gtest/failure_text.h"

#include <vector>

#include "profiler/base/human_bytes.h"
#include "profiler/base/text_table.h"

namespace memprof {
namespace {

constexpr const char* kNoOperator =
    "(memprof does not record which operator allocated a block: open "
    "session().Scope(\"name\") around the code to see its name here)\n";

// "forward, step 2", or "outside a step".
std::string WhenOf(Phase phase, int32_t step) {
  if (step == 0) return "outside a step";
  return std::string(PhaseName(phase)) + ", step " + std::to_string(step);
}

// ", in forward, step 2", or ", outside a step": the peak's moment.
std::string AtMoment(const Moment& m) {
  return (m.step == 0 ? ", " : ", in ") + WhenOf(m.phase, m.step);
}

// The table's lines, indented under their heading.
std::string Indented(const std::string& table) {
  std::string text;
  size_t from = 0;
  while (from < table.size()) {
    const size_t end = table.find('\n', from);
    text += "  " + table.substr(from, end - from + 1);
    from = end + 1;
  }
  return text;
}

std::string BreakdownTable(const Breakdown& bytes) {
  TextTable table({{"category"}, {"bytes", TextTable::Align::kRight}});
  for (Category c : kAllCategories) {
    if (bytes[Index(c)] == 0) continue;
    table.AddRow(
        {std::string(CategoryName(c)), BytesAndExact(bytes[Index(c)])});
  }
  return Indented(table.Render());
}

std::string BlockTable(const std::vector<ListedBlock>& blocks) {
  TextTable table({{"bytes", TextTable::Align::kRight},
                   {"category"},
                   {"scope"},
                   {"allocated in"}});
  for (const ListedBlock& b : blocks) {
    table.AddRow({BytesAndExact(b.bytes), std::string(CategoryName(b.category)),
                  b.scope.empty() ? "-" : b.scope, WhenOf(b.phase, b.step)});
  }
  return Indented(table.Render());
}

// What to do about a category over its limit.
std::string CategoryRemedy(Category category) {
  switch (category) {
    case Category::kWeights:
    case Category::kGradients:
    case Category::kOptimizerState:
      return "they follow the model's parameters: a smaller model, or "
             "frozen parameters, hold less";
    case Category::kActivations:
      return "what forward keeps for backward: a smaller batch, fewer or "
             "smaller saved tensors, or recomputed blocks hold less";
    case Category::kInputs:
      return "the batch given to TrackInputs(): a smaller batch holds less";
    case Category::kUnattributed:
      return "blocks still live at the scope's end that nothing tracked "
             "owns: track their owner, or let them be freed inside the scope";
    default:
      return "workspace that lives briefly: the largest blocks below are "
             "where to start";
  }
}

}  // namespace

std::string LimitFailure(const std::string& scope, int64_t limit_bytes,
                         const Moment& peak) {
  std::string text = "memprof: the peak inside this " + scope +
                     " is over its limit by " +
                     BytesAndExact(peak.total_bytes - limit_bytes) + "\n";
  text += "  limit: " + BytesAndExact(limit_bytes) + ", all categories\n";
  text += "  peak:  " + BytesAndExact(peak.total_bytes) + AtMoment(peak) + "\n";
  text += "By category at the peak:\n" + BreakdownTable(peak.bytes);
  text += "Largest blocks live at the peak:\n" + BlockTable(peak.largest);
  text += kNoOperator;
  text +=
      "What to do: make the code under test hold less at once (the blocks "
      "above first), or raise the limit if it grew on purpose.";
  return text;
}

std::string CategoryLimitFailure(const std::string& scope, Category category,
                                 int64_t limit_bytes, const Moment& peak) {
  const std::string name(CategoryName(category));
  const int64_t bytes = peak.bytes[Index(category)];
  std::string text = "memprof: " + name + " inside this " + scope +
                     " went over their limit by " +
                     BytesAndExact(bytes - limit_bytes) + "\n";
  text += "  limit: " + BytesAndExact(limit_bytes) + ", " + name + "\n";
  text += "  peak:  " + BytesAndExact(bytes) + AtMoment(peak) + "\n";
  text += "By category at that moment:\n" + BreakdownTable(peak.bytes);
  text += "Largest " + name + " blocks live then:\n" + BlockTable(peak.largest);
  text += kNoOperator;
  text += "What to do: " + CategoryRemedy(category) +
          "; or raise the limit if it grew on purpose.";
  return text;
}

std::string LeakFailure(const std::string& scope, const CheckFigures& figures) {
  std::string text = "memprof: " + GroupedInteger(figures.leaked_blocks) +
                     (figures.leaked_blocks == 1 ? " block" : " blocks") +
                     " allocated inside this " + scope + ", " +
                     BytesAndExact(figures.leaked_bytes) +
                     ", still live at its end and owned by nothing tracked\n";
  text += "Largest of them:\n" + BlockTable(figures.largest_leaks);
  text += kNoOperator;
  text +=
      "What to do: let them be freed before the scope ends (a tensor kept in "
      "a static, a member or a cache, an autograd graph kept alive); if the "
      "test keeps them on purpose, make them before the scope, or Track "
      "their owner through session().";
  return text;
}

}  // namespace memprof
