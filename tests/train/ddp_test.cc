// Real data parallelism in one process: two ranks on two threads, each with
// its own Gloo group over loopback, its own model replica and Reducer.
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/mlp.h"
#include "profiler/train/ddp_engine.h"
#include "profiler/train/redundancy.h"

namespace memprof {
namespace {

constexpr int kWorld = 2;

RankTopology Rank(int rank, const StoreSocket& store) {
  RankTopology topology;
  topology.rank = rank;
  topology.world_size = kWorld;
  topology.master_port = store.port;
  if (rank == 0) topology.store_fd = store.fd;
  return topology;
}

// Runs `body(rank, group)` on kWorld threads joined in one process group.
template <typename Body>
void OnTwoRanks(Body body) {
  const StoreSocket store = ListenForStore("127.0.0.1", 0);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kWorld);
  for (int r = 0; r < kWorld; ++r) {
    threads.emplace_back([&, r] {
      try {
        ProcessGroup group(Rank(r, store), /*timeout_s=*/30);
        body(r, group);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < kWorld; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

MlpConfig Tiny() {
  MlpConfig config;
  config.input = 12;
  config.hidden = 16;
  config.depth = 2;
  config.output = 5;
  return config;
}

TEST(Ddp, GradientsAreTheAverageOverRanks) {
  constexpr int64_t kMicroBatch = 4;
  // Replicas and data made up front: the default generator is global.
  std::vector<std::unique_ptr<MlpModel>> replicas;
  std::vector<Batch> batches;
  for (int r = 0; r < kWorld; ++r) {
    torch::manual_seed(7 + r);  // different initial weights: DDP broadcasts
    replicas.push_back(std::make_unique<MlpModel>(Tiny()));
  }
  torch::manual_seed(99);
  for (int r = 0; r < kWorld; ++r) {
    batches.push_back(replicas[0]->MakeBatch(kMicroBatch));
  }
  // Reference: rank 0's initial weights, one process, the whole batch.
  torch::manual_seed(7);
  MlpModel reference(Tiny());
  const Batch whole{torch::cat({batches[0].input, batches[1].input}),
                    torch::cat({batches[0].target, batches[1].target})};
  reference.Loss(whole).backward();

  OnTwoRanks([&](int r, ProcessGroup& group) {
    MlpModel& model = *replicas[r];
    const std::vector<torch::Tensor> params = model.module().parameters();
    DdpEngine ddp(group, DdpConfig{}, params);
    ddp.PrepareForward();
    torch::Tensor loss = model.Loss(batches[r]);
    ddp.PrepareForBackward();
    loss.backward();
  });

  const std::vector<torch::Tensor> expected = reference.module().parameters();
  for (int r = 0; r < kWorld; ++r) {
    const std::vector<torch::Tensor> got = replicas[r]->module().parameters();
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(torch::allclose(got[i], expected[i]))
          << "rank " << r << " weights " << i << " not broadcast from rank 0";
      EXPECT_TRUE(torch::allclose(got[i].grad(), expected[i].grad(),
                                  /*rtol=*/1e-4, /*atol=*/1e-6))
          << "rank " << r << " gradient " << i << " is not the average";
    }
  }
}

// As DistributedDataParallel without find_unused_parameters: one bucket in
// step 1, rebuilt before step 2 in the order gradients became ready, capped
// at bucket_cap_mb; every gradient in exactly one bucket both times.
TEST(Ddp, BucketsHoldEveryGradientOnce) {
  std::vector<std::unique_ptr<MlpModel>> replicas;
  std::vector<Batch> batches;
  torch::manual_seed(1);
  for (int r = 0; r < kWorld; ++r) {
    replicas.push_back(std::make_unique<MlpModel>(Tiny()));
    batches.push_back(replicas[r]->MakeBatch(4));
  }
  OnTwoRanks([&](int r, ProcessGroup& group) {
    MlpModel& model = *replicas[r];
    const std::vector<torch::Tensor> params = model.module().parameters();
    int64_t bytes = 0;
    for (const torch::Tensor& p : params) bytes += p.numel() * 4;
    const auto bucket_bytes = [](DdpEngine& ddp) {
      int64_t sum = 0;
      for (const torch::Tensor& b : ddp.BucketBuffers()) {
        sum += static_cast<int64_t>(b.nbytes());
      }
      return sum;
    };
    DdpConfig config;
    config.bucket_cap_mb = 0.001;  // ~1 KiB: several buckets after step 1
    DdpEngine ddp(group, config, params);
    EXPECT_EQ(ddp.bucket_count(), 1u);
    EXPECT_EQ(bucket_bytes(ddp), bytes);
    EXPECT_FALSE(ddp.PrepareForward());  // nothing to rebuild before step 1
    torch::Tensor loss = model.Loss(batches[r]);
    ddp.PrepareForBackward();
    loss.backward();
    EXPECT_TRUE(ddp.PrepareForward());  // step 2 rebuilds
    EXPECT_GT(ddp.bucket_count(), 1u);
    EXPECT_EQ(bucket_bytes(ddp), bytes);
  });
}

// Note [No-sync micro-batches] on two ranks: K micro-batches of a rank's
// batch, each loss divided by K, the Reducer armed for the last backward
// only. Per optimizer step the Reducer all-reduces each bucket exactly once
// (counted by the timed process group; none before the last backward), and
// the gradients equal those of one pass over both ranks' whole batches in
// one process, to 1e-6 of their norm (float32 sums in another order), in
// step 1 (one bucket) and step 2 (rebuilt into several), with and without
// gradient_as_bucket_view.
TEST(Ddp, AccumulatedGradientsEqualOnePassAndAllReduceOncePerStep) {
  constexpr int64_t kRankBatch = 8;  // samples per rank per optimizer step
  for (const bool bucket_view : {false, true}) {
    for (const int64_t k : {1, 2, 4}) {
      SCOPED_TRACE("grad_accum " + std::to_string(k) +
                   (bucket_view ? ", gradient_as_bucket_view" : ""));
      std::vector<std::unique_ptr<MlpModel>> replicas;
      std::vector<Batch> batches;
      torch::manual_seed(3);
      for (int r = 0; r < kWorld; ++r) {
        replicas.push_back(std::make_unique<MlpModel>(Tiny()));
        batches.push_back(replicas[r]->MakeBatch(kRankBatch));
      }
      torch::manual_seed(3);
      MlpModel reference(Tiny());
      reference
          .Loss({torch::cat({batches[0].input, batches[1].input}),
                 torch::cat({batches[0].target, batches[1].target})})
          .backward();
      const std::vector<torch::Tensor> expected =
          reference.module().parameters();
      std::vector<std::string> failures(kWorld);
      OnTwoRanks([&](int r, ProcessGroup& group) {
        MlpModel& model = *replicas[r];
        const std::vector<torch::Tensor> params = model.module().parameters();
        DdpConfig config;
        config.bucket_cap_mb = 0.001;  // several buckets after step 1
        config.gradient_as_bucket_view = bucket_view;
        DdpEngine ddp(group, config, params);
        const int64_t micro = kRankBatch / k;
        for (int step = 1; step <= 2; ++step) {
          const int64_t before = ddp.AllReducesIssued();
          for (int64_t m = 0; m < k; ++m) {
            const bool sync = m + 1 == k;
            ddp.PrepareForward(sync);
            const Batch part{batches[r].input.narrow(0, m * micro, micro),
                             batches[r].target.narrow(0, m * micro, micro)};
            torch::Tensor loss = model.Loss(part) / static_cast<double>(k);
            if (sync) {
              EXPECT_EQ(ddp.AllReducesIssued(), before)
                  << "all-reduce before the last micro-batch";
              ddp.PrepareForBackward();
            }
            loss.backward();
          }
          EXPECT_EQ(ddp.AllReducesIssued() - before,
                    static_cast<int64_t>(ddp.bucket_count()))
              << "step " << step << ": not one all-reduce per bucket";
          for (size_t i = 0; i < params.size(); ++i) {
            const torch::Tensor& want = expected[i].grad();
            const double error =
                (params[i].grad() - want).norm().item<double>() /
                want.norm().item<double>();
            if (error > 1e-6) {
              failures[r] += "step " + std::to_string(step) + " gradient " +
                             std::to_string(i) + " off by " +
                             std::to_string(error) + " of its norm; ";
            }
          }
          for (const torch::Tensor& p : params) {
            const_cast<torch::Tensor&>(p).mutable_grad().zero_();
          }
        }
      });
      for (int r = 0; r < kWorld; ++r) {
        EXPECT_EQ(failures[r], "") << "rank " << r;
      }
    }
  }
}

TEST(Redundancy, VerdictFollowsTheHashes) {
  const Redundancy same =
      CompareAcrossRanks(Category::kWeights, 100, {7, 7, 7, 7});
  EXPECT_TRUE(same.identical_across_ranks);
  EXPECT_EQ(same.redundant_bytes, 300);
  const Redundancy differ =
      CompareAcrossRanks(Category::kWeights, 100, {7, 7, 8, 7});
  EXPECT_FALSE(differ.identical_across_ranks);
  EXPECT_EQ(differ.redundant_bytes, 0);
  EXPECT_EQ(CompareAcrossRanks(Category::kWeights, 100, {5}).redundant_bytes,
            0);
}

TEST(Redundancy, AuditAcrossRanksCatchesOnePerturbedCopy) {
  std::vector<Redundancy> clean(kWorld), perturbed(kWorld);
  OnTwoRanks([&](int r, ProcessGroup& group) {
    std::vector<torch::Tensor> state = {torch::arange(1000, torch::kFloat),
                                        torch::ones({3, 7})};
    clean[r] = AuditAcrossRanks(group, Category::kOptimizerState, state);
    if (r == 1) state[1][2][5] += 1e-6f;  // one element, one rank
    perturbed[r] = AuditAcrossRanks(group, Category::kOptimizerState, state);
  });
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_TRUE(clean[r].identical_across_ranks);
    EXPECT_EQ(clean[r].bytes, 4 * (1000 + 21));
    EXPECT_EQ(clean[r].redundant_bytes, clean[r].bytes);
    EXPECT_FALSE(perturbed[r].identical_across_ranks) << "rank " << r;
    EXPECT_EQ(perturbed[r].redundant_bytes, 0);
  }
}

TEST(ProcessGroup, AllGatherReturnsEveryRanksBytesInOrder) {
  std::vector<std::vector<std::string>> got(kWorld);
  OnTwoRanks([&](int r, ProcessGroup& group) {
    got[r] = group.AllGather(std::string(r == 0 ? "short" : "a longer one"));
  });
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_EQ(got[r], (std::vector<std::string>{"short", "a longer one"}));
  }
}

}  // namespace
}  // namespace memprof
