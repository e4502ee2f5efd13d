#include "profiler/base/text_table.h"

#include <stdexcept>

#include <gtest/gtest.h>

namespace memprof {
namespace {

using Align = TextTable::Align;

TEST(TextTable, ColumnsAreAsWideAsTheirWidestCell) {
  TextTable table({{"tensor", Align::kLeft}, {"bytes", Align::kRight}});
  table.AddRow({"h.0.attn", "1,024"});
  const std::string name(70, 'x');  // longer than any fixed width
  table.AddRow({name, "12"});
  EXPECT_EQ(table.Render(), "tensor" + std::string(64, ' ') + "  bytes\n" +
                                "h.0.attn" + std::string(62, ' ') +
                                "  1,024\n" + name + "     12\n");
}

TEST(TextTable, NoTrailingSpacesAndEveryRowHasEveryCell) {
  TextTable table({{"a", Align::kLeft}, {"formula", Align::kLeft}});
  table.AddRow({"weights", ""});
  EXPECT_EQ(table.Render(), "a        formula\nweights\n");
  EXPECT_THROW(table.AddRow({"only one"}), std::invalid_argument);
}

}  // namespace
}  // namespace memprof
