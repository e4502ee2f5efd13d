// Byte counts for people: binary units (KiB, MiB, GiB), three significant
// digits. JSON always carries the exact integer; this is for tables.
#pragma once

#include <cstdint>
#include <string>

namespace memprof {

std::string HumanBytes(int64_t bytes);   // "0 B", "512 B", "4.50 MiB"
std::string SignedBytes(int64_t bytes);  // "+1.00 KiB", "-12 B", "0 B"

}  // namespace memprof
