// The default generators (CPU, and the GPU's when training on one) as a
// stateful part of a checkpoint. They are seeded alike on every rank and drawn
// alike, so rank 0's states stand for every rank's.
#pragma once

#include <torch/torch.h>

#include "util/stateful.hpp"

namespace cifar {

class DefaultGenerators : public Stateful {
 public:
  // Its checkpoint entries; the device's is absent for CPU runs.
  static constexpr const char* kCpuKey = "cpu_rng_state";
  static constexpr const char* kDeviceKey = "device_rng_state";

  explicit DefaultGenerators(torch::Device device) : device_(device) {}
  void save_state(StateDict& state) const override;
  // The CPU state is expected checked (check_cpu_state); a device state cannot
  // be tried without the device, so it is checked as it is set: CheckpointError.
  void restore_state(const StateDict& state) override;

  // Throws c10::Error when `state` is not a CPU generator state LibTorch
  // accepts, trying it on a scratch generator.
  static void check_cpu_state(const at::Tensor& state);

 private:
  torch::Device device_;
};

}  // namespace cifar
