// Test main for tests that need the hook: installed before any tensor.
#include <gtest/gtest.h>

#include "profiler/capture/cpu_hook.h"

int main(int argc, char** argv) {
  memprof::InstallCpuHook();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
