// memprof::gtest_main: GoogleTest's main with memprof's allocator hook
// installed first, before any tensor (<memprof/gtest.h>).
#include <gtest/gtest.h>

#include <memprof/gtest.h>

int main(int argc, char** argv) {
  memprof::testing::InstallHook();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
