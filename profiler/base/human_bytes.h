// Byte counts for people: binary units (KiB, MiB, GiB), three significant
// digits. JSON always carries the exact integer; this is for tables.
#pragma once

#include <cstdint>
#include <string>

namespace memprof {

std::string HumanBytes(int64_t bytes);   // "0 B", "512 B", "4.50 MiB"
std::string SignedBytes(int64_t bytes);  // "+1.00 KiB", "-12 B", "0 B"

// "1.18 KiB (1,212 B)", "+1.18 KiB (+1,212 B)": from 1 KiB on, the exact
// bytes beside the human figure, for where one byte decides (the gate's
// deltas and allowances); below 1 KiB the human figure is exact already.
std::string BytesAndExact(int64_t bytes);
std::string SignedBytesAndExact(int64_t bytes);

// "12,345", "-1,000": an integer with thousands separators.
std::string GroupedInteger(int64_t value);

// "2GiB", "1.5 MiB", "80G", "80GB", "4096" (bytes) -> bytes, rounded down.
// Units, case-insensitive: B; KiB, MiB, GiB, TiB, their short forms Ki, Mi,
// Gi, Ti (as `free -h` writes them) and bare K, M, G, T (as `df -h` and
// `du -h` write them): powers of 1024; KB, MB, GB, TB: powers of 1000.
// Returns -1 for anything else, for less than 1 byte, and for a fraction
// of bytes without a larger unit ("1.5", "1000.7B").
int64_t ParseByteSize(const std::string& text);

// The most bytes ParseByteSize returns (about 7.8 EiB); larger is -1.
inline constexpr double kLargestByteSize = 9.0e18;

// What ParseByteSize accepts, for help texts and errors.
inline constexpr const char* kByteSizeUnits =
    "80G, 80Gi and 80GiB are 80 x 2^30 bytes; 80GB is 80 x 10^9 bytes; "
    "likewise K, M, T; a plain number is bytes";

}  // namespace memprof
