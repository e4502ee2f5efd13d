// Reading a file the user named (a config, a rank report, a baseline): a
// regular file only, and at most a cap the caller chooses. Each reader
// states its cap (Note [File size caps]): a file over it, a directory, a
// FIFO, a device (/dev/zero) or a socket is refused before anything is
// read, so no file can make memprof block or grow without bound.
#pragma once

#include <cstdint>
#include <string>

namespace memprof {

// The whole of the regular file at `path`. Throws InputError
// "cannot read KIND 'PATH': REASON; REMEDY" (KIND, say "config file", may
// be empty) when it cannot be opened, is not a regular file, or holds more
// than `max_bytes` (also when it grows past them while being read).
std::string ReadRegularFile(const std::string& path, const std::string& kind,
                            int64_t max_bytes, const std::string& remedy);

}  // namespace memprof
