#include "profiler/capture/capture_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "profiler/base/errors.h"

namespace memprof {
namespace {

constexpr char kMagic[8] = {'M', 'P', 'C', 'A', 'P', 'T', '0', '2'};
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

[[noreturn]] void Fail(const std::string& what, const std::string& path) {
  throw std::runtime_error("capture file " +
                           (path.empty() ? std::string("(temporary)") : path) +
                           ": " + what + ": " + std::strerror(errno));
}

}  // namespace

void CaptureWriter::Open(const std::string& path, int64_t begin_seq,
                         int64_t begin_unix_us, const std::string& meta_json) {
  Close();
  if (path.empty()) {
    fd_ = OpenTemporaryFile();
  } else {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  }
  path_ = path;
  if (fd_ < 0) Fail("cannot create", path);
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
          static_cast<ssize_t>(header.size()) ||
      ::ftruncate(fd_, static_cast<off_t>(kMappedBytes)) != 0) {
    Fail("cannot write the header", path);
  }
  void* mapped =
      ::mmap(nullptr, kMappedBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (mapped == MAP_FAILED) Fail("cannot map", path);
  map_ = static_cast<char*>(mapped);
  spilled_ = 0;
  window_ = cursor_ = reinterpret_cast<Record*>(map_ + RingOffset(0));
  end_ = window_ + kWindowRecords;
}

void CaptureWriter::Spill() {
  const size_t bytes = static_cast<size_t>(cursor_ - window_) * sizeof(Record);
  const char* from = reinterpret_cast<const char*>(window_);
  for (size_t done = 0; done < bytes;) {
    const ssize_t n =
        ::pwrite(fd_, from + done, bytes - done, SpillOffset(spilled_) + done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) Fail("cannot write", path_);
    done += static_cast<size_t>(n);
  }
  ++spilled_;
  __atomic_store_n(reinterpret_cast<int64_t*>(map_ + kSpilledOffset), spilled_,
                   __ATOMIC_RELEASE);
  std::memset(window_, 0, bytes);
  window_ = cursor_ = reinterpret_cast<Record*>(map_ + RingOffset(spilled_));
  end_ = window_ + kWindowRecords;
}

int CaptureWriter::Finish() {
  if (fd_ < 0) return -1;
  if (cursor_ != window_) Spill();
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

void CaptureReader::ReadHeader(const std::string& name) {
  char fixed[kFixedHeaderBytes];
  const ssize_t n = ::pread(fd_, fixed, sizeof fixed, 0);
  uint32_t record_bytes = 0, meta_bytes = 0;
  if (n == static_cast<ssize_t>(sizeof fixed)) {
    std::memcpy(&record_bytes, fixed + 8, 4);
    std::memcpy(&meta_bytes, fixed + 12, 4);
  }
  if (n != static_cast<ssize_t>(sizeof fixed) ||
      std::memcmp(fixed, kMagic, 8) != 0 || record_bytes != sizeof(Record) ||
      meta_bytes > kCaptureHeaderBytes - kFixedHeaderBytes) {
    if (owned_) ::close(fd_);
    owned_ = false;
    throw InputError(name +
                     ": not a memprof capture (no MPCAPT02 header with "
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
  buffer_.resize(kWindowRecords);
  Rewind();
}

void CaptureReader::Rewind() {
  window_ = 0;
  at_ = size_ = 0;
  records_ = 0;
  torn_ = done_ = false;
}

bool CaptureReader::Fill() {
  if (window_ > spilled_) return false;  // the ring's window was read
  const off_t offset =
      window_ < spilled_ ? SpillOffset(window_) : RingOffset(window_);
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
  if (got % sizeof(Record) != 0) {
    torn_ = true;
    std::memset(bytes + got, 0, want - got);
  }
  at_ = 0;
  size_ = got / sizeof(Record);
  return true;
}

bool CaptureReader::Next(Record& record, RecordKind& kind) {
  while (!done_) {
    if (at_ == size_) {
      if (!Fill()) break;
      continue;
    }
    const Record& r = buffer_[at_++];
    const uint8_t valid = ValidKind(r);
    if (valid != 0) {
      record = r;
      kind = static_cast<RecordKind>(valid);
      ++records_;
      return true;
    }
    if (r.seq != 0 || r.a != 0 || r.b != 0 || r.check != 0) {
      torn_ = true;  // not the zeros of an unwritten tail
      break;
    }
    // Zeros: the rest of this window was never written; the ring's window
    // follows a spilled one that was cut short by the end of the session.
    at_ = size_;
  }
  done_ = true;
  return false;
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

std::string CapturePath(const std::string& dir, int rank) {
  return dir + "/capture-" + std::to_string(rank) + ".bin";
}

}  // namespace memprof
