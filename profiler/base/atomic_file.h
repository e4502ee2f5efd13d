// Output files and directories. Files are never left half-written: content
// goes to a temporary name in the same directory, is flushed, then renamed
// over the target.
#pragma once

#include <string>

namespace memprof {

// Throws std::runtime_error naming the path and the OS reason.
void WriteFileAtomically(const std::string& path, const std::string& content);

// Why a write failed, for "cannot write 'PATH': ...": the OS reason of
// `error` (an errno), with the remedy when the disk or quota is full.
std::string WriteFailureReason(int error);

// A path a flag names for memprof to write: a new file, or a regular file
// that the written one replaces. Throws InputError naming the flag, the
// path and the remedy for an empty path, a directory, a symbolic link (the
// written file would replace the link) and anything not a regular file (a
// device such as /dev/null, a FIFO, a socket), which writing would replace
// with a regular file.
void RequireReplaceableFile(const std::string& flag, const std::string& path);

// WriteFileAtomically for a file a flag names, after RequireReplaceableFile:
// throws InputError "FLAG: REASON; choose a writable path".
void WriteFlaggedFile(const std::string& flag, const std::string& path,
                      const std::string& content);

// The longest name memprof writes inside an output directory, a temporary
// included ("snapshot-16777215.pickle.tmp.4194304" is 36), with room to
// spare.
inline constexpr size_t kLongestOutputName = 64;

// Creates the directory a flag names (and its parents) unless it exists;
// throws InputError "FLAG: cannot create output directory 'DIR': REASON;
// choose a writable path". Also refuses, before anything is created, a DIR
// too long for DIR/ and `room` more characters to stay within the system's
// path limit (PATH_MAX), so that a run never fails at its first write
// after training; and names a symbolic link whose target is missing.
void CreateOutputDirectory(const std::string& flag, const std::string& dir,
                           size_t room = kLongestOutputName);

}  // namespace memprof
