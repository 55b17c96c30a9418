// src/comm/backends.cpp's registry with docs/extending.md's communicator recipe.
#include "docs/registries_with_recipes.hpp"
#include "spliced/backends.cpp.inc"

namespace cifar::docs_example {
std::vector<std::string> backend_names() { return registered_names(registry()); }
std::string auto_backend(const Machine& machine, DeviceRequest device) {
  for (const auto& e : registry())
    if (e.can_run(machine, device)) return e.name;
  return "";
}
torch::Device place(const std::string& backend, const World& world, DeviceRequest device, const Machine& machine) {
  return find_registered(registry(), backend, "backend").place(world, device, machine);
}
std::unique_ptr<Communicator> make_communicator(const std::string& backend, MPI_Comm comm, torch::Device device,
                                                std::chrono::milliseconds timeout) {
  return find_registered(registry(), backend, "backend").make(comm, device, timeout);
}
}  // namespace cifar::docs_example
