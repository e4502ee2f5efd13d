#include "profiler/capture/capture_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "profiler/base/errors.h"

namespace memprof {
namespace {

constexpr char kMagic[8] = {'M', 'P', 'C', 'A', 'P', 'T', '0', '1'};
// magic, record bytes (u32), meta length (u32), begin_seq, begin_unix_us.
constexpr size_t kFixedHeaderBytes = 8 + 4 + 4 + 8 + 8;
constexpr size_t kReadRecords = size_t{1} << 15;  // 1 MiB buffer

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
    const char* tmp = std::getenv("TMPDIR");
    const std::string dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
    fd_ = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
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
      static_cast<ssize_t>(header.size())) {
    Fail("cannot write the header", path);
  }
  windows_ = 0;
  window_ = cursor_ = end_ = nullptr;
}

void CaptureWriter::NextWindow() {
  if (window_ != nullptr) ::munmap(window_, kWindowBytes);
  const off_t offset =
      static_cast<off_t>(kCaptureHeaderBytes + windows_ * kWindowBytes);
  if (::ftruncate(fd_, offset + static_cast<off_t>(kWindowBytes)) != 0) {
    Fail("cannot grow", path_);
  }
  void* mapped = ::mmap(nullptr, kWindowBytes, PROT_READ | PROT_WRITE,
                        MAP_SHARED, fd_, offset);
  if (mapped == MAP_FAILED) Fail("cannot map", path_);
  ++windows_;
  window_ = cursor_ = static_cast<Record*>(mapped);
  end_ = window_ + kWindowBytes / sizeof(Record);
}

int CaptureWriter::Finish() {
  if (fd_ < 0) return -1;
  int64_t records = 0;
  if (window_ != nullptr) {
    records =
        (windows_ - 1) * static_cast<int64_t>(kWindowBytes / sizeof(Record)) +
        (cursor_ - window_);
    ::munmap(window_, kWindowBytes);
  }
  const off_t size =
      static_cast<off_t>(kCaptureHeaderBytes + records * sizeof(Record));
  if (::ftruncate(fd_, size) != 0) Fail("cannot cut", path_);
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
                     ": not a memprof capture (no MPCAPT01 header with "
                     "32-byte records); give the capture-<r>.bin a run left "
                     "in its --out");
  }
  std::memcpy(&header_.begin_seq, fixed + 16, 8);
  std::memcpy(&header_.begin_unix_us, fixed + 24, 8);
  header_.meta_json.resize(meta_bytes);
  if (::pread(fd_, header_.meta_json.data(), meta_bytes, kFixedHeaderBytes) !=
      static_cast<ssize_t>(meta_bytes)) {
    header_.meta_json.clear();
  }
  buffer_.resize(kReadRecords);
  Rewind();
}

void CaptureReader::Rewind() {
  offset_ = kCaptureHeaderBytes;
  at_ = size_ = 0;
  records_ = 0;
  torn_ = done_ = false;
}

bool CaptureReader::Fill() {
  const size_t want = buffer_.size() * sizeof(Record);
  auto* bytes = reinterpret_cast<char*>(buffer_.data());
  size_t got = 0;
  while (got < want) {
    const ssize_t n = ::pread(fd_, bytes + got, want - got, offset_ + got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  offset_ += static_cast<int64_t>(got);
  at_ = 0;
  size_ = got / sizeof(Record);
  // A partial record at the end of the file is torn.
  if (got % sizeof(Record) != 0) torn_ = true;
  return size_ > 0;
}

bool CaptureReader::Next(Record& record, RecordKind& kind) {
  if (done_) return false;
  if (at_ == size_ && !Fill()) {
    done_ = true;
    return false;
  }
  const Record& r = buffer_[at_++];
  const uint8_t valid = ValidKind(r);
  if (valid == 0) {
    // Zeros from here on are the unwritten tail; anything else is torn.
    torn_ = torn_ || r.seq != 0 || r.a != 0 || r.b != 0 || r.check != 0;
    done_ = true;
    return false;
  }
  record = r;
  kind = static_cast<RecordKind>(valid);
  ++records_;
  return true;
}

CaptureFile::~CaptureFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string CapturePath(const std::string& dir, int rank) {
  return dir + "/capture-" + std::to_string(rank) + ".bin";
}

}  // namespace memprof
