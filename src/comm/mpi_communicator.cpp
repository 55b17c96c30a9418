// MPI backend: one communication thread executes every collective in issue order.
#include "comm/mpi_communicator.hpp"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <climits>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "mpi/mpi_env.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

// MPI has no 16-bit float types: reduce them as opaque 2-byte elements with
// user-defined sum operations that add in float32.
template <typename T>
void sum_16bit(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = static_cast<T>(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}

struct SixteenBitTypes {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op bf16_sum = MPI_OP_NULL;
  MPI_Op half_sum = MPI_OP_NULL;
};

const SixteenBitTypes& sixteen_bit_types() {
  static const SixteenBitTypes types = [] {
    SixteenBitTypes t;
    MPI_CHECK(MPI_Type_contiguous(2, MPI_BYTE, &t.type));
    MPI_CHECK(MPI_Type_commit(&t.type));
    MPI_CHECK(MPI_Op_create(&sum_16bit<c10::BFloat16>, /*commute=*/1, &t.bf16_sum));
    MPI_CHECK(MPI_Op_create(&sum_16bit<c10::Half>, /*commute=*/1, &t.half_sum));
    return t;
  }();
  return types;
}

MPI_Datatype mpi_type(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat32: return MPI_FLOAT;
    case torch::kFloat64: return MPI_DOUBLE;
    case torch::kInt64: return MPI_INT64_T;
    case torch::kInt32: return MPI_INT32_T;
    case torch::kUInt8: return MPI_UINT8_T;
    case torch::kBFloat16:
    case torch::kFloat16: return sixteen_bit_types().type;
    default: throw Error(std::string("MPI backend: unsupported dtype ") + c10::toString(t));
  }
}

MPI_Op mpi_sum(torch::ScalarType t) {
  if (t == torch::kBFloat16) return sixteen_bit_types().bf16_sum;
  if (t == torch::kFloat16) return sixteen_bit_types().half_sum;
  return MPI_SUM;
}

// MPI counts are int: split larger buffers into chunks of at most INT_MAX elements.
template <typename Call>
void for_each_chunk(int64_t count, size_t element_size, void* data, Call&& call) {
  char* p = static_cast<char*>(data);
  for (int64_t done = 0; done < count;) {
    const int n = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
    call(p + static_cast<size_t>(done) * element_size, n);
    done += n;
  }
}

// CUDA tensors go through host memory; CPU tensors are used directly.
struct HostView {
  explicit HostView(const torch::Tensor& t) : original(t), host(t.is_cuda() ? t.to(torch::kCPU) : t) {}
  void write_back() {
    if (original.is_cuda()) original.copy_(host);
  }
  torch::Tensor original;
  torch::Tensor host;
};

void average_in_place(torch::Tensor& t, int size) {
  if (size == 1) return;
  if (c10::isFloatingType(t.scalar_type())) {
    t.div_(size);
  } else {
    t.div_(size, "trunc");
  }
}

class MpiWork final : public Work {
 public:
  MpiWork(std::shared_future<void> done, std::string description, std::chrono::milliseconds timeout)
      : done_(std::move(done)), description_(std::move(description)), timeout_(timeout) {}
  void wait() override {
    if (done_.wait_for(timeout_) == std::future_status::timeout) {
      throw CommTimeout(timeout_message(description_, timeout_));
    }
    done_.get();  // rethrows an MPI error from the communication thread
  }

 private:
  std::shared_future<void> done_;
  std::string description_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

// The communication thread. It is shared with the thread itself, so that a
// communicator destroyed while a collective is stuck (the job is being torn
// down) detaches instead of hanging in a join.
//
// Blocking collectives run on the caller's thread when the engine is idle:
// a hand-off costs two context switches (~35 us, 20% of a 1 MiB all-reduce).
// The engine thread then watches the caller's deadline instead, and ends the
// job with the operation's name if it passes: a blocking MPI call cannot be
// interrupted, the job can.
struct MpiCommunicator::Engine {
  MPI_Comm comm = MPI_COMM_NULL;
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::packaged_task<void()>> queue;
  bool stopping = false;
  bool busy = false;
  bool inline_active = false;  // a caller runs a collective on its own thread
  std::string inline_description;
  std::chrono::steady_clock::time_point inline_deadline;
  std::chrono::milliseconds inline_timeout{0};
  std::thread thread;
  static constexpr std::chrono::milliseconds kWatchPeriod{200};

  static void run(std::shared_ptr<Engine> self) {
    for (;;) {
      std::packaged_task<void()> task;
      {
        std::unique_lock<std::mutex> lock(self->mutex);
        for (;;) {
          if (self->inline_active && std::chrono::steady_clock::now() >= self->inline_deadline) {
            log::error(timeout_message(self->inline_description, self->inline_timeout) + "; ending the job");
            MpiEnvironment::abort_job(kExitCommTimeout);
          }
          if (!self->inline_active && !self->queue.empty()) break;
          if (!self->inline_active && self->stopping) return;  // stopping and drained
          // Polling keeps a caller's inline collective free of wake-ups; the
          // deadline is checked at least this often.
          self->wake.wait_for(lock, kWatchPeriod);
        }
        task = std::move(self->queue.front());
        self->queue.pop_front();
        self->busy = true;
      }
      task();
      std::lock_guard<std::mutex> lock(self->mutex);
      self->busy = false;
    }
  }

  std::shared_future<void> submit(std::function<void()> fn) {
    std::packaged_task<void()> task(std::move(fn));
    std::shared_future<void> done = task.get_future().share();
    {
      std::lock_guard<std::mutex> lock(mutex);
      queue.push_back(std::move(task));
    }
    wake.notify_one();
    return done;
  }

  // Runs `fn` now: on this thread when nothing is queued or running (order is
  // kept: later submissions wait for it), else after the queue, with a timeout.
  void run_blocking(const std::function<void()>& fn, const std::string& description,
                    std::chrono::milliseconds timeout) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      if (!queue.empty() || busy || inline_active) {
        lock.unlock();
        MpiWork(submit(fn), description, timeout).wait();
        return;
      }
      inline_active = true;
      inline_description = description;
      inline_timeout = timeout;
      inline_deadline = std::chrono::steady_clock::now() + timeout;
    }
    auto finish = [this] {
      std::lock_guard<std::mutex> lock(mutex);
      inline_active = false;
      if (!queue.empty()) wake.notify_all();  // work submitted meanwhile may start
    };
    try {
      fn();
    } catch (...) {
      finish();
      throw;
    }
    finish();
  }
};

MpiCommunicator::MpiCommunicator(MPI_Comm comm, std::chrono::milliseconds timeout)
    : Communicator(timeout), engine_(std::make_shared<Engine>()) {
  engine_->comm = duplicate_comm(comm);
  MPI_CHECK(MPI_Comm_rank(engine_->comm, &rank_));
  MPI_CHECK(MPI_Comm_size(engine_->comm, &size_));
  sixteen_bit_types();  // create the 16-bit types now, on the main thread
  engine_->thread = std::thread(&Engine::run, engine_);
}

MpiCommunicator::~MpiCommunicator() {
  bool idle = false;
  {
    std::lock_guard<std::mutex> lock(engine_->mutex);
    engine_->stopping = true;
    idle = !engine_->busy && engine_->queue.empty();
  }
  engine_->wake.notify_one();
  if (idle) {
    engine_->thread.join();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&engine_->comm);  // a communicator may outlive MPI (static in tests)
  } else {
    engine_->thread.detach();  // stuck in a collective: the job is ending anyway
  }
}

namespace {
void all_reduce_on(MPI_Comm comm, torch::Tensor tensor, ReduceOp op, int size) {
  if (tensor.numel() == 0) return;
  HostView view(tensor);
  const MPI_Datatype type = mpi_type(view.host.scalar_type());
  const MPI_Op sum = mpi_sum(view.host.scalar_type());
  for_each_chunk(view.host.numel(), view.host.element_size(), view.host.data_ptr(),
                 [&](void* p, int n) { MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, p, n, type, sum, comm)); });
  if (op == ReduceOp::Average) average_in_place(view.host, size);
  view.write_back();
}
}  // namespace

std::unique_ptr<Work> MpiCommunicator::all_reduce_async(torch::Tensor tensor, ReduceOp op, std::string label) {
  check_tensor(tensor, "all_reduce");
  std::string description = describe("all_reduce", tensor);
  if (!label.empty()) description += " (" + label + ")";
  const int size = size_;
  MPI_Comm comm = engine_->comm;
  auto done = engine_->submit([tensor, op, size, comm] { all_reduce_on(comm, tensor, op, size); });
  return std::make_unique<MpiWork>(std::move(done), description, timeout_);
}

void MpiCommunicator::all_reduce(torch::Tensor& tensor, ReduceOp op) {
  check_tensor(tensor, "all_reduce");
  const int size = size_;
  MPI_Comm comm = engine_->comm;
  engine_->run_blocking([&] { all_reduce_on(comm, tensor, op, size); }, describe("all_reduce", tensor), timeout_);
}

void MpiCommunicator::broadcast(torch::Tensor& tensor, int root) {
  check_tensor(tensor, "broadcast");
  if (root < 0 || root >= size_)
    throw Error(strprintf("broadcast: root %d is not a rank of a world of %d", root, size_));
  MPI_Comm comm = engine_->comm;
  engine_->run_blocking(
      [&] {
        if (tensor.numel() == 0) return;
        HostView view(tensor);
        const MPI_Datatype type = mpi_type(view.host.scalar_type());
        for_each_chunk(view.host.numel(), view.host.element_size(), view.host.data_ptr(),
                       [&](void* p, int n) { MPI_CHECK(MPI_Bcast(p, n, type, root, comm)); });
        view.write_back();
      },
      describe("broadcast", tensor), timeout_);
}

torch::Tensor MpiCommunicator::all_gather(const torch::Tensor& tensor) {
  check_tensor(tensor, "all_gather");
  std::vector<int64_t> shape{size_};
  shape.insert(shape.end(), tensor.sizes().begin(), tensor.sizes().end());
  torch::Tensor gathered = torch::empty(shape, tensor.options().device(torch::kCPU));
  MPI_Comm comm = engine_->comm;
  engine_->run_blocking(
      [&] {
        if (tensor.numel() == 0) return;
        const torch::Tensor host = tensor.to(torch::kCPU).contiguous();
        if (host.numel() > INT_MAX) throw Error("all_gather: tensors above 2^31 elements are not supported");
        const MPI_Datatype type = mpi_type(host.scalar_type());
        const int n = static_cast<int>(host.numel());
        MPI_CHECK(MPI_Allgather(host.data_ptr(), n, type, gathered.data_ptr(), n, type, comm));
      },
      describe("all_gather", tensor), timeout_);
  return tensor.is_cuda() ? gathered.to(tensor.device()) : gathered;
}

void MpiCommunicator::barrier() {
  MPI_Comm comm = engine_->comm;
  engine_->run_blocking([comm] { MPI_CHECK(MPI_Barrier(comm)); }, "barrier", timeout_);
}

}  // namespace cifar
