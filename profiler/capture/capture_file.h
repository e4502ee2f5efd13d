// The capture file: every event of a session, on disk, in seq order
// (DIR/capture-<r>.bin during a run; a temporary file when no path is
// given).
//
// Note [Capture file]
// A 4 KiB header (magic "MPCAPT01", record size, the session's first seq
// and wall clock, then a JSON text the caller chose: the rank's context)
// followed by 32-byte records {seq, a, b, check}, appended under the
// tracker's lock, so in seq order. `check` holds the record's kind in its
// top byte and the payload (seq, a, b) folded into 56 bits below; it is
// written last, with a release store, so a record whose check does not match
// its payload (the zeros past the end, or a record the process was killed while
// writing) is torn: the reader stops there and drops it, never reads it. The
// writer maps the file one 1 MiB window at a time (ftruncate grows the file
// with zeros, a full window is unmapped before the next is mapped), so the
// process holds one window, not the run: the rest lives in the page cache,
// which outlives a process killed by SIGKILL or the OOM killer: every record
// committed before the kill is in the file.
//
// Records (a and b by kind):
//   alloc      seq of the event   block address   bytes (pending)
//   free       seq of the event   block address   tag at the free
//   resolve    seq in force       block address   tag after it
//   pending    seq in force       since seq       category
//   mark       mark's seq         phase|step<<8   ns since begin
//   refusal    seq of the event   bytes|system<<63 limit bytes
//   end        one past the last  0               ns since begin
// A tag is bytes (low 48 bits) | category << 48 | flags << 56; flag 0x80
// (kTagOwned) marks a category given by ownership.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace memprof {

enum class RecordKind : uint8_t {
  kAlloc = 1,
  kFree,
  kResolve,
  kPending,
  kMark,
  kRefusal,
  kEnd,
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
inline constexpr size_t kCaptureHeaderBytes = 4096;

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
      kind > static_cast<uint8_t>(RecordKind::kEnd)) {
    return 0;
  }
  return r.check == RecordCheck(static_cast<RecordKind>(kind), r.seq, r.a, r.b)
             ? kind
             : 0;
}

// The file one session writes. Appends are not thread-safe (the tracker's
// lock serializes them). Throws std::runtime_error naming the path.
class CaptureWriter {
 public:
  CaptureWriter() = default;
  CaptureWriter(const CaptureWriter&) = delete;
  CaptureWriter& operator=(const CaptureWriter&) = delete;
  ~CaptureWriter() { Close(); }

  // Creates (truncates) `path` and writes the header; "" opens an unnamed
  // temporary file instead. Closes a file already open.
  void Open(const std::string& path, int64_t begin_seq, int64_t begin_unix_us,
            const std::string& meta_json);
  // Commits one record (Note [Capture file]). Inline: the hook's hot path.
  void Append(RecordKind kind, int64_t seq, uint64_t a, uint64_t b) {
    if (cursor_ == end_) NextWindow();
    Record* r = cursor_++;
    r->seq = seq;
    r->a = a;
    r->b = b;
    __atomic_store_n(&r->check, RecordCheck(kind, seq, a, b), __ATOMIC_RELEASE);
  }
  // The mapped window is used up: the next Append maps another.
  bool full() const { return cursor_ == end_; }
  // Unmaps the window, cuts the file to its records and keeps the
  // descriptor for Reopen (-1 when none was open).
  int Finish();
  void Close();
  bool open() const { return fd_ >= 0; }

 private:
  static constexpr size_t kWindowBytes = size_t{1} << 20;
  void NextWindow();

  int fd_ = -1;
  std::string path_;
  int64_t windows_ = 0;  // mapped so far
  Record* window_ = nullptr;
  Record* cursor_ = nullptr;
  Record* end_ = nullptr;
};

// What a capture's header says.
struct CaptureHeader {
  int64_t begin_seq = 0;
  int64_t begin_unix_us = 0;
  std::string meta_json;
};

// A finished or killed session's file, read front to back with a buffer
// (so reading it costs a buffer, whatever its length). Opening by path
// throws InputError "PATH: REASON; REMEDY" for a file that is not a
// capture.
class CaptureReader {
 public:
  explicit CaptureReader(const std::string& path);
  // Reads the file behind `fd` (kept open by its owner), named `name`.
  CaptureReader(int fd, const std::string& name);
  CaptureReader(const CaptureReader&) = delete;
  CaptureReader& operator=(const CaptureReader&) = delete;
  ~CaptureReader();

  const CaptureHeader& header() const { return header_; }
  // The next committed record and its kind; false at the end or at the
  // first torn record (then torn() is true).
  bool Next(Record& record, RecordKind& kind);
  bool torn() const { return torn_; }
  int64_t records() const { return records_; }
  // Back to the first record.
  void Rewind();

 private:
  void ReadHeader(const std::string& name);
  bool Fill();

  int fd_ = -1;
  bool owned_ = false;
  std::vector<Record> buffer_;
  size_t at_ = 0, size_ = 0;
  int64_t offset_ = 0;  // of the next read
  int64_t records_ = 0;
  bool torn_ = false;
  bool done_ = false;
  CaptureHeader header_;
};

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

// DIR/capture-<r>.bin: the one place the name is built.
std::string CapturePath(const std::string& dir, int rank);

}  // namespace memprof
