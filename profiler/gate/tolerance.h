// How far a figure may move from its baseline before a check calls it a
// regression (or an improvement). Torch-free.
//
// Note [Tolerance defaults]
// Each tolerance key is a category name ("weights", ...) or "peak" (the
// run's steady-state peak.total_bytes); a category's tolerance applies to
// both of its figures (bytes at the peak and its own peak).
//   - weights, gradients, optimizer_state, ddp_buckets: 0 bytes. Model state
//     is shape arithmetic (4P, 4P, 8P, 4P for fp32 Adam); any change is real.
//   - inputs: 0 bytes. The batch is micro_batch x shape x dtype.
//   - unattributed: 0 bytes. Should be 0; growth is an attribution gap.
//   - activations, temporaries, peak: 1%. These follow the kernels' scratch
//     and the order of frees, which a LibTorch upgrade or a thread-count
//     change can move a little.
// Repeated runs on one machine give identical bytes in every category (tested
// in tests/regression_gate_test.cc), so the 1% is headroom, not noise.
//
// Precedence, highest first: the command line's KEY=VALUE, the baseline's
// "tolerances" object, the command line's bare --tolerance P% and
// --tolerance-bytes N (which replace the 1% default of the keys that have
// one, never the exact ones), the defaults above.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace memprof {

struct Tolerance {
  double percent = 0;  // of the baseline figure
  int64_t bytes = 0;   // absolute
};

// Allowed |now - baseline|: max(bytes, floor(percent/100 * baseline_bytes)),
// saturating at INT64_MAX. `baseline_bytes` >= 0.
int64_t AllowedBytes(const Tolerance& tolerance, int64_t baseline_bytes);

// "2%" / "0.5%" (percent) or "4096" (bytes). Throws InputError with the
// reason; callers prefix where the text came from.
Tolerance ParseTolerance(const std::string& text);

// Inverse of ParseTolerance for one part: "2%", "4096", "1% or 4096 B".
std::string FormatTolerance(const Tolerance& tolerance);

// The category names and "peak", in report order.
const std::vector<std::string>& ToleranceKeys();
bool IsToleranceKey(const std::string& key);
// Throws InputError naming the key and the known keys.
void RequireToleranceKey(const std::string& key);

// The built-in default of `key` (Note [Tolerance defaults]).
Tolerance DefaultTolerance(const std::string& key);
// Whether `key` has a relative default (activations, temporaries, peak).
bool HasRelativeDefault(const std::string& key);

// Command-line tolerance settings.
struct ToleranceSettings {
  std::map<std::string, Tolerance> per_key;  // --tolerance KEY=VALUE
  std::optional<double> percent;             // bare --tolerance P%
  std::optional<int64_t> bytes;              // --tolerance-bytes N
};

// Every key's tolerance after precedence (see the Note).
std::map<std::string, Tolerance> ResolveTolerances(
    const ToleranceSettings& command_line,
    const std::map<std::string, Tolerance>& baseline);

}  // namespace memprof
