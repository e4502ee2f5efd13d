#include <gtest/gtest.h>
#include <memprof/gtest.h>

int main(int argc, char** argv) {
  memprof::testing::InstallHook();  // before any tensor
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
