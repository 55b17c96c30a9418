// GradientReducer: the C++ counterpart of PyTorch's DistributedDataParallel
// reducer. It makes N ranks that each compute gradients on their own shard
// behave like one rank with the whole batch: after finish(), every rank holds
// the same averaged gradients in .grad.
//
// How: at construction, parameters and buffers are broadcast from rank 0 and
// every rank's parameter shapes are checked against rank 0's. Gradients are
// packed into flat buckets of one dtype each (first ~1 MiB so communication
// starts early, the rest ~25 MiB), filled in reverse parameter order — the
// order in which backward produces them. A hook on each parameter copies its gradient into
// its bucket slot; when a bucket's last gradient arrives, its asynchronous
// all-reduce starts, overlapping the rest of backward. finish() waits for all
// buckets and writes the averages back into .grad.
//
// Contracts: every rank builds the reducer over the same model, so the bucket
// layout — and hence the order and size of every collective — is identical
// on all ranks. Buckets are launched strictly in index order even if hooks
// fire in a different order. Every parameter must receive a gradient in a
// synchronised step (no unused parameters).
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace cifar {

struct BucketOptions {
  size_t first_bucket_bytes = size_t{1} << 20;
  size_t bucket_bytes = size_t{25} << 20;
};

// Which parameters go in which bucket: indices into the parameter list,
// buckets filled in reverse parameter order; a bucket closes once it reaches
// its size limit (PyTorch's rule). Pure, so tests can check it directly.
//
// A bucket is one flat tensor reduced in one dtype, so parameters of
// different dtypes never share one: each dtype fills buckets of its own (its
// first one up to first_bucket_bytes, as PyTorch's DDP does per dtype), and
// the buckets are numbered in the order backward completes them (by the
// lowest parameter index each holds, highest first), so launching them in
// index order never holds back a complete bucket behind a later one. For a
// model of one dtype this is exactly the plan without dtypes.
std::vector<std::vector<size_t>> plan_buckets(const std::vector<size_t>& param_bytes,
                                              const std::vector<torch::ScalarType>& param_dtypes,
                                              const BucketOptions& options);
// All parameters of one dtype.
std::vector<std::vector<size_t>> plan_buckets(const std::vector<size_t>& param_bytes, const BucketOptions& options);

class GradientReducer {
 public:
  GradientReducer(std::vector<torch::Tensor> parameters, std::vector<torch::Tensor> buffers, Communicator& comm,
                  BucketOptions options);
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Call before each backward. `synchronize` false skips communication for
  // this micro-batch (gradient accumulation: gradients just add up in .grad).
  void prepare_for_backward(bool synchronize, long step);
  // Waits for every bucket and leaves the averaged gradients in .grad.
  void finish();
  // After finish(): whether every averaged gradient is finite, as a 0-dim bool
  // on the device (not read back, so no synchronisation). The same on every
  // rank: every rank holds the same averages.
  torch::Tensor gradients_finite() const;
  // Copies rank 0's buffers (BatchNorm running statistics) to every rank
  // before a forward pass, as PyTorch DDP does by default.
  void broadcast_buffers();

  size_t num_buckets() const { return buckets_.size(); }
  const std::vector<std::vector<size_t>>& bucket_plan() const { return plan_; }

  // Timing of the last synchronised step, for the profile and the overlap test.
  struct StepTiming {
    std::chrono::steady_clock::time_point backward_started;
    std::vector<std::chrono::steady_clock::time_point> bucket_launched;
    std::chrono::steady_clock::time_point finish_called;
    double wait_seconds = 0;  // time finish() blocked: communication not hidden by backward
  };
  const StepTiming& last_timing() const { return timing_; }

 private:
  void on_gradient(size_t k, const torch::Tensor& grad);  // k: the parameter's index
  void launch_ready_buckets();                            // caller holds mutex_

  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> buffers_;
  Communicator& comm_;
  std::vector<std::vector<size_t>> plan_;
  std::vector<torch::Tensor> buckets_;  // flat, one per bucket
  std::vector<torch::Tensor> slots_;    // per parameter: its view into its bucket, parameter-shaped
  std::vector<size_t> bucket_of_;       // per parameter

  std::mutex mutex_;
  bool synchronize_ = false;
  long step_ = 0;
  std::vector<size_t> pending_;  // per bucket: gradients still to arrive
  size_t next_to_launch_ = 0;
  std::vector<std::unique_ptr<Work>> works_;
  StepTiming timing_;
};

// Broadcasts tensors from `root`, packed into one flat tensor per dtype so a
// model costs a handful of collectives, not one per tensor.
void broadcast_coalesced(Communicator& comm, const std::vector<torch::Tensor>& tensors, int root);

}  // namespace cifar
