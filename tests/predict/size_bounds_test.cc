// Note [Countable sizes]: every size key at the int64 edge is refused naming
// its key before any arithmetic; at its bound, the prediction is either
// countable (every figure within 0..2^53) or refused as too large to count,
// never negative.
#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "models/size_table.h"
#include "profiler/base/errors.h"
#include "profiler/cli/config_cli.h"
#include "profiler/predict/prediction.h"

namespace memprof {
namespace {

struct SizeKey {
  const char* preset;
  const char* key;
  int64_t bound;  // the largest value accepted alone
};

constexpr int64_t kDimension = (int64_t{1} << 31) - 1;

const SizeKey kSizeKeys[] = {
    {"mlp-tiny", "mlp.input", kDimension},
    {"mlp-tiny", "mlp.hidden", kDimension},
    {"mlp-tiny", "mlp.depth", 10000},
    {"mlp-tiny", "mlp.output", kDimension},
    {"gpt-tiny", "gpt.layers", 10000},
    {"gpt-tiny", "gpt.d_model", kDimension},
    {"gpt-tiny", "gpt.heads", kDimension},
    {"gpt-tiny", "gpt.seq_len", kDimension},
    {"gpt-tiny", "gpt.vocab", kDimension},
    {"resnet-tiny", "resnet.width", kDimension},
    {"resnet-tiny", "resnet.resolution", kDimension},
    {"resnet-tiny", "resnet.classes", kDimension},
    {"mlp-tiny", "train.micro_batch", kDimension},
    {"mlp-tiny", "train.global_batch", kDimension},
    {"mlp-tiny", "ddp.world_size", int64_t{1} << 24},
};

RunConfig Parse(const SizeKey& size, const std::string& value) {
  return ParsePredictArgs({"--config",
                           MEMPROF_SOURCE_DIR "/configs/" +
                               std::string(size.preset) + ".ini",
                           std::string("--") + size.key, value})
      .config;
}

std::string ErrorOf(const SizeKey& size, const std::string& value) {
  try {
    Parse(size, value);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(SizeBounds, EverySizeKeyAtTheInt64EdgeIsRefusedByName) {
  const std::string flag_prefix = "--";
  for (const SizeKey& size : kSizeKeys) {
    for (const int64_t value :
         {std::numeric_limits<int64_t>::max(),
          std::numeric_limits<int64_t>::max() - 1, size.bound + 1}) {
      const std::string error = ErrorOf(size, std::to_string(value));
      EXPECT_NE(error.find(flag_prefix + size.key), std::string::npos)
          << size.key << " = " << value << ": " << error;
      EXPECT_NE(error.find("must be at most " + std::to_string(size.bound)),
                std::string::npos)
          << size.key << " = " << value << ": " << error;
    }
    // One past int64: the parser refuses it, naming the flag.
    const std::string beyond = ErrorOf(size, "9223372036854775808");  // 2^63
    EXPECT_NE(beyond.find(flag_prefix + size.key), std::string::npos)
        << size.key << ": " << beyond;
  }
}

TEST(SizeBounds, AtItsBoundEveryKeyIsCountedOrRefusedNeverNegative) {
  for (const SizeKey& size : kSizeKeys) {
    RunConfig config;
    try {
      config = Parse(size, std::to_string(size.bound));
    } catch (const InputError& e) {
      // Too large to count, or a shape rule (heads divide the width).
      SUCCEED() << size.key << ": " << e.what();
      continue;
    }
    const Prediction p = Predict(config);
    for (const PredictedMoment* moment :
         {&p.early_backward, &p.optimizer_step}) {
      for (const int64_t bytes : moment->bytes) {
        EXPECT_GE(bytes, 0) << size.key;
        EXPECT_LE(bytes, kMaxCountableBytes) << size.key;
      }
      EXPECT_GE(moment->Total(), 0) << size.key;
      EXPECT_LE(moment->Total(), kMaxCountableBytes) << size.key;
    }
    EXPECT_GT(p.parameters, 0) << size.key;
  }
}

// The example: a hidden width whose weight matrix holds 10^20
// elements is refused (exit 2 at the CLI), never predicted as negative.
TEST(SizeBounds, AWidthWhoseProductOverflowsIsRefusedAsUncountable) {
  const SizeKey hidden{"mlp-tiny", "mlp.hidden", kDimension};
  const std::string error = ErrorOf(hidden, std::to_string(kDimension));
  EXPECT_NE(error.find("too large for memprof to count"), std::string::npos)
      << error;
  EXPECT_NE(error.find("'layers.2.weight' [H, H]"), std::string::npos) << error;
  EXPECT_NE(error.find("H = mlp.hidden"), std::string::npos) << error;
}

// A micro-batch flag that makes the activations uncountable is named with
// its origin: the sizes are the file's, the overflow the flag's.
TEST(SizeBounds, AnUncountableMicroBatchNamesItsFlag) {
  const std::string error =
      ErrorOf({"gpt-tiny", "micro-batch", kDimension}, "2147483647");
  EXPECT_NE(error.find("at micro-batch 2147483647 (--micro-batch), is too "
                       "large for memprof to count"),
            std::string::npos)
      << error;
  // The bound is on the tensors as counted, not on their optimizer state.
  EXPECT_NE(error.find(", more than the 512 TiB (2^53 / 16 bytes) memprof "
                       "counts exactly"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace memprof
