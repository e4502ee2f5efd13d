#include "profiler/gtest/checked_scope.h"

#include <gtest/gtest.h>

#include <memory>

#include "profiler/gtest/check_figures.h"
#include "profiler/gtest/failure_text.h"
#include "profiler/session/session_impl.h"

namespace memprof {
namespace testing {
namespace {

// A session that writes nothing: its capture is an unnamed temporary file,
// read by the scope's checks and gone with them.
std::unique_ptr<SessionImpl> QuietSession(const std::string& helper) {
  if (SessionExists()) {
    throw UsageError(
        "memprof::testing::" + helper +
        ": a memprof session is already open in this process (another "
        "MemoryLimit or LeakCheck, or a memprof::Session); open one at a "
        "time, and for a limit and a leak check together call NoLeaks() on "
        "the MemoryLimit");
  }
  SessionOptions options;
  options.name = "test";
  options.quiet = true;
  SessionSetup setup;
  setup.outputs = CaptureOutputs{};
  return std::make_unique<SessionImpl>(std::move(options), std::move(setup));
}

}  // namespace

CheckedScope::CheckedScope(std::string helper, Failure failure,
                           const char* file, int line)
    : helper_(std::move(helper)),
      failure_(failure),
      file_(file),
      line_(line),
      session_(QuietSession(helper_)) {}

CheckedScope::~CheckedScope() = default;

void CheckedScope::SetLimit(int64_t limit_bytes) { limit_bytes_ = limit_bytes; }

void CheckedScope::SetCategoryLimit(memprof::Category category,
                                    int64_t limit_bytes) {
  int64_t& limit = category_limit_bytes_[Index(category)];
  if (limit != 0) {
    throw UsageError("memprof::testing::" + helper_ + "::Category(\"" +
                     std::string(CategoryName(category)) +
                     "\") is given twice; give each category one limit");
  }
  limit = limit_bytes;
}

void CheckedScope::Report(const std::string& message) const {
  GTEST_MESSAGE_AT_(file_.c_str(), line_, message.c_str(),
                    failure_ == Failure::kFatal
                        ? ::testing::TestPartResult::kFatalFailure
                        : ::testing::TestPartResult::kNonFatalFailure);
}

void CheckedScope::End() {
  SessionImpl& impl = session_.impl();
  if (impl.finished()) {
    Report("memprof: this " + helper_ +
           "'s session was finished inside it (session().Finish()), so "
           "nothing was checked; leave the session to the scope, which ends "
           "it without reports");
    return;
  }
  try {
    const Capture capture = impl.EndCapture();
    if (std::uncaught_exceptions() > uncaught_at_begin_) return;
    const CheckFigures figures = FiguresOf(capture);
    if (limit_bytes_ > 0 && figures.peak.total_bytes > limit_bytes_) {
      Report(LimitFailure(helper_, limit_bytes_, figures.peak));
    }
    for (memprof::Category c : kAllCategories) {
      const int64_t limit = category_limit_bytes_[Index(c)];
      const Moment& peak = figures.category_peaks[Index(c)];
      if (limit > 0 && peak.bytes[Index(c)] > limit) {
        Report(CategoryLimitFailure(helper_, c, limit, peak));
      }
    }
    if (check_leaks_ && figures.leaked_blocks > 0) {
      Report(LeakFailure(helper_, figures));
    }
  } catch (const std::exception& e) {
    Report("memprof: this " + helper_ + " could not be checked: " + e.what());
  }
}

}  // namespace testing
}  // namespace memprof
