// The four registries as docs/extending.md's recipes leave them: each the
// production registry() (copied from its source at build time) with the
// recipe's code and entry spliced in by extract_examples.py. The functions
// mirror the production lookups over those tables.
#pragma once

#include <mpi.h>
#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "comm/backends.hpp"
#include "config/run_config.hpp"
#include "data/dataset.hpp"
#include "model/model.hpp"

namespace cifar::docs_example {

std::vector<std::string> model_names();
std::shared_ptr<Model> make_model(const std::string& name);

std::vector<std::string> dataset_names();
// The registered loader's result, before load_dataset()'s normalisation.
Dataset load_dataset(const DataConfig& config, SplitRequest request);

std::vector<std::string> optimizer_names();
bool optimizer_supports_nesterov(const std::string& name);
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimConfig& config,
                                                        const std::vector<ParameterGroup>& groups);

std::vector<std::string> backend_names();
// The backend `--backend auto` picks on `machine`: the first, in registry order, that can run there.
std::string auto_backend(const Machine& machine, DeviceRequest device);
torch::Device place(const std::string& backend, const World& world, DeviceRequest device, const Machine& machine);
std::unique_ptr<Communicator> make_communicator(const std::string& backend, MPI_Comm comm, torch::Device device,
                                                std::chrono::milliseconds timeout);

}  // namespace cifar::docs_example
