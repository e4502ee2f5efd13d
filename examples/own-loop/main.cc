// Your own LibTorch training loop under memprof: a small CNN of its own,
// AdamW, a few steps, and on several ranks its own c10d process group and
// Reducer (data parallelism as PyTorch's DDP does it). memprof writes the
// same reports as `memprof profile` into --out. The model is in net.h; its
// memory is tested under limits in own_loop_test.cc.
//
//   own-loop [--micro-batch N] [--width N] [--steps N] [--out DIR]
//   torchrun --no-python --nproc-per-node 2 own-loop --out DIR
//
// Exit codes: 0 ok, 2 a bad flag or variable or a misuse of memprof's API,
// 3 the run failed.
#include <memprof/memprof.h>
#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "net.h"

namespace {

// DDP's defaults: a small first bucket, so that the all-reduce starts early
// in backward, then buckets of up to 25 MiB.
constexpr int64_t kFirstBucketBytes = 1024 * 1024;
constexpr int64_t kBucketCapBytes = 25 * 1024 * 1024;
constexpr double kLearningRate = 1e-3;
// How long a rank waits for the others (rendezvous, each collective).
constexpr std::chrono::seconds kTimeout(60);

struct Flags {
  int64_t micro_batch = 8;  // images per rank per step
  int64_t width = 16;       // conv2's output channels
  int64_t steps = 4;
  std::string out;  // "": $MEMPROF_OUT, or memprof-out
};

// Bad input: the message names the flag or variable and the remedy (exit 2).
struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int64_t PositiveInt(const std::string& name, const char* text) {
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || value < 1) {
    throw BadInput(name + " must be a positive integer, got '" + text + "'");
  }
  return value;
}

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 == argc) {
      throw BadInput("unknown flag or missing value: '" + flag +
                     "'; usage: own-loop [--micro-batch N] [--width N] "
                     "[--steps N] [--out DIR]");
    }
    const char* value = argv[++i];
    if (flag == "--micro-batch") {
      flags.micro_batch = PositiveInt(flag, value);
    } else if (flag == "--width") {
      flags.width = PositiveInt(flag, value);
    } else if (flag == "--steps") {
      flags.steps = PositiveInt(flag, value);
    } else if (flag == "--out") {
      flags.out = value;
    } else {
      throw BadInput("unknown flag '" + flag +
                     "'; use --micro-batch, --width, --steps or --out");
    }
  }
  return flags;
}

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) {
    throw BadInput(std::string(name) +
                   " is not set: launch the ranks with torchrun, or export "
                   "MASTER_ADDR and MASTER_PORT beside RANK and WORLD_SIZE");
  }
  return value;
}

// Data parallelism on several ranks, as torch.distributed and DDP set it
// up: a TCPStore at MASTER_ADDR:MASTER_PORT (served by torchrun's agent
// under torchrun, by rank 0 otherwise), a Gloo process group, rank 0's
// weights on every rank, and a Reducer that all-reduces the gradients in
// buckets during backward.
struct DataParallel {
  c10::intrusive_ptr<c10d::ProcessGroup> group;
  std::unique_ptr<c10d::Reducer> reducer;
};

DataParallel MakeDataParallel(int rank, int world_size,
                              const std::vector<torch::Tensor>& params) {
  c10d::TCPStoreOptions store_options;
  const int64_t port = PositiveInt("MASTER_PORT", Env("MASTER_PORT").c_str());
  if (port > 65535) throw BadInput("MASTER_PORT must be at most 65535");
  store_options.port = static_cast<uint16_t>(port);
  const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  const bool agent_store = agent != nullptr && std::string(agent) == "True";
  store_options.isServer = rank == 0 && !agent_store;
  store_options.numWorkers = world_size;
  store_options.timeout = kTimeout;
  c10::intrusive_ptr<c10d::Store> store =
      c10::make_intrusive<c10d::TCPStore>(Env("MASTER_ADDR"), store_options);
  if (agent_store) {  // keys of this attempt apart from an earlier one's
    const char* restart = std::getenv("TORCHELASTIC_RESTART_COUNT");
    store = c10::make_intrusive<c10d::PrefixStore>(
        std::string("own-loop/attempt_") + (restart ? restart : "0"), store);
  }
  auto gloo_options = c10d::ProcessGroupGloo::Options::create(kTimeout);
  // The address the host name resolves to, or GLOO_SOCKET_IFNAME's.
  gloo_options->devices.push_back(
      c10d::ProcessGroupGloo::createDefaultDevice());
  DataParallel ddp;
  ddp.group = c10::make_intrusive<c10d::ProcessGroup>(store, rank, world_size);
  ddp.group->setBackend(c10::DeviceType::CPU,
                        c10d::ProcessGroup::BackendType::GLOO,
                        c10::make_intrusive<c10d::ProcessGroupGloo>(
                            store, rank, world_size, gloo_options));
  ddp.group->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  {
    torch::NoGradGuard no_grad;
    c10d::broadcast_coalesced(ddp.group, params, kBucketCapBytes, /*rank=*/0);
  }
  const std::vector<bool> sparse(params.size(), false);
  auto [buckets, bucket_caps] =
      c10d::compute_bucket_assignment_by_size(params, {kBucketCapBytes});
  ddp.reducer = std::make_unique<c10d::Reducer>(
      params, buckets, ddp.group, sparse, kBucketCapBytes,
      /*find_unused_parameters=*/false, /*gradient_as_bucket_view=*/false,
      /*param_names=*/std::unordered_map<size_t, std::string>{},
      /*first_bucket_bytes_cap=*/kFirstBucketBytes,
      /*skip_all_reduce_unused_params=*/false, /*use_python_reducer=*/false,
      /*bucket_bytes_cap_list=*/std::vector<int64_t>{});
  return ddp;
}

int Train(const Flags& flags) {
  memprof::SessionOptions options;
  options.out_dir = flags.out;
  options.name = "own-loop-cnn";
  options.micro_batch = flags.micro_batch;
  memprof::Session session(options);  // first: before any tensor

  torch::manual_seed(session.rank());
  Net net(flags.width);
  torch::optim::AdamW optimizer(net->parameters(),
                                torch::optim::AdamWOptions(kLearningRate));
  session.Track(*net);
  session.Track(optimizer);
  DataParallel ddp;
  if (session.world_size() > 1) {
    auto mark = session.DataParallelSetUp();
    ddp = MakeDataParallel(session.rank(), session.world_size(),
                           net->parameters());
    session.Track(ddp.group);
    session.Track(*ddp.reducer, {/*bucket_cap_bytes=*/kBucketCapBytes,
                                 /*gradient_as_bucket_view=*/false});
  }

  for (int64_t i = 0; i < flags.steps; ++i) {
    auto step = session.Step();
    torch::Tensor images, labels, loss;
    {
      auto mark = session.Inputs();
      images = torch::randn({flags.micro_batch, 1, kImageSide, kImageSide});
      labels = torch::randint(kClasses, {flags.micro_batch}, torch::kLong);
      session.TrackInputs({images, labels});
    }
    {
      auto mark = session.Forward();
      if (ddp.reducer) {  // as DDP's forward: the buckets, rebuilt once
        ddp.reducer->prepare_for_forward();
        ddp.reducer->rebuild_buckets();
      }
      loss = torch::nll_loss(net->forward(images, session), labels);
    }
    {
      auto mark = session.Backward();
      if (ddp.reducer) ddp.reducer->prepare_for_backward({});
      loss.backward();  // with a Reducer: gradients averaged over the ranks
    }
    {
      auto mark = session.OptimizerStep();
      optimizer.step();
    }
    {
      auto mark = session.ZeroGrad();
      // Zeroed in place: every gradient stays live from step to step, as
      // the prediction counts them (with set_to_none, LibTorch's default,
      // the gradients are freed here and made again during backward).
      optimizer.zero_grad(/*set_to_none=*/false);
    }
    step.Loss(loss.item<double>());
  }
  session.Finish();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Train(ParseFlags(argc, argv));
  } catch (const BadInput& e) {
    std::cerr << "own-loop: " << e.what() << "\n";
    return 2;
  } catch (const memprof::UsageError& e) {
    std::cerr << "own-loop: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "own-loop: the run failed: " << e.what() << "\n";
    return 3;
  }
}
