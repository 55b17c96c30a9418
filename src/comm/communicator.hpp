// Communicator: the one interface every collective in cifar_mpi goes through.
// Backends: MpiCommunicator (CPU tensors; CUDA tensors staged through host
// memory) and NcclCommunicator (CUDA tensors on a dedicated stream).
//
// Contract, as for any MPI/NCCL collective: every rank calls the same
// collectives in the same order with tensors of the same dtype and size.
// Tensors must be contiguous; reductions are in place.
#pragma once

#include <torch/types.h>

#include <chrono>
#include <memory>
#include <string>

namespace cifar {

enum class ReduceOp { Sum, Average };

// --comm-timeout's default: how long a collective may take.
inline constexpr std::chrono::milliseconds kDefaultCommTimeout{600'000};

// A collective in flight. wait() returns once the result may be used by the
// caller's next operation (for NCCL: ordered on the compute stream; for MPI:
// complete in host memory). Throws CommTimeout past the communicator's timeout.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual std::string name() const = 0;  // "mpi" or "nccl"
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // In place. Supported dtypes: float32, float64, bfloat16, float16, int64.
  // Average divides the sum by size() (integer division for int64).
  virtual void all_reduce(torch::Tensor& tensor, ReduceOp op) = 0;
  // Starts an in-place all-reduce; `label` names it in timeout reports
  // (e.g. "step 12 bucket 3"). The tensor must stay alive until wait().
  virtual std::unique_ptr<Work> all_reduce_async(torch::Tensor tensor, ReduceOp op, std::string label) = 0;
  virtual void broadcast(torch::Tensor& tensor, int root) = 0;
  // Returns a tensor of shape [size(), tensor.sizes()...], rank i's input at index i.
  virtual torch::Tensor all_gather(const torch::Tensor& tensor) = 0;
  virtual void barrier() = 0;
  // Puts the compute stream's work so far under the timeout, as if it were a
  // collective named `what`: a replayed CUDA graph's collectives were
  // captured, not launched, so only this tells a stalled peer from a slow
  // step. No-op for backends whose collectives complete on the host.
  virtual void watch_device_work(const std::string& /*what*/) {}

  // How long any collective may take before it fails with CommTimeout; fixed
  // when the communicator is made (--comm-timeout).
  std::chrono::milliseconds timeout() const { return timeout_; }

 protected:
  explicit Communicator(std::chrono::milliseconds timeout) : timeout_(timeout) {}
  // Rejects what no backend supports: non-contiguous tensors, unsupported dtypes.
  static void check_tensor(const torch::Tensor& tensor, const char* operation);
  const std::chrono::milliseconds timeout_;
};

// Human-readable description for error messages: "all_reduce of 1024 float32 (4.0 KiB)".
std::string describe(const char* operation, const torch::Tensor& tensor);
std::string dtype_name(torch::ScalarType t);  // "float32", "bfloat16", ...
// The one report of a collective that outlived --comm-timeout, for every
// backend and for both the waiting caller and the watchdog: "<what> did not
// complete within 3.0 s (--comm-timeout): another rank is stalled, ...".
// tests/robustness/rank_stalled.sh matches it.
std::string timeout_message(const std::string& what, std::chrono::milliseconds timeout);

}  // namespace cifar
