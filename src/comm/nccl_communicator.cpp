// NCCL backend: stream-ordered collectives on CUDA tensors plus a watchdog.
#include "comm/nccl_communicator.hpp"

#include <atomic>
#include <cstring>
#include <exception>
#include <list>
#include <mutex>
#include <thread>

#include "gpu/cuda_errors.hpp"
#include "gpu/cuda_runtime.hpp"
#include "gpu/torch_stream.hpp"
#include "mpi/mpi_env.hpp"
#include "util/deadline.hpp"
#include "util/log.hpp"

namespace cifar {

static_assert(sizeof(ncclUniqueId) == kNcclUniqueIdBytes, "NCCL unique id size changed");

NcclUniqueIdBytes broadcast_nccl_unique_id(MPI_Comm comm) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  ncclUniqueId id{};
  if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm));
  MPI_CHECK(MPI_Barrier(comm));
  NcclUniqueIdBytes bytes{};
  std::memcpy(bytes.data(), &id, sizeof(id));
  return bytes;
}

namespace {

ncclDataType_t nccl_type(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat32: return ncclFloat32;
    case torch::kFloat64: return ncclFloat64;
    case torch::kBFloat16: return ncclBfloat16;
    case torch::kFloat16: return ncclFloat16;
    case torch::kInt64: return ncclInt64;
    case torch::kInt32: return ncclInt32;
    case torch::kUInt8: return ncclUint8;
    default: throw Error(std::string("NCCL backend: unsupported dtype ") + c10::toString(t));
  }
}

// One collective in flight, watched until its completion event fires.
// Completion events are shared by the Work handle and the watchdog: either may
// outlive the other.
using SharedEvent = std::shared_ptr<CUevent_st>;
SharedEvent make_event() {
  cudaEvent_t e = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return SharedEvent(e, [](cudaEvent_t ev) { cudaEventDestroy(ev); });
}

struct InFlight {
  SharedEvent done;
  std::string description;
  std::chrono::steady_clock::time_point started;
};

class NcclWork final : public Work {
 public:
  NcclWork(SharedEvent done, cudaStream_t compute) : done_(std::move(done)), compute_(compute) {}
  // Stream-ordered: later work on the compute stream sees the result; the
  // host does not block (the watchdog enforces the timeout).
  void wait() override { CUDA_CHECK(cudaStreamWaitEvent(compute_, done_.get(), 0)); }

 private:
  SharedEvent done_;
  cudaStream_t compute_;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(MPI_Comm comm, int device, std::chrono::milliseconds timeout)
      : Communicator(timeout), device_(device), heartbeat_([this](const std::string& what, auto limit) {
          fail(strprintf("%s has not run for %.0f s: it is stuck (in the CUDA driver?), and a stalled collective "
                         "would go unseen",
                         what.c_str(), static_cast<double>(limit.count()) / 1000.0),
               kExitCommTimeout);
        }) {
    MPI_CHECK(MPI_Comm_rank(comm, &rank_));
    MPI_CHECK(MPI_Comm_size(comm, &size_));
    gpu::set_device(device_);
    const NcclUniqueIdBytes bytes = broadcast_nccl_unique_id(comm);
    ncclUniqueId id{};
    std::memcpy(&id, bytes.data(), sizeof(id));
    NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_));
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    watchdog_ = std::thread([this] { watch(); });
  }

  ~NcclCommunicator() override {
    stop_ = true;
    if (watchdog_.joinable()) watchdog_.join();
    // Unwinding for an exception: the other ranks may never reach their own
    // teardown (ncclCommDestroy waits for them) or the stream may hold a
    // collective they never join. The process is about to end, and its end
    // frees the communicator; waiting here would only hide the exception.
    if (std::uncaught_exceptions() > 0) return;
    cudaStreamSynchronize(stream_);
    in_flight_.clear();
    cudaStreamDestroy(stream_);
    ncclCommDestroy(comm_);
  }

  std::string name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::unique_ptr<Work> all_reduce_async(torch::Tensor tensor, ReduceOp op, std::string label) override {
    check_cuda_tensor(tensor, "all_reduce");
    std::string description = describe("all_reduce", tensor) + (label.empty() ? "" : " (" + label + ")");
    return launch(description, [&](cudaStream_t s) {
      NCCL_CHECK(ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
                               nccl_type(tensor.scalar_type()), op == ReduceOp::Average ? ncclAvg : ncclSum, comm_, s));
    });
  }

  void all_reduce(torch::Tensor& tensor, ReduceOp op) override { all_reduce_async(tensor, op, "")->wait(); }

  void broadcast(torch::Tensor& tensor, int root) override {
    check_cuda_tensor(tensor, "broadcast");
    launch(describe("broadcast", tensor), [&](cudaStream_t s) {
      NCCL_CHECK(ncclBroadcast(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
                               nccl_type(tensor.scalar_type()), root, comm_, s));
    })->wait();
  }

  torch::Tensor all_gather(const torch::Tensor& tensor) override {
    check_cuda_tensor(tensor, "all_gather");
    std::vector<int64_t> shape{size_};
    shape.insert(shape.end(), tensor.sizes().begin(), tensor.sizes().end());
    torch::Tensor gathered = torch::empty(shape, tensor.options());
    launch(describe("all_gather", tensor), [&](cudaStream_t s) {
      NCCL_CHECK(ncclAllGather(tensor.data_ptr(), gathered.data_ptr(), static_cast<size_t>(tensor.numel()),
                               nccl_type(tensor.scalar_type()), comm_, s));
    })->wait();
    return gathered;
  }

  void barrier() override {
    torch::Tensor one = torch::ones({1}, torch::TensorOptions().dtype(torch::kFloat32).device(torch::kCUDA, device_));
    all_reduce(one, ReduceOp::Sum);
    CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(torch_compute_stream(device_))));
  }

 private:
  void check_cuda_tensor(const torch::Tensor& t, const char* op) const {
    check_tensor(t, op);
    if (!t.is_cuda() || t.get_device() != device_) {
      throw Error(describe(op, t) + strprintf(": the NCCL backend needs tensors on cuda:%d", device_));
    }
  }

  // Orders the collective after the compute stream's pending work, launches
  // it on the NCCL stream and hands its completion event to the watchdog.
  template <typename Enqueue>
  std::unique_ptr<Work> launch(const std::string& description, Enqueue&& enqueue) {
    auto compute = static_cast<cudaStream_t>(torch_compute_stream(device_));
    SharedEvent ready = make_event();
    SharedEvent done = make_event();
    CUDA_CHECK(cudaEventRecord(ready.get(), compute));
    CUDA_CHECK(cudaStreamWaitEvent(stream_, ready.get(), 0));
    enqueue(stream_);
    CUDA_CHECK(cudaEventRecord(done.get(), stream_));
    // A collective captured into a CUDA graph runs at each replay, not now:
    // its event is a graph edge the watchdog cannot query. Replays are
    // watched through watch_device_work() instead.
    if (!capturing(compute)) add_to_watch(done, description);
    return std::make_unique<NcclWork>(done, compute);
  }

  void watch_device_work(const std::string& what) override {
    SharedEvent done = make_event();
    CUDA_CHECK(cudaEventRecord(done.get(), static_cast<cudaStream_t>(torch_compute_stream(device_))));
    add_to_watch(done, what);
  }

  static bool capturing(cudaStream_t stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
    return status != cudaStreamCaptureStatusNone;
  }

  void add_to_watch(SharedEvent done, const std::string& description) {
    std::lock_guard<std::mutex> lock(mutex_);
    in_flight_.push_back(InFlight{std::move(done), description, std::chrono::steady_clock::now()});
  }

  // Beats its heartbeat every round: if a round never ends (a CUDA call that
  // hangs in the driver), the heartbeat's own thread ends the job after
  // --comm-timeout, as the watchdog would have.
  void watch() {
    gpu::set_device(device_);
    heartbeat_.arm("the NCCL watchdog (the thread that ends the job when a collective stalls)", timeout_);
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      heartbeat_.beat();
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = in_flight_.begin(); it != in_flight_.end();) {
        const cudaError_t state = cudaEventQuery(it->done.get());
        if (state == cudaSuccess) {
          it = in_flight_.erase(it);
          continue;
        }
        // Anything but "not ready" is the device's own failure (an illegal
        // address, an ECC error, a launch failure): not a stalled peer.
        if (state != cudaErrorNotReady) {
          fail(it->description + " failed on the device: " + cudaGetErrorName(state) + ": " + cudaGetErrorString(state),
               kExitFailure);
        }
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(comm_, &async);
        const auto waited = std::chrono::steady_clock::now() - it->started;
        if (async != ncclSuccess && async != ncclInProgress) {
          fail(it->description + " failed asynchronously: " + detail::nccl_error_text(async), kExitFailure);
        }
        if (waited > timeout_) {
          fail(timeout_message(it->description, timeout_), kExitCommTimeout);
        }
        ++it;
      }
    }
    heartbeat_.disarm();
  }

  // Ends the job without ncclCommAbort, which can block for minutes on a
  // communicator whose peers are gone: the processes' end frees NCCL's
  // resources and stops their kernels.
  [[noreturn]] void fail(const std::string& message, int exit_code) {
    log::error(message + "; ending the job");
    MpiEnvironment::abort_job(exit_code);
  }

  int device_ = 0;
  int rank_ = 0;
  int size_ = 1;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::mutex mutex_;
  std::list<InFlight> in_flight_;
  std::atomic<bool> stop_{false};
  Deadline heartbeat_;  // the watchdog's own watch
  std::thread watchdog_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, int device_index,
                                                     std::chrono::milliseconds timeout) {
  std::string why;
  if (gpu::device_count(&why) == 0) {
    throw ConfigError("--backend nccl: no CUDA device is visible (" + why + "). Use --backend mpi to run on CPUs.");
  }
  return std::make_unique<NcclCommunicator>(comm, device_index, timeout);
}

}  // namespace cifar
