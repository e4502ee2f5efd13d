#include "profiler/base/human_bytes.h"

#include <gtest/gtest.h>

namespace memprof {
namespace {

TEST(HumanBytes, PicksBinaryUnitsWithThreeSignificantDigits) {
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(1023), "1023 B");
  EXPECT_EQ(HumanBytes(1024), "1.00 KiB");
  EXPECT_EQ(HumanBytes(1536), "1.50 KiB");
  EXPECT_EQ(HumanBytes(10 * 1024 * 1024 + 512 * 1024), "10.5 MiB");
  EXPECT_EQ(HumanBytes(int64_t{200} << 30), "200 GiB");
  EXPECT_EQ(HumanBytes(-2048), "-2.00 KiB");
}

TEST(HumanBytes, SignedShowsPlusForGrowth) {
  EXPECT_EQ(SignedBytes(4096), "+4.00 KiB");
  EXPECT_EQ(SignedBytes(-12), "-12 B");
  EXPECT_EQ(SignedBytes(0), "0 B");
}

TEST(HumanBytes, ExactBytesFromOneKibibyteOn) {
  EXPECT_EQ(BytesAndExact(1023), "1023 B");
  EXPECT_EQ(BytesAndExact(2555), "2.50 KiB (2,555 B)");
  EXPECT_EQ(SignedBytesAndExact(1212), "+1.18 KiB (+1,212 B)");
  EXPECT_EQ(SignedBytesAndExact(-1212), "-1.18 KiB (-1,212 B)");
  EXPECT_EQ(SignedBytesAndExact(12), "+12 B");
  EXPECT_EQ(SignedBytesAndExact(0), "0 B");
}

TEST(ParseByteSize, BinaryAndDecimalUnitsAndPlainBytes) {
  EXPECT_EQ(ParseByteSize("2GiB"), 2LL << 30);
  EXPECT_EQ(ParseByteSize("80GiB"), 80LL << 30);
  EXPECT_EQ(ParseByteSize("1.5 MiB"), 1572864);
  EXPECT_EQ(ParseByteSize("80GB"), 80000000000LL);
  EXPECT_EQ(ParseByteSize("4096"), 4096);
  EXPECT_EQ(ParseByteSize("250000b"), 250000);
  EXPECT_EQ(ParseByteSize("1kib"), 1024);
  for (const char* bad :
       {"", "GiB", "2 GiBs", "-1GiB", "1.2.3", "0", "0.1B", ".5GiB", "1e3",
        "2 Gb/s", "2GiBB", "2iB", "2Bi", "1.5", "1000.7", "2.0B"}) {
    EXPECT_EQ(ParseByteSize(bad), -1) << bad;
  }
}

// A bare G (as df -h and du -h print sizes) and Gi (as free -h does) are
// binary, like GiB; only GB, MB, KB and TB are decimal.
TEST(ParseByteSize, BareAndShortUnitsAreBinary) {
  EXPECT_EQ(ParseByteSize("80G"), 80LL << 30);
  EXPECT_EQ(ParseByteSize("80g"), 80LL << 30);
  EXPECT_EQ(ParseByteSize("80Gi"), 80LL << 30);
  EXPECT_EQ(ParseByteSize("2 G"), 2LL << 30);
  EXPECT_EQ(ParseByteSize("512M"), 512LL << 20);
  EXPECT_EQ(ParseByteSize("512Mi"), 512LL << 20);
  EXPECT_EQ(ParseByteSize("4k"), 4096);
  EXPECT_EQ(ParseByteSize("1.5T"), 3LL << 39);
  EXPECT_EQ(ParseByteSize("80gb"), 80000000000LL);
  EXPECT_EQ(ParseByteSize("80G") - ParseByteSize("80GB"), 5899345920LL);
}

}  // namespace
}  // namespace memprof
