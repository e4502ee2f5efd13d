// The capture file: every event of a session, on disk, in seq order
// (DIR/capture-<r>.bin during a run; a temporary file when no path is
// given).
//
// Note [Capture file]
// A 4 KiB header (magic "MPCAPT03", record size, the session's first seq
// and wall clock, the count of spilled windows, then a JSON text the
// caller chose: the rank's context), a ring of two 1 MiB windows, then
// the spilled windows, each 1 MiB, in order. Records are 32 bytes {seq, a,
// b, check}, appended under the tracker's lock, so in seq order. `check`
// holds the record's kind in its top byte and the payload (seq, a, b)
// folded into 56 bits below; it is written last, with a release store, so
// a record whose check does not match its payload (a record the process
// was killed while writing) is torn: the reader drops it and stops there.
// Named scopes (Note [Named scopes] in lifetime_analysis.h) add three
// kinds, none taking a seq: a scope's name, the first time the session
// opens it (a = id | chunk << 32, b = 8 bytes of the name, zero-padded;
// one record per 8 bytes, in order), its enter (a = id) and an exit (the
// innermost open scope). A reader of "MPCAPT02" files (no scope records)
// reads them as well.
//
// The writer keeps the header page and the ring mapped (MAP_SHARED) for
// the whole session and appends into one ring window; when it is full it
// copies it to the next spilled window with pwrite, counts it in the
// header, zeroes it, and goes on in the other ring window. So the hot path
// writes into pages already mapped and dirty (a fresh page of a shared
// file mapping costs a fault of about 2 us on ext4: 15 ns a record), and
// the process holds 2 MiB, not the run. The page cache outlives a process
// killed by SIGKILL or the OOM killer: the reader takes the spilled
// windows the header counts, then the ring window after them up to its
// first zero record, so every record committed before the kill is read,
// in order, and nothing else (a window spilled but not yet counted is
// still whole in the ring; a counted one's ring window is zeroed before
// it is reused).
//
// The header page and the ring are reserved on disk (posix_fallocate)
// before they are mapped, so a full disk is an ENOSPC at Open, not a SIGBUS
// at the hook's first store into a page the file system cannot back. A
// spill that fails (a disk filled since) keeps its window in the ring, the
// last one the file holds, discards what follows, and the error is raised
// at the next phase mark (MemoryTracker::SetPhase): the file stays a whole
// prefix of the session. A capture grows 32 bytes an event for as long as
// the run lasts, so it leaves its file system a reserve: a spill that
// would leave less free than kCaptureDiskReserve (1 GiB, or a twentieth of
// a smaller file system) fails the same way, before the disk is full for
// everything else on the machine. A session holds an exclusive flock on its
// named file while it runs (the kernel drops it however the process ends), so a
// reader tells a live rank's capture from a killed one's (CaptureLive).
//
// Note [Damaged capture]
// The reader trusts nothing the header says that the file can contradict:
// a file with more spilled windows than the header counts (beyond the one
// a kill between the copy and the count leaves, which its ring window
// still holds whole), a negative count, a session that began after the
// file was last written, or a first record whose seq is not the header's
// first seq is refused (InputError: the header is damaged). Records must
// come in seq order (each alloc, free and refusal takes the next seq).
// A file that ends before the windows its header counts, or inside the
// ring window's records, was cut short: the records before the cut are
// read, in order, and cut_short() says so; nothing after the cut is read,
// so what is read is always a prefix of the session. Every loop over the
// file is bounded by its size.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "profiler/base/category.h"

namespace memprof {

enum class RecordKind : uint8_t {
  kAlloc = 1,
  kFree,
  kResolve,
  kPending,
  kMark,
  kRefusal,
  kEnd,
  kScopeName,
  kScopeEnter,
  kScopeExit,
};

struct Record {
  int64_t seq = 0;
  uint64_t a = 0;
  uint64_t b = 0;
  uint64_t check = 0;
};
static_assert(sizeof(Record) == 32);

inline constexpr uint64_t kTagBytesMask = (uint64_t{1} << 48) - 1;
inline constexpr uint8_t kTagOwned = 0x80;

// A block's tag, as the tracker's table and the records hold it.
inline constexpr uint64_t Tag(int64_t bytes, Category category, uint8_t flags) {
  return static_cast<uint64_t>(bytes) | static_cast<uint64_t>(category) << 48 |
         static_cast<uint64_t>(flags) << 56;
}
inline int64_t BytesOfTag(uint64_t tag) {
  return static_cast<int64_t>(tag & kTagBytesMask);
}
inline Category CategoryOfTag(uint64_t tag) {
  return static_cast<Category>((tag >> 48) & 0xff);
}
inline uint8_t FlagsOfTag(uint64_t tag) {  // kTagOwned included
  return static_cast<uint8_t>(tag >> 56);
}

// A mark record's `a`: phase | step << 8.
inline uint64_t MarkWord(Phase phase, int32_t step) {
  return static_cast<uint64_t>(phase) |
         static_cast<uint64_t>(static_cast<uint32_t>(step)) << 8;
}
inline Phase PhaseOfMarkWord(uint64_t a) {
  return static_cast<Phase>(a & 0xff);
}
inline int32_t StepOfMarkWord(uint64_t a) {
  return static_cast<int32_t>(a >> 8);
}
inline constexpr size_t kCaptureHeaderBytes = 4096;
inline constexpr size_t kCaptureWindowBytes = size_t{1} << 20;
// The free space a capture leaves its file system (Note [Capture file]):
// this much, or a twentieth of a file system smaller than 20 times it.
inline constexpr int64_t kCaptureDiskReserve = int64_t{1} << 30;
inline constexpr int kCaptureRingWindows = 2;

// Kind in the top byte, the payload folded by xor below (four
// instructions on the hook's hot path; Note [Hook cost]).
inline uint64_t RecordCheck(RecordKind kind, int64_t seq, uint64_t a,
                            uint64_t b) {
  const uint64_t fold = static_cast<uint64_t>(seq) ^ a ^ (b >> 8) ^ (b << 8);
  return static_cast<uint64_t>(kind) << 56 | (fold & ((uint64_t{1} << 56) - 1));
}

// A record's kind, or 0 when it is torn (Note [Capture file]).
inline uint8_t ValidKind(const Record& r) {
  const uint8_t kind = static_cast<uint8_t>(r.check >> 56);
  if (kind < static_cast<uint8_t>(RecordKind::kAlloc) ||
      kind > static_cast<uint8_t>(RecordKind::kScopeExit)) {
    return 0;
  }
  return r.check == RecordCheck(static_cast<RecordKind>(kind), r.seq, r.a, r.b)
             ? kind
             : 0;
}

// Appends the kScopeName records of scope `id`, named `name` (bytes up to
// its first NUL), at `seq`.
template <typename Writer>
void AppendScopeName(Writer& writer, int64_t seq, uint32_t id,
                     const std::string& name) {
  for (size_t at = 0; at < name.size(); at += 8) {
    uint64_t chunk = 0;
    std::memcpy(&chunk, name.data() + at,
                std::min<size_t>(8, name.size() - at));
    writer.Append(RecordKind::kScopeName, seq,
                  id | static_cast<uint64_t>(at / 8) << 32, chunk);
  }
}

// Adds one kScopeName record to `names` (indexed by id). False when it
// does not continue the name it belongs to, or starts a name out of turn
// (ids are given 0, 1, 2... in order of first use).
bool AddScopeNameRecord(const Record& r, std::vector<std::string>& names);

// The file one session writes. Appends are not thread-safe (the tracker's
// lock serializes them). Throws std::runtime_error naming the path.
class CaptureWriter {
 public:
  CaptureWriter() = default;
  CaptureWriter(const CaptureWriter&) = delete;
  CaptureWriter& operator=(const CaptureWriter&) = delete;
  ~CaptureWriter() { Close(); }

  // Creates `path` anew (unlinking a file there), locks it, writes the
  // header, reserves and maps the ring; ""
  // opens an unnamed temporary file instead. Closes a file already open.
  void Open(const std::string& path, int64_t begin_seq, int64_t begin_unix_us,
            const std::string& meta_json);
  // Commits one record (Note [Capture file]). Inline: the hook's hot path.
  void Append(RecordKind kind, int64_t seq, uint64_t a, uint64_t b) {
    if (cursor_ == end_) Spill();
    Record* r = cursor_++;
    r->seq = seq;
    r->a = a;
    r->b = b;
    __atomic_store_n(&r->check, RecordCheck(kind, seq, a, b), __ATOMIC_RELEASE);
  }
  // The ring window is used up: the next Append spills it.
  bool full() const { return cursor_ == end_; }
  // Spills what the ring window holds, unmaps the ring and hands over the
  // descriptor (-1 when none was open).
  int Finish();
  void Close();
  const std::string& path() const { return path_; }  // "": temporary
  // "" while every window was written; else why a spill failed ("capture
  // file PATH: cannot write: REASON; REMEDY"): the records since are lost.
  const std::string& error() const { return error_; }

 private:
  // Copies the ring window to the next spilled window, counts it in the
  // header, zeroes it, and turns to the other ring window; when the copy
  // fails, keeps the window and discards from then on (Note [Capture
  // file]).
  void Spill();

  int fd_ = -1;
  std::string path_;
  char* map_ = nullptr;       // the header page and the ring
  int64_t spilled_ = 0;       // windows spilled so far
  Record* window_ = nullptr;  // the ring window in use
  Record* cursor_ = nullptr;
  Record* end_ = nullptr;
  std::string error_;
};

// What a capture's header says.
struct CaptureHeader {
  int64_t begin_seq = 0;
  int64_t begin_unix_us = 0;
  std::string meta_json;
};

// A finished or killed session's file, read front to back with a buffer
// (so reading it costs a buffer, whatever its length). Opening throws
// InputError "PATH: REASON; REMEDY" for a file that is not a capture or
// whose header is damaged (Note [Damaged capture]).
class CaptureReader {
 public:
  explicit CaptureReader(const std::string& path);
  // Reads the file behind `fd` (kept open by its owner), named `name`.
  CaptureReader(int fd, const std::string& name);
  CaptureReader(const CaptureReader&) = delete;
  CaptureReader& operator=(const CaptureReader&) = delete;
  ~CaptureReader();

  const CaptureHeader& header() const { return header_; }
  // The next committed record and its kind; false at the end, at the
  // first torn record (then torn() is true) or where the file was cut
  // short (cut_short()). Throws InputError when a record is out of seq
  // order (Note [Damaged capture]).
  bool Next(Record& record, RecordKind& kind);
  bool torn() const { return torn_; }
  bool cut_short() const { return cut_short_; }
  int64_t records() const { return records_; }
  int64_t file_bytes() const { return file_bytes_; }
  int64_t spilled_windows() const { return spilled_; }  // as counted
  // Back to the first record.
  void Rewind();

 private:
  void ReadHeader(const std::string& name);
  [[noreturn]] void Damaged(const std::string& why);
  bool Fill();  // the next window: spilled ones, then the ring's

  int fd_ = -1;
  bool owned_ = false;
  std::string name_;
  std::vector<Record> buffer_;  // one window
  size_t at_ = 0, size_ = 0;
  int64_t file_bytes_ = 0;
  int64_t spilled_ = 0;          // as the header counts them
  int64_t spilled_present_ = 0;  // spilled windows the file holds, whole or not
  bool ring_empty_ = false;      // the ring window after them holds nothing
  int64_t window_ = 0;           // the next to read: spilled_ is the ring's
  bool short_window_ = false;    // the window in the buffer ends the file
  int64_t records_ = 0;
  int64_t next_seq_ = 0;  // the least seq the next record may have
  bool torn_ = false;
  bool cut_short_ = false;
  bool done_ = false;
  CaptureHeader header_;
};

// True while a running session holds the file at `path` (its flock, Note
// [Capture file]); false for a killed or finished session's file, or one
// that cannot be opened.
bool CaptureLive(const std::string& path);

// The file a Capture reads back: a path, or an unnamed temporary file
// (only the descriptor). Closes the descriptor when the last Capture
// holding it goes.
class CaptureFile {
 public:
  CaptureFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  CaptureFile(const CaptureFile&) = delete;
  CaptureFile& operator=(const CaptureFile&) = delete;
  ~CaptureFile();
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }  // "": temporary

 private:
  int fd_;
  std::string path_;
};

// An unnamed read-write file in $TMPDIR (or /tmp), gone when closed; -1
// with errno set when none can be made.
int OpenTemporaryFile();

// DIR/capture-<r>.bin: the one place the name is built.
std::string CapturePath(const std::string& dir, int rank);

}  // namespace memprof
