// Schema strings: a reader takes its own major version, any minor, and
// rejects the rest with a reason that names both versions.
#include "profiler/base/schema_version.h"

#include <gtest/gtest.h>

namespace memprof {
namespace {

TEST(SchemaVersion, SameMajorIsAcceptedWithAnyMinor) {
  EXPECT_EQ(SchemaMismatch("memprof.rank/1", "memprof.rank/1"), "");
  EXPECT_EQ(SchemaMismatch("memprof.rank/1.4", "memprof.rank/1"), "");
}

TEST(SchemaVersion, AnotherMajorIsRejectedNamingBoth) {
  const std::string why = SchemaMismatch("memprof.rank/2", "memprof.rank/1");
  EXPECT_NE(why.find("major version 2 of memprof.rank"), std::string::npos)
      << why;
  EXPECT_NE(why.find("reads version 1 only"), std::string::npos) << why;
  EXPECT_NE(SchemaMismatch("memprof.rank/10.1", "memprof.rank/1"), "");
}

TEST(SchemaVersion, AnotherFamilyOrNonsenseIsRejected) {
  for (const char* found :
       {"memprof.summary/1", "memprof.rank", "memprof.rank/", "memprof.rank/x",
        "memprof.rank/1.", "/1", ""}) {
    const std::string why = SchemaMismatch(found, "memprof.rank/1");
    EXPECT_NE(why.find("expected 'memprof.rank/1'"), std::string::npos)
        << found << ": " << why;
  }
}

}  // namespace
}  // namespace memprof
