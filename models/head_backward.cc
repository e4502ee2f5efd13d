#include "models/head_backward.h"

namespace memprof {

void AddHeadBackward(SizeTable& t, const HeadShape& head, const RowDtypes& dt) {
  const auto w = RowKind::kWorkspace;
  const int64_t b = head.b, T = head.T, d = head.d, V = head.V;
  const std::string n = "output projection backward: ";
  const size_t first = t.rows.size();
  t.Add(n + "loss gradient", w, {}, "[]", head.loss);
  if (dt.autocast) {
    t.Add(n + "input gradient's float32 copy", w, {b, T, d}, "[B, T, d]",
          Dtype::kFloat32);
    t.NeededWhen(head.upstream);
    t.Add(n + "weight gradient", w, {V, d}, "[V, d]", dt.low);
    t.NeededWhen("", {head.weight});
    t.Add(n + "weight gradient's float32 copy", w, {V, d}, "[V, d]",
          Dtype::kFloat32);
    t.NeededWhen("", {head.weight});
  } else {
    t.Add(n + "logits gradient", w, {b * T, V}, "[B*T, V]", dt.low);
    t.Add(n + "weight gradient", w, {V, d}, "[V, d]", dt.low);
    t.NeededWhen("", {head.weight});
    t.Add(n + "input gradient", w, {b, T, d}, "[B, T, d]", dt.low);
    t.NeededWhen(head.upstream);
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
