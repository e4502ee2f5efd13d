// Synthetic run figures for the baseline and check unit tests: fp32 Adam
// model state for P parameters (4P, 4P, 8P, buckets 4P) and made-up
// activation, input and temporary bytes, on every rank.
#pragma once

#include <string>

#include "profiler/gate/baseline.h"

namespace memprof {

inline RunFigures SyntheticRun(int world_size, int64_t parameters) {
  RunFigures run;
  RunContext& c = run.context;
  c.world_size = world_size;
  c.device = "cpu";
  c.backend = "gloo";
  c.libtorch_version = "1.13.0";
  c.dtype = "float32";
  c.parameters = parameters;
  c.git_sha = "0123456789ab";
  c.config = {{"source", "configs/mlp-tiny.ini"},
              {"model", "mlp"},
              {"mlp", {{"input", 32}, {"hidden", 64}, {"depth", 3}}},
              {"train", {{"dtype", "float32"}, {"micro_batch", 8}}},
              {"ddp", {{"world_size", world_size}, {"bucket_cap_mb", 25.0}}}};
  for (int r = 0; r < world_size; ++r) {
    RankFigures f;
    f.rank = r;
    const int64_t model[] = {4 * parameters, 4 * parameters, 8 * parameters};
    for (int i = 0; i < 3; ++i)
      f.measured_bytes[i] = f.peak_bytes[i] = model[i];
    f.measured_bytes[Index(Category::kDdpBuckets)] = 4 * parameters;
    f.peak_bytes[Index(Category::kDdpBuckets)] = 4 * parameters;
    f.measured_bytes[Index(Category::kActivations)] = 4;
    f.peak_bytes[Index(Category::kActivations)] = 10000;
    f.measured_bytes[Index(Category::kInputs)] = 1088;
    f.peak_bytes[Index(Category::kInputs)] = 1088;
    f.measured_bytes[Index(Category::kTemporaries)] = 32780;
    f.peak_bytes[Index(Category::kTemporaries)] = 32780;
    int64_t total = 0;
    for (int64_t bytes : f.measured_bytes) total += bytes;
    f.peak_total_bytes = total;
    f.peak_step = 3;
    f.peak_phase = "optimizer";
    run.ranks.push_back(f);
  }
  return run;
}

inline Baseline SyntheticBaseline(int world_size, int64_t parameters) {
  Baseline baseline;
  baseline.run = SyntheticRun(world_size, parameters);
  return baseline;
}

}  // namespace memprof
