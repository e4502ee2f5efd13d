// Each category's colour as a slot of the Tableau 10 palette, shared by the
// report's charts and the memory snapshot's category order.
//
// Note [Category colours]
// PyTorch's memory viewer (pytorch.org/memory_viz, torch/utils/viz/
// MemoryViz.js, read at pytorch/pytorch commits 00067369 and c4b5ac72, the
// same logic in both; read, not run) colours the "Active Memory Timeline"
// by category as follows:
//   - annotate_snapshot() lists the categories in the order they first
//     appear in `device_traces` (every event with a `category` field, of
//     every action, `snapshot` included; `segments` and their blocks are
//     not read for it). If that list is not empty and lacks `unknown`, it
//     throws (`snapshot.categores.push('unknown')`, a typo), so a snapshot
//     with categories must name `unknown` itself.
//   - An allocation's colour is schemeTableau10[i % 10], i its category's
//     index in that list (`unknown` for an event without one, and for a
//     block already live in `segments` when the trace begins); the legend
//     draws entry i in the same colour. The palette is fixed in the viewer
//     (d3's schemeTableau10, kTableau10 below); a snapshot cannot name
//     colours.
// So memprof controls the colours through the order alone: slot i of the
// palette is the colour of the category named i-th in the trace, whatever
// the run allocates first. snapshot-<r>.json opens its trace with one
// `snapshot` event per slot, naming its category (Note [Snapshot of a CPU
// run]), and the report draws each category in kTableau10[PaletteSlot(c)].
// What memprof cannot control: the viewer's legend lists every category
// named, also those the run never allocated (weight_casts outside
// bf16-autocast, ddp_buckets on one rank); the allocations the viewer
// summarises (beyond its "Detail" slider, 15,000 by default) are one band
// in slot 0's colour, the weights' blue, whatever their categories; the
// "Allocator State History" view colours blocks by a hash of their
// address, not by category.
#pragma once

#include <array>
#include <string_view>

#include "profiler/base/category.h"

namespace memprof {

inline constexpr int kPaletteSlots = 10;

// d3's schemeTableau10, the memory viewer's palette, slot by slot.
inline constexpr std::array<std::string_view, kPaletteSlots> kTableau10 = {
    "#4e79a7", "#f28e2c", "#e15759", "#76b7b2", "#59a14f",
    "#edc949", "#af7aa1", "#ff9da7", "#9c755f", "#bab0ab"};

// The slot no category has: the viewer's `unknown` (brown).
inline constexpr int kUnknownPaletteSlot = 8;

// Category c's slot, in [0, kPaletteSlots); every category of
// kAllCategories has its own, none has kUnknownPaletteSlot. kPending (never
// drawn) shares kUnattributed's grey.
int PaletteSlot(Category c);

// The names the memory viewer is given, in slot order: slot i's category,
// `unknown` at kUnknownPaletteSlot. Every slot is named.
std::array<std::string_view, kPaletteSlots> PaletteNames();

}  // namespace memprof
