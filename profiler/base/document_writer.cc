#include "profiler/base/document_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "profiler/base/atomic_file.h"
#include "profiler/base/pickle_writer.h"

namespace memprof {
namespace {

constexpr size_t kFlushBytes = size_t{1} << 20;
constexpr int64_t kPickleBatch = 1000;

}  // namespace

DocumentWriter::DocumentWriter(const std::string& path, DocumentFormat format)
    : path_(path),
      temp_(path + ".tmp." + std::to_string(::getpid())),
      format_(format) {
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw std::runtime_error("cannot write '" + path_ +
                             "': " + WriteFailureReason(errno));
  }
  if (format_ == DocumentFormat::kPickle) buffer_ = {'\x80', '\x02'};
}

DocumentWriter::~DocumentWriter() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  std::remove(temp_.c_str());
}

void DocumentWriter::Flush() {
  size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n =
        ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw std::runtime_error("cannot write '" + path_ +
                               "': " + WriteFailureReason(errno));
    }
    done += static_cast<size_t>(n);
  }
  written_ += static_cast<int64_t>(done);
  buffer_.clear();
}

void DocumentWriter::BeforeItem() {
  if (after_key_) {  // the value of a key: nothing between them
    after_key_ = false;
    return;
  }
  if (levels_.empty()) return;
  Level& level = levels_.back();
  if (format_ == DocumentFormat::kJson) {
    if (level.items > 0) buffer_ += ',';
    if (levels_.size() <= 2) buffer_ += '\n';
  } else if (!level.object) {
    if (level.items == kPickleBatch) {
      buffer_ += 'e';  // APPENDS
      level.items = 0;
    }
    if (level.items == 0) buffer_ += '(';  // MARK
  }
  ++level.items;
}

void DocumentWriter::BeginObject() {
  BeforeItem();
  buffer_ += format_ == DocumentFormat::kJson ? "{" : "}(";  // EMPTY_DICT MARK
  levels_.push_back(Level{true, 0});
}

void DocumentWriter::EndObject() {
  const bool lines = format_ == DocumentFormat::kJson && levels_.size() <= 2 &&
                     levels_.back().items > 0;
  levels_.pop_back();
  if (format_ == DocumentFormat::kJson) {
    buffer_ += lines ? "\n}" : "}";
  } else {
    buffer_ += 'u';  // SETITEMS
  }
  if (buffer_.size() >= kFlushBytes) Flush();
}

void DocumentWriter::BeginArray() {
  BeforeItem();
  buffer_ += format_ == DocumentFormat::kJson ? '[' : ']';  // EMPTY_LIST
  levels_.push_back(Level{false, 0});
}

void DocumentWriter::EndArray() {
  const Level level = levels_.back();
  const bool lines = levels_.size() <= 2 && level.items > 0;
  levels_.pop_back();
  if (format_ == DocumentFormat::kJson) {
    buffer_ += lines ? "\n]" : "]";
  } else if (level.items > 0) {
    buffer_ += 'e';  // APPENDS
  }
  if (buffer_.size() >= kFlushBytes) Flush();
}

void DocumentWriter::Key(const std::string& key) {
  BeforeItem();
  if (format_ == DocumentFormat::kJson) {
    buffer_ += nlohmann::ordered_json(key).dump();
    buffer_ += ':';
  } else {
    AppendPickled(buffer_, nlohmann::ordered_json(key));
  }
  after_key_ = true;
}

void DocumentWriter::Value(const nlohmann::ordered_json& value) {
  BeforeItem();
  if (format_ == DocumentFormat::kJson) {
    buffer_ += value.dump();
  } else {
    AppendPickled(buffer_, value);
  }
  if (buffer_.size() >= kFlushBytes) Flush();
}

void DocumentWriter::Commit() {
  if (format_ == DocumentFormat::kJson) {
    buffer_ += '\n';
  } else {
    buffer_ += '.';  // STOP
  }
  Flush();
  const bool synced = ::fsync(fd_) == 0;
  const bool closed = ::close(fd_) == 0;
  fd_ = -1;
  if (!synced || !closed || std::rename(temp_.c_str(), path_.c_str()) != 0) {
    const std::string reason = WriteFailureReason(errno);
    std::remove(temp_.c_str());
    committed_ = true;
    throw std::runtime_error("cannot write '" + path_ + "': " + reason);
  }
  committed_ = true;
}

}  // namespace memprof
