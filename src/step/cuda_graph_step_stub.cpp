// --cuda-graphs without a CUDA LibTorch (the cpu preset): nothing can be
// captured; cuda_graphs_refusal() says so before a GraphedStep is made.
#include "step/cuda_graph_step.hpp"
#include "util/error.hpp"

namespace cifar {

bool cuda_graphs_compiled() { return false; }

struct GraphedStep::Impl {};

GraphedStep::GraphedStep(torch::Device, Communicator&, Communicator&) {
  throw ConfigError("--cuda-graphs true needs a LibTorch with CUDA: this build has none (build the cuda preset)");
}
GraphedStep::~GraphedStep() = default;
bool GraphedStep::fits(const Batch&, int64_t) const { return false; }
torch::Tensor GraphedStep::run(const Batch&, const Body&) {
  throw Error("--cuda-graphs: this build has no CUDA graphs (LibTorch without CUDA)");
}
bool GraphedStep::captured() const { return false; }

}  // namespace cifar
