// <memprof/gtest.h>'s MemoryLimit and LeakCheck: what the test wrote,
// checked, onto a CheckedScope.
#include <memprof/gtest.h>

#include "profiler/base/category.h"
#include "profiler/base/human_bytes.h"
#include "profiler/capture/cpu_hook.h"
#include "profiler/gtest/checked_scope.h"

namespace memprof {
namespace testing {
namespace {

int64_t LimitBytes(const std::string& where, const std::string& limit) {
  const int64_t bytes = ParseByteSize(limit);
  if (bytes < 1) {
    throw UsageError("memprof::testing::" + where + ": \"" + limit +
                     "\" is not a size; write it as \"64MiB\", \"1.5GiB\" or "
                     "a number of bytes (" +
                     kByteSizeUnits + ")");
  }
  return bytes;
}

int64_t PositiveBytes(const std::string& where, int64_t bytes) {
  if (bytes < 1) {
    throw UsageError("memprof::testing::" + where + ": a limit of " +
                     std::to_string(bytes) +
                     " bytes; give a positive number of bytes");
  }
  return bytes;
}

memprof::Category CategoryNamed(const std::string& name) {
  const std::optional<memprof::Category> c = CategoryFromName(name);
  if (!c || *c == memprof::Category::kPending) {
    std::string names;
    for (memprof::Category known : kAllCategories) {
      names += (names.empty() ? "" : ", ") + std::string(CategoryName(known));
    }
    throw UsageError("memprof::testing::MemoryLimit::Category: no category \"" +
                     name + "\"; use one of " + names);
  }
  return *c;
}

}  // namespace

void InstallHook() { InstallCpuHook(); }

MemoryLimit::MemoryLimit(const std::string& limit, Failure failure,
                         const char* file, int line)
    : MemoryLimit(LimitBytes("MemoryLimit", limit), failure, file, line) {}

MemoryLimit::MemoryLimit(int64_t limit_bytes, Failure failure, const char* file,
                         int line) {
  PositiveBytes("MemoryLimit", limit_bytes);
  scope_ = std::make_unique<CheckedScope>("MemoryLimit", failure, file, line);
  scope_->SetLimit(limit_bytes);
}

MemoryLimit::~MemoryLimit() { scope_->End(); }

MemoryLimit& MemoryLimit::Category(const std::string& category,
                                   const std::string& limit) {
  return Category(category, LimitBytes("MemoryLimit::Category", limit));
}

MemoryLimit& MemoryLimit::Category(const std::string& category,
                                   int64_t limit_bytes) {
  scope_->SetCategoryLimit(CategoryNamed(category),
                           PositiveBytes("MemoryLimit::Category", limit_bytes));
  return *this;
}

MemoryLimit& MemoryLimit::NoLeaks() {
  scope_->CheckLeaks();
  return *this;
}

memprof::Session& MemoryLimit::session() { return scope_->session(); }

LeakCheck::LeakCheck(Failure failure, const char* file, int line)
    : scope_(std::make_unique<CheckedScope>("LeakCheck", failure, file, line)) {
  scope_->CheckLeaks();
}

LeakCheck::~LeakCheck() { scope_->End(); }

memprof::Session& LeakCheck::session() { return scope_->session(); }

}  // namespace testing
}  // namespace memprof
