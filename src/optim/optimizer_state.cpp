// The optimiser's state as a checkpoint part (see optimizer_state.hpp).
#include "optim/optimizer_state.hpp"

#include <cstring>
#include <sstream>

#include "util/error.hpp"

namespace cifar {

std::string OptimizerState::archive_bytes(const at::Tensor& entry) {
  const at::Tensor c = entry.to(torch::kCPU).contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.numel()));
}

void OptimizerState::save_state(StateDict& state) const {
  torch::serialize::OutputArchive archive;
  optimizer_.save(archive);
  std::ostringstream os;
  archive.save_to(os);
  const std::string bytes = os.str();
  at::Tensor t = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
  if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  state.insert(std::string(kKey), t);
}

void OptimizerState::restore_state(const StateDict& state) {
  try {
    torch::serialize::InputArchive archive;
    std::istringstream is(archive_bytes(state.at(std::string(kKey)).toTensor()));
    archive.load_from(is, device_);
    optimizer_.load(archive);
  } catch (const c10::Error& e) {
    throw CheckpointError(std::string("its optimiser state does not fit this model and optimiser: ") +
                          e.what_without_backtrace());
  } catch (const std::exception& e) {
    // The optimiser state is a TorchScript archive of its own: a damaged one
    // made LibTorch's script parser throw torch::jit::ErrorReport or
    // std::runtime_error, which escaped as an uncaught exception (found by the
    // checkpoint fuzz harness, tests/fuzz/regression/checkpoint).
    throw CheckpointError(std::string("its optimiser state is not readable (corrupt?): ") + e.what());
  }
}

}  // namespace cifar
