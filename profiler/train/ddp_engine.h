// DdpEngine: real data parallelism through c10d. A TCPStore rendezvous, a
// ProcessGroupGloo (and ProcessGroupNCCL for GPU tensors), the initial
// broadcast of parameters from rank 0 and the c10d::Reducer with PyTorch's
// bucket assignment. The c10d headers stay in ddp_engine.cc.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "profiler/base/rank_env.h"
#include "profiler/base/run_config.h"
#include "profiler/train/store_socket.h"

namespace c10d {
class ProcessGroup;
class Reducer;
}  // namespace c10d

namespace memprof {

// Which c10d backends a group has: Gloo for host tensors always (the
// gathers of reports and hashes); for GPU tensors Gloo or NCCL
// (`backend`), on GPU `device` (the rank's own, by local rank).
struct GroupBackend {
  std::string backend = "gloo";  // gloo | nccl
  bool cuda = false;
  int device = 0;
};

// The process group alone: rendezvous and collectives.
class ProcessGroup {
 public:
  // Throws InputError when MASTER_ADDR does not resolve, PortBusy when
  // rank 0 cannot listen on the port, and std::runtime_error naming the bound
  // when the rendezvous fails or does not complete within min(timeout_s, 60) s
  // (Note [Bounded rendezvous]).
  ProcessGroup(const RankTopology& topology, int64_t timeout_s,
               const GroupBackend& backend = {});
  ~ProcessGroup();
  int rank() const;
  int size() const;
  // Every rank's `value`, in rank order.
  std::vector<std::string> AllGather(const std::string& value);
  // Waits until the host backend has dropped every earlier collective's
  // tensors (Note [Settled collectives]).
  void Settle();
  // The c10d group (what a program would track: memprof::Session gathers
  // the reports through it).
  c10::intrusive_ptr<c10d::ProcessGroup> c10d_group() const;
  // Opaque c10d handle, for the Reducer.
  struct Impl;
  Impl& impl() { return *impl_; }
  // After a failed collective: the peers that stopped answering (Note
  // [Unanswering ranks]), as a clause for the error message ("rank 1
  // stopped answering: ..."); empty when every peer answered.
  std::string UnansweringPeers();
  // After a failure the group may hang in its destructor: leak it instead.
  void Abandon();

 private:
  std::unique_ptr<Impl> impl_;
};

class DdpEngine {
 public:
  // Broadcasts `params` from rank 0, assigns buckets (bucket_cap_mb, with
  // PyTorch's 1 MiB first bucket) and builds the Reducer over those that
  // require grad.
  DdpEngine(ProcessGroup& group, const DdpConfig& config,
            const std::vector<torch::Tensor>& params);
  ~DdpEngine();

  // As DistributedDataParallel.forward does before running the module:
  // may rebuild the buckets (in the second step, in gradient-ready order);
  // `sync` false: a micro-batch whose backward will not all-reduce, as
  // under DistributedDataParallel.no_sync() (Note [No-sync micro-batches]).
  // Returns true when the buckets were rebuilt.
  bool PrepareForward(bool sync = true);
  // Before a synchronising loss.backward(): arms the Reducer's autograd
  // hooks. Left out, the backward accumulates into the gradients in place
  // and communicates nothing (Note [No-sync micro-batches]).
  void PrepareForBackward();
  // All-reduces the Reducer has issued so far (one per bucket per
  // synchronising backward).
  int64_t AllReducesIssued() const;
  // Seconds the Reducer's all-reduces took between two times, counted once
  // where they overlap (Note [Communication time]).
  double CommSecondsBetween(std::chrono::steady_clock::time_point begin,
                            std::chrono::steady_clock::time_point end) const;
  // ZeRO-1's parameter exchange after the optimizer step: each parameter
  // broadcast in place from its owner (`owners`, Note [ZeRO-1 partition]),
  // all issued, then all waited for. Returns the seconds from the first
  // issue to the last completion (Note [Parameter exchange]).
  double ExchangeParameters(const std::vector<torch::Tensor>& params,
                            const std::vector<int>& owners);
  // The c10d::Reducer (what a program would track).
  c10d::Reducer& reducer();
  // The Reducer's flat gradient buckets, as they are now.
  std::vector<torch::Tensor> BucketBuffers();
  size_t bucket_count();
  void Abandon();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::shared_ptr<class CommIntervals> comm_;  // after Abandon()
};

}  // namespace memprof
