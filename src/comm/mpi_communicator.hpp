// MpiCommunicator: collectives over MPI on CPU tensors (CUDA tensors are
// staged through host memory, for sites without NCCL).
//
// Every collective runs on one communication thread that owns a private
// duplicate of the job's communicator. That gives asynchronous all-reduce
// real overlap with the caller's computation (Open MPI makes no progress on a
// nonblocking collective between MPI calls), keeps all collectives in the
// order they were issued, and lets every wait time out instead of hanging
// when a rank stalls.
#pragma once

#include <mpi.h>

#include <chrono>
#include <memory>

#include "comm/communicator.hpp"

namespace cifar {

class MpiCommunicator final : public Communicator {
 public:
  // Collectives over a private duplicate of `comm`; each one fails with
  // CommTimeout after `timeout`.
  explicit MpiCommunicator(MPI_Comm comm, std::chrono::milliseconds timeout = kDefaultCommTimeout);
  ~MpiCommunicator() override;

  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce(torch::Tensor& tensor, ReduceOp op) override;
  std::unique_ptr<Work> all_reduce_async(torch::Tensor tensor, ReduceOp op, std::string label) override;
  void broadcast(torch::Tensor& tensor, int root) override;
  torch::Tensor all_gather(const torch::Tensor& tensor) override;
  void barrier() override;

 private:
  struct Engine;  // the communication thread and its queue
  std::shared_ptr<Engine> engine_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace cifar
