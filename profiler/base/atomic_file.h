// Output files and directories. Files are never left half-written: content
// goes to a temporary name in the same directory, is flushed, then renamed
// over the target.
#pragma once

#include <string>

namespace memprof {

// Throws std::runtime_error naming the path and the OS reason.
void WriteFileAtomically(const std::string& path, const std::string& content);

// WriteFileAtomically for a file a flag names: throws InputError
// "FLAG: REASON; choose a writable path".
void WriteFlaggedFile(const std::string& flag, const std::string& path,
                      const std::string& content);

// Creates the directory a flag names (and its parents) unless it exists;
// throws InputError "FLAG: cannot create output directory 'DIR': REASON;
// choose a writable path".
void CreateOutputDirectory(const std::string& flag, const std::string& dir);

}  // namespace memprof
