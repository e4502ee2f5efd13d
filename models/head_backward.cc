#include "models/head_backward.h"

namespace memprof {

void AddHeadBackward(SizeTable& t, const HeadShape& head, const RowDtypes& dt) {
  const auto w = RowKind::kWorkspace;
  const int64_t b = head.b, T = head.T, d = head.d, V = head.V;
  const std::string n = "output projection backward: ";
  const std::string& ds = head.d_symbol;
  const std::string& vs = head.V_symbol;
  const std::string rows = head.per_token ? "B*T" : "B";
  const std::string input =
      head.per_token ? "[B, T, " + ds + "]" : "[B, " + ds + "]";
  const std::string weight = "[" + vs + ", " + ds + "]";
  const size_t first = t.rows.size();
  t.Add(n + "loss gradient", w, {}, "[]", head.loss);
  if (dt.autocast) {
    t.Add(n + (head.cast_input ? "input gradient's float32 copy"
                               : "input gradient"),
          w, {b, T, d}, input, head.cast_input ? Dtype::kFloat32 : dt.low);
    t.NeededWhen(head.upstream);
    t.Add(n + "weight gradient", w, {V, d}, weight, dt.low);
    t.NeededWhen("", {head.weight});
    t.Add(n + "weight gradient's float32 copy", w, {V, d}, weight,
          Dtype::kFloat32);
    t.NeededWhen("", {head.weight});
  } else {
    t.Add(n + "logits gradient", w, {b * T, V}, "[" + rows + ", " + vs + "]",
          dt.low);
    t.Add(n + "weight gradient", w, {V, d}, weight, dt.low);
    t.NeededWhen("", {head.weight});
    t.Add(n + "input gradient", w, {b, T, d}, input, dt.low);
    t.NeededWhen(head.upstream);
    if (!head.bias.empty()) {
      t.Add(n + "bias gradient", w, {V}, "[" + vs + "]", dt.low);
      t.NeededWhen("", {head.bias});
    }
  }
  t.SetBlock(first, SizeRow::kHead);
}

void MarkFreedBeforeHead(SizeTable& t, size_t after_blocks, size_t loss_rows,
                         const RowDtypes& dt) {
  t.SetBlock(loss_rows, SizeRow::kHead);
  if (!dt.autocast) return;
  for (size_t r = after_blocks; r < loss_rows; ++r) {
    if (t.rows[r].dtype == dt.low) t.rows[r].block = SizeRow::kHead;
  }
}

}  // namespace memprof
