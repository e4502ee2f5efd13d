// memprof::testing's checked scope (<memprof/gtest.h>): a session of its
// own from construction to End(), whose capture is read at the end and
// checked against the scope's limits and for leaks; each failed check is
// reported to GoogleTest at the scope's file and line.
#pragma once

#include <array>
#include <cstdint>
#include <exception>
#include <string>

#include <memprof/gtest.h>

#include "profiler/base/category.h"

namespace memprof {
namespace testing {

class CheckedScope {
 public:
  // `helper`: the class the test wrote ("MemoryLimit", "LeakCheck"), for
  // the messages. Throws UsageError while another session is open.
  CheckedScope(std::string helper, Failure failure, const char* file, int line);
  ~CheckedScope();
  CheckedScope(const CheckedScope&) = delete;
  CheckedScope& operator=(const CheckedScope&) = delete;

  void SetLimit(int64_t limit_bytes);
  void SetCategoryLimit(memprof::Category category, int64_t limit_bytes);
  void CheckLeaks() { check_leaks_ = true; }
  memprof::Session& session() { return session_; }
  const std::string& helper() const { return helper_; }

  // Ends the session and checks, unless an exception that began inside the
  // scope is leaving it (the session then just ends). Never throws: a
  // check memprof cannot make is itself reported as a failure.
  void End();

 private:
  void Report(const std::string& message) const;
  void Check();

  std::string helper_;
  Failure failure_;
  std::string file_;
  int line_;
  int uncaught_at_begin_ = std::uncaught_exceptions();
  int64_t limit_bytes_ = 0;  // 0: no limit on all categories
  std::array<int64_t, kNumCategories> category_limit_bytes_{};  // 0: none
  bool check_leaks_ = false;
  memprof::Session session_;
};

}  // namespace testing
}  // namespace memprof
