#include "profiler/train/ddp_engine.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <limits>
#include <string>
#include <thread>

#include <c10/util/Logging.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

#include "profiler/session/group_gather.h"
#include "profiler/train/store_socket.h"
#include "profiler/train/timed_process_group.h"

namespace memprof {
namespace {

// As torch.distributed: the first bucket is small so the all-reduce starts
// early in backward; the rest hold up to bucket_cap_mb.
constexpr int64_t kFirstBucketBytes = 1024 * 1024;
// Parameters are broadcast from rank 0 in chunks of this many bytes.
constexpr int64_t kBroadcastBucketBytes = 250 * 1024 * 1024;
// The rendezvous waits at most this long (or timeout_s when shorter).
constexpr int64_t kRendezvousTimeoutS = 60;
// FLAGS_caffe2_log_level of LibTorch's ERROR: no warnings.
constexpr int kLogErrorsOnly = 2;

// Note [Settled collectives]
// Gloo's worker thread completes a collective's future before it drops its
// own reference to the work, and so to the work's tensors: the waiting
// thread runs on, and on a loaded machine allocates for a while, before
// that buffer is freed (Note [Late bucket frees]). That moved whole-run
// and step-1 peaks from run to run. memprof therefore runs the Gloo
// backend with one worker thread and settles the group where a late free
// would move a figure: after the set-up collectives, before the Reducer
// replaces its buckets and after it has (the rebuild broadcasts the bucket
// order in small tensors). Settling issues a barrier, which that one
// thread runs only after it has dropped every earlier work, and waits for
// it. The barrier itself keeps the works that were still queued or
// running when it was issued (its "prior work"), and the worker drops its
// reference to the barrier only when it loops again: so settling also
// waits until this thread holds the last reference, and drops it here,
// which frees whatever those prior works held now, on this thread, at the
// same point of every run. (The backend's own barrier:
// ProcessGroup::barrier would allocate a one-byte tensor and keep it.)
void Settle(const c10::intrusive_ptr<c10d::ProcessGroup>& group) {
  c10::intrusive_ptr<c10d::Work> barrier =
      group->getBackend(c10::DeviceType::CPU)->barrier();
  barrier->wait();
  // The worker loops within microseconds; the bound only keeps a broken
  // backend from hanging the rank.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (barrier.use_count() > 1 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
}

}  // namespace

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  bool agent_store = false;  // served by torchrun's agent, not rank 0
  c10::intrusive_ptr<c10d::ProcessGroup> group;
  int rank = 0;
  int size = 1;
  bool nccl = false;
};

// NCCL for GPU tensors, under its own key prefix in the shared store.
c10::intrusive_ptr<c10d::Backend> NcclBackend(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    int64_t timeout_s) {
#ifdef USE_C10D_NCCL
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = std::chrono::seconds(timeout_s);
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(
      c10::make_intrusive<c10d::PrefixStore>("nccl", store), rank, size,
      options);
#else
  (void)store, (void)rank, (void)size, (void)timeout_s;
  throw std::runtime_error(
      "ddp.backend nccl: this LibTorch has no NCCL (a CPU build); use "
      "--ddp.backend gloo");
#endif
}

namespace {

// Note [Bounded rendezvous]
// TCPStore's own timeout bounds connecting and waiting for keys, but not a
// reply that never comes: a rank whose MASTER_PORT was held by a process
// that accepted connections and never answered waited in recv() for as
// long as that process lived (380 s with --ddp.timeout_s 20). memprof
// runs the whole rendezvous (the store, then Gloo's full mesh through it)
// on a helper thread and waits for it at most the rendezvous bound; past
// the bound the rank fails (exit 3) naming the bound, and the helper, still
// blocked, is left behind in a process that is about to end.
template <typename Body>
auto WithinBound(std::chrono::seconds bound, Body body) -> decltype(body()) {
  using Result = decltype(body());
  auto task = std::make_shared<std::packaged_task<Result()>>(std::move(body));
  std::future<Result> result = task->get_future();
  std::thread([task] { (*task)(); }).detach();
  if (result.wait_for(bound) != std::future_status::ready) {
    throw std::runtime_error("nothing answered");
  }
  return result.get();  // the body's own exception, if it threw
}

struct Rendezvous {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
};

}  // namespace

ProcessGroup::ProcessGroup(const RankTopology& topology, int64_t timeout_s,
                           const GroupBackend& backend)
    : impl_(std::make_unique<Impl>()) {
  impl_->rank = topology.rank;
  impl_->size = topology.world_size;
  RequireResolvable(topology.master_addr);
  const int64_t bound_s = std::min(timeout_s, kRendezvousTimeoutS);
  const bool local = IsLoopback(topology.master_addr);
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(topology.master_port);
  options.isServer = topology.rank == 0 && topology.agent_store_prefix.empty();
  options.numWorkers = topology.world_size;
  options.waitWorkers = true;
  options.timeout = std::chrono::seconds(bound_s);
  if (options.isServer) {  // Note [Store socket]
    StoreSocket socket{topology.store_fd, topology.master_port};
    if (socket.fd < 0) {
      socket =
          ListenForStore(local ? "127.0.0.1" : "0.0.0.0", topology.master_port);
    }
    options.masterListenFd = socket.fd;
    options.port = static_cast<uint16_t>(socket.port);
  }
  auto gloo =
      c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(timeout_s));
  gloo->threads = 1;  // Note [Settled collectives]
  gloo->devices.push_back(
      std::getenv("GLOO_SOCKET_IFNAME") != nullptr
          ? c10d::ProcessGroupGloo::createDefaultDevice()
          : c10d::ProcessGroupGloo::createDeviceForHostname(LocalAddressTowards(
                topology.master_addr)));  // Note [Gloo address]
  const std::string where =
      topology.master_addr + ":" + std::to_string(options.port);
  const auto begin = std::chrono::steady_clock::now();
  Rendezvous rendezvous;
  try {
    rendezvous = WithinBound(std::chrono::seconds(bound_s), [=] {
      Rendezvous made;
      made.store =
          c10::make_intrusive<c10d::TCPStore>(topology.master_addr, options);
      if (!topology.agent_store_prefix.empty()) {
        made.store = c10::make_intrusive<c10d::PrefixStore>(
            topology.agent_store_prefix, made.store);
      }
      made.gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(
          made.store, topology.rank, topology.world_size, gloo);
      return made;
    });
  } catch (const std::exception& e) {
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
            .count();
    const std::string what = e.what();
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f", waited);
    throw std::runtime_error(
        "rank " + std::to_string(topology.rank) + ": the rendezvous at " +
        where + " with " + std::to_string(topology.world_size) +
        " ranks did not complete: " + what.substr(0, what.find('\n')) +
        " after " + seconds + " s (bound: " + std::to_string(bound_s) +
        " s, --ddp.timeout_s capped at " + std::to_string(kRendezvousTimeoutS) +
        " s); check that every rank started and that MASTER_ADDR:MASTER_PORT "
        "is rank 0's memprof");
  }
  impl_->store = rendezvous.store;
  impl_->agent_store = !topology.agent_store_prefix.empty();
  const c10::intrusive_ptr<c10d::ProcessGroupGloo>& gloo_backend =
      rendezvous.gloo;
  // As torch.distributed builds it: a ProcessGroup that dispatches each
  // collective to the backend registered for the tensors' device.
  impl_->group = c10::make_intrusive<c10d::ProcessGroup>(
      impl_->store, topology.rank, topology.world_size);
  using Type = c10d::ProcessGroup::BackendType;
  impl_->group->setBackend(c10::DeviceType::CPU, Type::GLOO, gloo_backend);
  impl_->group->setDefaultBackend(Type::GLOO);
  if (!backend.cuda) return;
  if (backend.backend == "nccl") {
    impl_->group->setBackend(c10::DeviceType::CUDA, Type::NCCL,
                             NcclBackend(impl_->store, topology.rank,
                                         topology.world_size, timeout_s));
    impl_->group->setDefaultBackend(Type::NCCL);
    impl_->nccl = true;
  } else {
    // Gloo reduces GPU tensors through host memory.
    impl_->group->setBackend(c10::DeviceType::CUDA, Type::GLOO, gloo_backend);
  }
}

ProcessGroup::~ProcessGroup() {
  // As torch.distributed.destroy_process_group: NCCL's watchdog stops and
  // its communicators go before the backend does (its destructor would
  // otherwise warn and abort them itself).
  if (impl_ && impl_->nccl) {
    try {
      impl_->group->getBackend(c10::DeviceType::CUDA)->shutdown();
    } catch (const std::exception&) {
      // the group is going away regardless
    }
  }
}
// Note [Unanswering ranks]
// A peer that is stopped (SIGSTOP), hung or gone leaves every other rank
// waiting in its next collective until --ddp.timeout_s, and Gloo's error
// then names no one ("Timed out waiting 300000ms for recv"). So after a
// failed collective each rank that can still act says so in the store
// (memprof/failed/<rank>) and waits up to kAnswerGrace for the others to
// say the same: those that do timed out like it; those that do not are the
// ones that stopped answering. When the store itself does not answer
// within the grace, its host (rank 0, or torchrun's agent) is the one.
// A launcher that sees its rank stopped names it too (Note [Stopped
// ranks]); this is what a rank under torchrun, srun or mpirun can say.
constexpr auto kAnswerGrace = std::chrono::seconds(3);

std::string ProcessGroup::UnansweringPeers() {
  if (impl_->size == 1) return "";
  // A store whose host is gone makes its client log each failed send with
  // LibTorch's stack trace, a dozen lines before this rank's message that
  // names the failure: from here on, LibTorch logs errors only.
  FLAGS_caffe2_log_level = std::max(FLAGS_caffe2_log_level, kLogErrorsOnly);
  const c10::intrusive_ptr<c10d::Store> store = impl_->store;
  const int rank = impl_->rank, size = impl_->size;
  const auto key = [](int r) { return "memprof/failed/" + std::to_string(r); };
  std::vector<int> silent;
  try {
    silent = WithinBound(kAnswerGrace + std::chrono::seconds(2), [=] {
      store->set(key(rank), std::string("1"));
      const auto deadline = std::chrono::steady_clock::now() + kAnswerGrace;
      std::vector<int> missing;
      do {
        missing.clear();
        for (int r = 0; r < size; ++r) {
          if (r != rank && !store->check({key(r)})) missing.push_back(r);
        }
        if (missing.empty()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      } while (std::chrono::steady_clock::now() < deadline);
      return missing;
    });
  } catch (const std::exception&) {
    return impl_->agent_store
               ? "the torchrun agent's store stopped answering"
               : "rank 0 stopped answering (the rendezvous store it serves "
                 "did not answer within " +
                     std::to_string(kAnswerGrace.count()) + " s)";
  }
  if (silent.empty()) return "";
  std::string ranks;
  for (size_t i = 0; i < silent.size(); ++i) {
    ranks += (i == 0                   ? ""
              : i + 1 == silent.size() ? " and "
                                       : ", ") +
             std::to_string(silent[i]);
  }
  return std::string(silent.size() == 1 ? "rank " : "ranks ") + ranks +
         " stopped answering (stopped, hung or gone: no word from " +
         (silent.size() == 1 ? "it" : "them") + " within " +
         std::to_string(kAnswerGrace.count()) + " s of this rank's failure)";
}

int ProcessGroup::rank() const { return impl_->rank; }
void ProcessGroup::Settle() { memprof::Settle(impl_->group); }
int ProcessGroup::size() const { return impl_->size; }
void ProcessGroup::Abandon() { (void)impl_.release(); }

std::vector<std::string> ProcessGroup::AllGather(const std::string& value) {
  return AllGatherStrings(*impl_->group, value);
}

c10::intrusive_ptr<c10d::ProcessGroup> ProcessGroup::c10d_group() const {
  return impl_->group;
}

struct DdpEngine::Impl {
  c10::intrusive_ptr<c10d::ProcessGroup> group;
  std::shared_ptr<CommIntervals> comm = std::make_shared<CommIntervals>();
  std::shared_ptr<c10d::Reducer> reducer;
};

DdpEngine::DdpEngine(ProcessGroup& group, const DdpConfig& config,
                     const std::vector<torch::Tensor>& params)
    : impl_(std::make_unique<Impl>()) {
  const c10::intrusive_ptr<c10d::ProcessGroup>& pg = group.impl().group;
  impl_->group = pg;
  {
    torch::NoGradGuard no_grad;
    c10d::verify_params_across_processes(pg, params, c10::nullopt);
    c10d::broadcast_coalesced(pg, params, kBroadcastBucketBytes, /*rank=*/0);
  }
  Settle(pg);
  // As DistributedDataParallel: the Reducer holds the parameters that
  // require grad (Note [Frozen parameters]); frozen ones take no bucket
  // space.
  std::vector<torch::Tensor> trained;
  for (const torch::Tensor& p : params) {
    if (p.requires_grad()) trained.push_back(p);
  }
  const int64_t cap_bytes =
      static_cast<int64_t>(config.bucket_cap_mb * 1024 * 1024);
  const std::vector<bool> sparse(trained.size(), false);
  // As DistributedDataParallel without find_unused_parameters: one bucket
  // for step 1, whose gradient order is not known yet; the Reducer
  // rebuilds the buckets in step 2, in the order gradients became ready,
  // with a small first bucket and bucket_cap_mb for the rest.
  std::vector<std::vector<size_t>> buckets;
  std::tie(buckets, std::ignore) = c10d::compute_bucket_assignment_by_size(
      trained, {std::numeric_limits<size_t>::max()}, sparse);
  std::unordered_map<size_t, std::string> names;
  // The Reducer talks to the real group through a timer (Note
  // [Communication time]).
  const c10::intrusive_ptr<c10d::ProcessGroup> timed =
      c10::make_intrusive<TimedProcessGroup>(pg, impl_->comm);
  impl_->reducer = std::make_shared<c10d::Reducer>(
      trained, buckets, timed, sparse, cap_bytes,
      /*find_unused_parameters=*/false, config.gradient_as_bucket_view, names,
      /*first_bucket_bytes_cap=*/std::min(kFirstBucketBytes, cap_bytes),
      /*skip_all_reduce_unused_params=*/false, /*use_python_reducer=*/false,
      /*bucket_bytes_cap_list=*/std::vector<int64_t>{});
}

DdpEngine::~DdpEngine() = default;
void DdpEngine::Abandon() {
  comm_ = impl_->comm;  // still readable afterwards
  (void)impl_.release();
}

double DdpEngine::CommSecondsBetween(SteadyTime begin, SteadyTime end) const {
  const std::shared_ptr<CommIntervals>& comm = impl_ ? impl_->comm : comm_;
  return comm->SecondsBetween(begin, end);
}

// Note [No-sync micro-batches]
// DistributedDataParallel.no_sync() in C++ terms. The Reducer's autograd
// hooks act only between prepare_for_backward() and the end of that
// backward (expect_autograd_hooks_): a backward without it runs the hooks,
// which return at once, so autograd accumulates each parameter's gradient
// into its .grad in place and nothing is copied into a bucket or
// all-reduced. With gradient_as_bucket_view the .grad are the bucket views
// themselves, so the sum lands in the bucket directly. The last micro-batch
// of the optimizer step does call prepare_for_backward(): its hooks copy
// each accumulated .grad into its bucket (divided by the world size; a
// bucket view is already there) and all-reduce each bucket once, and the
// averaged result is written back to the .grad. As DDP does, a no-sync
// forward skips prepare_for_forward() (which counts synchronised
// iterations) but may still rebuild the buckets: the rebuild only happens
// after a synchronised backward has recorded the gradients' order.
bool DdpEngine::PrepareForward(bool sync) {
  const bool rebuild = impl_->reducer->should_rebuild_buckets();
  if (rebuild) Settle(impl_->group);  // Note [Settled collectives]
  if (sync) impl_->reducer->prepare_for_forward();
  const bool rebuilt = impl_->reducer->rebuild_buckets();
  if (rebuild) Settle(impl_->group);
  return rebuilt;
}

void DdpEngine::PrepareForBackward() {
  // find_unused_parameters is off: DDP passes no outputs.
  impl_->reducer->prepare_for_backward({});
}

int64_t DdpEngine::AllReducesIssued() const {
  const std::shared_ptr<CommIntervals>& comm = impl_ ? impl_->comm : comm_;
  return comm->issued();
}

std::vector<torch::Tensor> DdpEngine::BucketBuffers() {
  std::vector<torch::Tensor> buffers;
  for (const c10d::GradBucket& bucket :
       impl_->reducer->get_grad_buckets(/*return_zero_tensors=*/false)) {
    buffers.push_back(bucket.getBuffer());
  }
  return buffers;
}

c10d::Reducer& DdpEngine::reducer() { return *impl_->reducer; }

size_t DdpEngine::bucket_count() { return BucketBuffers().size(); }

// A failure test's hook (tests/train/zero_test.cc): with
// MEMPROF_TEST_KILL_IN_EXCHANGE=R in its environment, rank R kills itself
// with SIGKILL in the middle of its first parameter exchange, one broadcast
// issued and the rest not, so that the test sees a rank die inside that
// collective. Unset, it costs one getenv per exchange.
static void DieHereIfAsked(int rank) {
  const char* victim = std::getenv("MEMPROF_TEST_KILL_IN_EXCHANGE");
  if (victim != nullptr && std::to_string(rank) == victim) ::raise(SIGKILL);
}

// Note [Parameter exchange]
// After a ZeRO-1 step only the owner of a parameter has updated it; every
// other rank receives it by a broadcast from that owner, as
// ZeroRedundancyOptimizer does by default (parameters_as_bucket_view
// False): one broadcast per parameter, on the parameter's own storage, so
// the exchange allocates no communication buffer and there is nothing to
// attribute. The broadcasts are issued together and waited for together
// (Gloo runs them in order on its one worker thread); the time from the
// first issue to the last completion is the step's exchange time, apart
// from the Reducer's all-reduces (Note [Communication time]).
double DdpEngine::ExchangeParameters(const std::vector<torch::Tensor>& params,
                                     const std::vector<int>& owners) {
  torch::NoGradGuard no_grad;
  const SteadyTime begin = std::chrono::steady_clock::now();
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  works.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<at::Tensor> tensors{params[i]};
    c10d::BroadcastOptions options;
    options.rootRank = owners[i];
    works.push_back(impl_->group->broadcast(tensors, options));
    if (i == 0) DieHereIfAsked(impl_->group->getRank());
  }
  for (const c10::intrusive_ptr<c10d::Work>& work : works) work->wait();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
      .count();
}

}  // namespace memprof
