// Capture and replay of the training step with LibTorch's CUDA graphs (see
// cuda_graph_step.hpp). Compiled only where LibTorch has CUDA.
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
// LibTorch 2.11 and newer (the cuda flavour) have CUDAEvent in c10; 2.10 (cuda12)
// has it in ATen only.
#if __has_include(<c10/cuda/CUDAEvent.h>)
#include <c10/cuda/CUDAEvent.h>
using TorchCudaEvent = c10::cuda::CUDAEvent;
#else
#include <ATen/cuda/CUDAEvent.h>
using TorchCudaEvent = at::cuda::CUDAEvent;
#endif

#include <map>

#include "comm/agreement.hpp"
#include "step/cuda_graph_step.hpp"
#include "util/error.hpp"

namespace cifar {

bool cuda_graphs_compiled() { return true; }

struct GraphedStep::Impl {
  torch::Device device;
  Communicator& control;
  Communicator& comm;
  c10::cuda::CUDAStream side;  // warm-up and capture: graphs are captured off the default stream
  // The step captured for one image size: a graph replays fixed shapes only,
  // and --resolution-schedule trains epochs at several sizes.
  struct SizedStep {
    int warmups_done = 0;
    Batch inputs;        // static: the graph reads its batch here
    torch::Tensor loss;  // static: the graph writes its loss here
    std::unique_ptr<at::cuda::CUDAGraph> graph;
  };
  std::map<int64_t, SizedStep> by_size;  // keyed by the images' height
};

namespace {

c10::cuda::CUDAStream current_stream(const torch::Device& device) {
  return c10::cuda::getCurrentCUDAStream(device.index());
}

// `later` waits (on the device) for the work enqueued on `earlier` so far.
void order_after(const c10::cuda::CUDAStream& earlier, const c10::cuda::CUDAStream& later) {
  TorchCudaEvent event;
  event.record(earlier);
  event.block(later);
}

// Runs `work` with `side` as the current stream, after the current stream's
// work so far and before its later work.
template <typename Work>
void on_side_stream(const c10::cuda::CUDAStream& side, const torch::Device& device, Work&& work) {
  const c10::cuda::CUDAStream main = current_stream(device);
  order_after(main, side);
  {
    c10::cuda::CUDAStreamGuard guard(side);
    work();
  }
  order_after(side, main);
}

// Autocast caches the low-precision copies of the weights it makes in a
// forward pass and frees them afterwards; a graph must redo the casts on
// every replay, so capture runs without the cache (as torch.cuda.graph does).
class AutocastCacheOff {
 public:
  AutocastCacheOff() : was_(at::autocast::is_autocast_cache_enabled()) {
    at::autocast::set_autocast_cache_enabled(false);
  }
  ~AutocastCacheOff() { at::autocast::set_autocast_cache_enabled(was_); }
  AutocastCacheOff(const AutocastCacheOff&) = delete;
  AutocastCacheOff& operator=(const AutocastCacheOff&) = delete;

 private:
  bool was_;
};

// On the current (side) stream. Thread-local capture mode: the NCCL
// watchdog thread queries events meanwhile, which the default global mode
// forbids to every thread of the process.
//
// Only capture_begin, capture_end and replay are used: the part of
// CUDAGraph's API that every supported LibTorch keeps. LibTorch 2.14 removed
// register_generator_state(const Generator&) and debug_dump, and split
// capture_end into capture_end_pre/capture_end_post (capture_end still does
// both, instantiating the graph). The default CUDA generator's state is
// registered with the graph by capture_begin up to 2.13 and on its first use
// during capture from 2.14 on: either way a step that draws random numbers
// advances the generator's offset on every replay, as in eager mode.
void capture(at::cuda::CUDAGraph& graph, const GraphedStep::Body& body, const Batch& inputs, torch::Tensor& loss) {
  AutocastCacheOff no_cache;
  graph.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
  try {
    loss = body(inputs);
  } catch (...) {
    try {
      graph.capture_end();  // leaves the stream usable; the graph is discarded
    } catch (...) {
    }
    throw;
  }
  graph.capture_end();
}

}  // namespace

GraphedStep::GraphedStep(torch::Device device, Communicator& control, Communicator& comm)
    : impl_(new Impl{device, control, comm, c10::cuda::getStreamFromPool(false, device.index()), {}}) {}

GraphedStep::~GraphedStep() = default;

bool GraphedStep::fits(const Batch& batch, int64_t full_batch_size) const {
  return batch.labels.size(0) == full_batch_size;
}

bool GraphedStep::captured() const {
  for (const auto& [size, step] : impl_->by_size)
    if (step.graph) return true;
  return false;
}

torch::Tensor GraphedStep::run(const Batch& batch, const Body& body) {
  Impl& impl = *impl_;
  Impl::SizedStep& s = impl.by_size[batch.images.size(2)];  // a new size warms up and captures its own graph
  if (!s.inputs.images.defined()) {                         // the loader's layout (channels_last or not) is kept
    s.inputs.images = torch::empty_like(batch.images);
    s.inputs.labels = torch::empty_like(batch.labels);
  }
  s.inputs.images.copy_(batch.images, /*non_blocking=*/true);
  s.inputs.labels.copy_(batch.labels, /*non_blocking=*/true);
  if (!s.graph && s.warmups_done < kWarmupSteps) {
    ++s.warmups_done;
    torch::Tensor loss;
    on_side_stream(impl.side, impl.device, [&] { loss = body(s.inputs); });
    return loss;
  }
  if (!s.graph) {
    // Every rank captures at the same step; if any fails, all stop with its message.
    agree_on(impl.control, [&] {
      try {
        auto graph = std::make_unique<at::cuda::CUDAGraph>();
        on_side_stream(impl.side, impl.device, [&] { capture(*graph, body, s.inputs, s.loss); });
        s.graph = std::move(graph);
      } catch (const c10::Error& e) {
        throw Error(std::string("capturing the training step as a CUDA graph failed: ") + e.what_without_backtrace() +
                    "; run with --cuda-graphs false");
      }
    });
  }
  s.graph->replay();
  impl.comm.watch_device_work("training step (CUDA graph replay)");
  return s.loss;
}

}  // namespace cifar
