// What must hold between a rank report's measured figures and its
// prediction: model state to the byte, activations within 3%, the
// steady-state peak within 5%.
#pragma once

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace memprof {

inline void ExpectPredictionHolds(const nlohmann::ordered_json& rank,
                                  const std::string& label) {
  SCOPED_TRACE(label + ", rank " + rank["context"]["rank"].dump());
  const auto& c = rank["categories"];
  auto figure = [&](const char* category, const char* name) {
    return c[category][name].get<int64_t>();
  };
  for (const char* exact : {"weights", "gradients", "optimizer_state",
                            "ddp_buckets", "inputs", "unattributed"}) {
    EXPECT_EQ(figure(exact, "peak_bytes"), figure(exact, "predicted_bytes"))
        << exact;
    EXPECT_EQ(figure(exact, "measured_bytes"), figure(exact, "peak_bytes"))
        << exact << " is constant through the steady state";
  }
  EXPECT_EQ(rank["parameters"], rank["predicted_parameters"]);
  const int64_t activations = figure("activations", "peak_bytes");
  const int64_t predicted = figure("activations", "predicted_bytes");
  EXPECT_GT(predicted, 0);
  EXPECT_LE(std::llabs(activations - predicted), predicted * 3 / 100)
      << "activations: measured " << activations << ", predicted " << predicted;
  const int64_t peak = rank["peak"]["total_bytes"].get<int64_t>();
  const int64_t peak_predicted =
      rank["peak"]["predicted"]["total_bytes"].get<int64_t>();
  EXPECT_LE(std::llabs(peak - peak_predicted), peak_predicted * 5 / 100)
      << "peak: measured " << peak << " in "
      << rank["peak"]["phase"].get<std::string>() << ", predicted "
      << peak_predicted;
}

}  // namespace memprof
