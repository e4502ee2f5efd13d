#include "profiler/capture/capture_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"

namespace memprof {
namespace {

constexpr char kMagic[8] = {'M', 'P', 'C', 'A', 'P', 'T', '0', '3'};
// The magic of files written before named scopes; read as well.
constexpr char kMagicWithoutScopes[8] = {'M', 'P', 'C', 'A',
                                         'P', 'T', '0', '2'};
// magic, record bytes (u32), meta length (u32), begin_seq, begin_unix_us,
// spilled windows (written as they are spilled).
constexpr size_t kSpilledOffset = 32;
constexpr size_t kFixedHeaderBytes = kSpilledOffset + 8;
constexpr size_t kWindowRecords = kCaptureWindowBytes / sizeof(Record);
constexpr size_t kMappedBytes =
    kCaptureHeaderBytes + kCaptureRingWindows * kCaptureWindowBytes;

// Where window `w` of the ring, and spilled window `s`, lie in the file.
off_t RingOffset(int64_t w) {
  return static_cast<off_t>(kCaptureHeaderBytes +
                            (w % kCaptureRingWindows) * kCaptureWindowBytes);
}
off_t SpillOffset(int64_t s) {
  return static_cast<off_t>(kMappedBytes + s * kCaptureWindowBytes);
}

// "capture file PATH", as its errors name it.
std::string CaptureName(const std::string& path) {
  return "capture file " + (path.empty() ? std::string("(temporary)") : path);
}

// "capture file PATH: WHAT: REASON", with the remedy for a full disk.
std::string Failure(const std::string& what, const std::string& path) {
  const bool full = errno == ENOSPC || errno == EDQUOT;
  return CaptureName(path) + ": " + what + ": " + std::strerror(errno) +
         (full ? "; free space on its file system or choose another --out"
               : "");
}

[[noreturn]] void Fail(const std::string& what, const std::string& path) {
  throw std::runtime_error(Failure(what, path));
}

// Whether a record takes the next seq (the tracker ticks seq for these).
bool TakesSeq(RecordKind kind) {
  return kind == RecordKind::kAlloc || kind == RecordKind::kFree ||
         kind == RecordKind::kRefusal;
}

bool IsZero(const Record& r) {
  return r.seq == 0 && r.a == 0 && r.b == 0 && r.check == 0;
}

}  // namespace

void CaptureWriter::Open(const std::string& path, int64_t begin_seq,
                         int64_t begin_unix_us, const std::string& meta_json) {
  Close();
  if (path.empty()) {
    fd_ = OpenTemporaryFile();
  } else {
    // A new file, never one an earlier session may still hold mapped.
    ::unlink(path.c_str());
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  }
  path_ = path;
  error_.clear();
  if (fd_ < 0) Fail("cannot create", path);
  if (!path.empty() && ::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    Fail("cannot lock", path);
  }
  std::string header(kCaptureHeaderBytes, '\0');
  const uint32_t record_bytes = sizeof(Record);
  const uint32_t meta_bytes = static_cast<uint32_t>(
      std::min(meta_json.size(), kCaptureHeaderBytes - kFixedHeaderBytes));
  char* p = header.data();
  std::memcpy(p, kMagic, 8);
  std::memcpy(p + 8, &record_bytes, 4);
  std::memcpy(p + 12, &meta_bytes, 4);
  std::memcpy(p + 16, &begin_seq, 8);
  std::memcpy(p + 24, &begin_unix_us, 8);
  std::memcpy(p + kFixedHeaderBytes, meta_json.data(), meta_bytes);
  if (::pwrite(fd_, header.data(), header.size(), 0) !=
      static_cast<ssize_t>(header.size())) {
    Fail("cannot write the header", path);
  }
  // Reserved before mapped (Note [Capture file]).
  const int reserved = ::posix_fallocate(fd_, 0, kMappedBytes);
  if (reserved != 0) {
    errno = reserved;
    Fail("cannot reserve its first " + std::to_string((kMappedBytes >> 20)) +
             " MiB",
         path);
  }
  void* mapped =
      ::mmap(nullptr, kMappedBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (mapped == MAP_FAILED) Fail("cannot map", path);
  map_ = static_cast<char*>(mapped);
  spilled_ = 0;
  window_ = cursor_ = reinterpret_cast<Record*>(map_ + RingOffset(0));
  end_ = window_ + kWindowRecords;
}

// "" while writing `bytes` more leaves the file system of `fd` its reserve
// (Note [Capture file]); else why the capture stops.
std::string ReserveShortfall(int fd, size_t bytes, int64_t file_bytes,
                             const std::string& path) {
  struct statvfs fs {};
  if (::fstatvfs(fd, &fs) != 0) return "";  // the write itself will tell
  const int64_t unit = static_cast<int64_t>(fs.f_frsize);
  const int64_t free_bytes = static_cast<int64_t>(fs.f_bavail) * unit;
  const int64_t size = static_cast<int64_t>(fs.f_blocks) * unit;
  const int64_t reserve = std::min(kCaptureDiskReserve, size / 20);
  if (free_bytes - static_cast<int64_t>(bytes) >= reserve) return "";
  return CaptureName(path) + ": stopped at " + HumanBytes(file_bytes) +
         ": its file system has " + HumanBytes(free_bytes) +
         " free, and the capture leaves it " + HumanBytes(reserve) +
         "; free space on its file system, choose another --out, or profile "
         "fewer steps";
}

void CaptureWriter::Spill() {
  const size_t bytes = static_cast<size_t>(cursor_ - window_) * sizeof(Record);
  const char* from = reinterpret_cast<const char*>(window_);
  if (error_.empty()) {
    error_ = ReserveShortfall(fd_, bytes, SpillOffset(spilled_), path_);
  }
  for (size_t done = 0; done < bytes && error_.empty();) {
    const ssize_t n =
        ::pwrite(fd_, from + done, bytes - done, SpillOffset(spilled_) + done);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = ENOSPC;
    if (n <= 0) error_ = Failure("cannot write", path_);
    if (n > 0) done += static_cast<size_t>(n);
  }
  if (!error_.empty()) {
    // The window in the ring stays the file's last; what follows is
    // written over and over into the other one, which no reader reads.
    window_ = cursor_ =
        reinterpret_cast<Record*>(map_ + RingOffset(spilled_ + 1));
    end_ = window_ + kWindowRecords;
    return;
  }
  ++spilled_;
  __atomic_store_n(reinterpret_cast<int64_t*>(map_ + kSpilledOffset), spilled_,
                   __ATOMIC_RELEASE);
  // The window is the file's mapped bytes, zeroed as bytes: a record's
  // commit word reads 0 until the record is written whole.
  std::memset(static_cast<void*>(window_), 0, bytes);
  window_ = cursor_ = reinterpret_cast<Record*>(map_ + RingOffset(spilled_));
  end_ = window_ + kWindowRecords;
}

int CaptureWriter::Finish() {
  if (fd_ < 0) return -1;
  if (cursor_ != window_ && error_.empty()) Spill();
  ::munmap(map_, kMappedBytes);
  map_ = nullptr;
  window_ = cursor_ = end_ = nullptr;
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void CaptureWriter::Close() {
  const int fd = Finish();
  if (fd >= 0) ::close(fd);
}

CaptureReader::CaptureReader(const std::string& path)
    : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)), owned_(true) {
  if (fd_ < 0) {
    throw InputError(path + ": cannot read: " + std::strerror(errno) +
                     "; give the capture-<r>.bin a run left in its --out");
  }
  ReadHeader(path);
}

CaptureReader::CaptureReader(int fd, const std::string& name) : fd_(fd) {
  ReadHeader(name);
}

CaptureReader::~CaptureReader() {
  if (owned_) ::close(fd_);
}

void CaptureReader::Damaged(const std::string& why) {
  if (owned_) ::close(fd_);
  owned_ = false;
  throw InputError(name_ + ": " + why +
                   ": the capture is damaged; recover from an intact copy of "
                   "it, or profile the run again");
}

void CaptureReader::ReadHeader(const std::string& name) {
  name_ = name;
  char fixed[kFixedHeaderBytes];
  const ssize_t n = ::pread(fd_, fixed, sizeof fixed, 0);
  uint32_t record_bytes = 0, meta_bytes = 0;
  if (n == static_cast<ssize_t>(sizeof fixed)) {
    std::memcpy(&record_bytes, fixed + 8, 4);
    std::memcpy(&meta_bytes, fixed + 12, 4);
  }
  if (n != static_cast<ssize_t>(sizeof fixed) ||
      (std::memcmp(fixed, kMagic, 8) != 0 &&
       std::memcmp(fixed, kMagicWithoutScopes, 8) != 0) ||
      record_bytes != sizeof(Record) ||
      meta_bytes > kCaptureHeaderBytes - kFixedHeaderBytes) {
    if (owned_) ::close(fd_);
    owned_ = false;
    throw InputError(name +
                     ": not a memprof capture (no MPCAPT03 header with "
                     "32-byte records); give the capture-<r>.bin a run left "
                     "in its --out");
  }
  std::memcpy(&header_.begin_seq, fixed + 16, 8);
  std::memcpy(&header_.begin_unix_us, fixed + 24, 8);
  std::memcpy(&spilled_, fixed + kSpilledOffset, 8);
  header_.meta_json.resize(meta_bytes);
  if (::pread(fd_, header_.meta_json.data(), meta_bytes, kFixedHeaderBytes) !=
      static_cast<ssize_t>(meta_bytes)) {
    header_.meta_json.clear();
  }
  // Note [Damaged capture]: the header against the file.
  struct stat st {};
  if (::fstat(fd_, &st) != 0) Damaged("cannot stat");
  file_bytes_ = st.st_size;
  if (spilled_ < 0) {
    Damaged("its header counts " + std::to_string(spilled_) +
            " spilled windows");
  }
  spilled_present_ = file_bytes_ > static_cast<int64_t>(kMappedBytes)
                         ? (file_bytes_ - static_cast<int64_t>(kMappedBytes) +
                            static_cast<int64_t>(kCaptureWindowBytes) - 1) /
                               static_cast<int64_t>(kCaptureWindowBytes)
                         : 0;
  if (spilled_present_ > spilled_ + 1) {
    Damaged("it holds " + std::to_string(spilled_present_) +
            " spilled windows but its header counts " +
            std::to_string(spilled_));
  }
  Record ring{};
  ring_empty_ = ::pread(fd_, &ring, sizeof ring, RingOffset(spilled_)) !=
                    static_cast<ssize_t>(sizeof ring) ||
                IsZero(ring);
  if (spilled_present_ == spilled_ + 1) {
    // Killed between a window's copy and its count: the ring window holds
    // it whole. Anything else is a window the header does not count.
    Record copy{};
    const ssize_t got = ::pread(fd_, &copy, sizeof copy, SpillOffset(spilled_));
    if (got <= 0 || std::memcmp(&copy, &ring, static_cast<size_t>(got)) != 0) {
      Damaged("it holds " + std::to_string(spilled_present_) +
              " spilled windows but its header counts " +
              std::to_string(spilled_));
    }
  }
  if (header_.begin_seq < 0) {
    Damaged("its header's first seq is " + std::to_string(header_.begin_seq));
  }
  const int64_t written_us = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000 +
                             st.st_mtim.tv_nsec / 1000;
  constexpr int64_t kClockSlackUs = 1000000;  // mtime's coarse clock
  if (header_.begin_unix_us <= 0) {
    Damaged("its header's session start is " +
            std::to_string(header_.begin_unix_us) + " us since 1970");
  }
  if (header_.begin_unix_us > written_us + kClockSlackUs) {
    Damaged("its header's session start, " +
            std::to_string(header_.begin_unix_us) +
            " us since 1970, is after the file was last written (" +
            std::to_string(written_us) + " us)");
  }
  buffer_.resize(kWindowRecords);
  Rewind();
}

void CaptureReader::Rewind() {
  window_ = 0;
  at_ = size_ = 0;
  short_window_ = false;
  records_ = 0;
  next_seq_ = header_.begin_seq;
  torn_ = cut_short_ = done_ = false;
}

bool CaptureReader::Fill() {
  // The spilled windows the header counts and the file holds, then the
  // ring's (Note [Damaged capture]: a missing window ends the reading).
  if (window_ > spilled_) return false;  // the ring's window was read
  const bool ring = window_ == spilled_;
  const off_t offset = ring ? RingOffset(spilled_) : SpillOffset(window_);
  ++window_;
  const size_t want = kCaptureWindowBytes;
  auto* bytes = reinterpret_cast<char*>(buffer_.data());
  size_t got = 0;
  while (got < want) {
    const ssize_t n = ::pread(fd_, bytes + got, want - got, offset + got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  // A file cut inside a record: that record is torn.
  if (got % sizeof(Record) != 0) torn_ = true;
  short_window_ = got < want;
  at_ = 0;
  size_ = got / sizeof(Record);
  return true;
}

bool CaptureReader::Next(Record& record, RecordKind& kind) {
  while (!done_) {
    if (at_ == size_) {
      // A window that ends the file without a zero record: the file goes
      // on past the cut, unless it is the last spilled window a finished
      // session wrote (its ring window then holds nothing).
      const bool spilled_last = window_ == spilled_ && ring_empty_;
      if (short_window_ && !spilled_last) {
        cut_short_ = true;
        break;
      }
      if (window_ < spilled_ && window_ >= spilled_present_) {
        cut_short_ = true;  // the file ends before the windows it counts
        break;
      }
      if (!Fill()) break;
      continue;
    }
    const Record& r = buffer_[at_++];
    const uint8_t valid = ValidKind(r);
    if (valid != 0) {
      kind = static_cast<RecordKind>(valid);
      if (records_ == 0 && r.seq != header_.begin_seq) {
        Damaged("its first record has seq " + std::to_string(r.seq) +
                " but its header's first seq is " +
                std::to_string(header_.begin_seq));
      }
      if (r.seq < next_seq_) {
        Damaged("record " + std::to_string(records_) + " has seq " +
                std::to_string(r.seq) + ", before the seq " +
                std::to_string(next_seq_) + " the records before it reached");
      }
      next_seq_ = r.seq + (TakesSeq(kind) ? 1 : 0);
      record = r;
      ++records_;
      return true;
    }
    if (!IsZero(r)) {
      torn_ = true;  // not the zeros of an unwritten tail
      break;
    }
    // Zeros: the rest of this window was never written; the ring's window
    // follows a spilled one that was cut short by the end of the session.
    at_ = size_;
    short_window_ = false;
  }
  done_ = true;
  return false;
}

bool AddScopeNameRecord(const Record& r, std::vector<std::string>& names) {
  const uint64_t id = r.a & 0xffffffffu;
  const uint64_t chunk = r.a >> 32;
  if (chunk == 0) {
    if (id != names.size()) return false;
    names.emplace_back();
  } else if (id + 1 != names.size() || names[id].size() != chunk * 8) {
    return false;  // not the next 8 bytes of the newest name
  }
  char bytes[8];
  std::memcpy(bytes, &r.b, 8);
  names[id].append(bytes, strnlen(bytes, 8));
  return true;
}

int OpenTemporaryFile() {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  // A file system without O_TMPFILE: a named file, unlinked at once.
  std::string name = dir + "/memprof-XXXXXX";
  const int named = ::mkostemp(name.data(), O_CLOEXEC);
  if (named >= 0) ::unlink(name.c_str());
  return named;
}

CaptureFile::~CaptureFile() {
  if (fd_ >= 0) ::close(fd_);
}

bool CaptureLive(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool live = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return live;
}

std::string CapturePath(const std::string& dir, int rank) {
  return dir + "/capture-" + std::to_string(rank) + ".bin";
}

}  // namespace memprof
