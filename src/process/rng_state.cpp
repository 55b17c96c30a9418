// The default generators as a checkpoint part (see rng_state.hpp).
#include "process/rng_state.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <mutex>

#include "util/error.hpp"

namespace cifar {
namespace {

at::Tensor generator_state(at::Generator generator) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_generator_state(at::Generator generator, const at::Tensor& state) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

}  // namespace

void DefaultGenerators::save_state(StateDict& state) const {
  state.insert(std::string(kCpuKey), generator_state(at::detail::getDefaultCPUGenerator()));
  if (!device_.is_cpu())
    state.insert(std::string(kDeviceKey), generator_state(at::globalContext().defaultGenerator(device_)));
}

void DefaultGenerators::restore_state(const StateDict& state) {
  set_generator_state(at::detail::getDefaultCPUGenerator(), state.at(std::string(kCpuKey)).toTensor());
  const auto device_state = state.find(std::string(kDeviceKey));
  if (device_.is_cpu() || device_state == state.end()) return;
  try {
    set_generator_state(at::globalContext().defaultGenerator(device_), device_state->value().toTensor());
  } catch (const c10::Error& e) {
    throw CheckpointError("its " + device_.str() +
                          " random-number state is not valid (corrupt?): " + e.what_without_backtrace());
  }
}

void DefaultGenerators::check_cpu_state(const at::Tensor& state) {
  set_generator_state(at::make_generator<at::CPUGeneratorImpl>(), state);
}

}  // namespace cifar
