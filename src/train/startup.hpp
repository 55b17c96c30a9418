// The start-up sequence: the stages every run passes, in this order, before
// its first step. Training (train/run_setup.hpp) and --check-env
// (app/check_env.cpp) walk the one list through walk_startup(), so a check
// fails at --check-env exactly where the job would; --check-env claims
// nothing on the way (no output made or locked, no image read, no
// communicator built).
//
//   configuration   the CUDA stack against the build's flavour (the options
//                   themselves were checked when they were parsed)
//   node launch     the launcher's tasks and the GPUs it granted (node checks)
//   device          the rank's device and backend, and what the options ask of them
//   outputs         the outputs checked, and when training made and locked
//   data            the data file checked (when training, read) and the run's plan
//   model           the model (when training, its optimiser too)
//   node resources  room for the checkpoints and the model file, /dev/shm (node checks)
//   communication   the communicators (training only)
//   resume          what the run continues, and whose outputs it writes
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "placement/node_checks.hpp"

namespace cifar {

enum class StartupStage {
  Configuration,
  NodeLaunch,
  Device,
  Outputs,
  Data,
  Model,
  NodeResources,
  Communication,
  Resume
};

// Its name as the logs and failures give it ("node launch").
const char* stage_name(StartupStage stage);

// What one walk does at each stage; a stage it has no part in does nothing.
// The configuration, device, outputs and data stages run under one
// agreement each (agree_on_startup: their work is this rank's alone, and a
// failure on any rank stops every rank alike with one message); the node
// stages return this node's failures (agree_on_node_checks); the model,
// communication and resume stages meet the other ranks through their own
// collectives, if any.
class StartupWalk {
 public:
  virtual ~StartupWalk() = default;
  virtual void configuration() {}
  virtual std::vector<NodeFailure> node_launch() { return {}; }
  virtual void device() {}
  virtual void outputs() {}
  virtual void data() {}
  virtual void model() {}
  virtual std::vector<NodeFailure> node_resources() { return {}; }
  virtual void communication() {}
  virtual void resume() {}

  // The stage in progress (for a failure's report); Configuration before the walk.
  StartupStage stage() const { return stage_; }

 private:
  friend void walk_startup(MPI_Comm, const std::string&, StartupWalk&, bool, StartupStage);
  StartupStage stage_ = StartupStage::Configuration;
};

// Walks the stages in order through `last`, each under its agreement over
// `comm`; `host` names this node in node failures, which with
// `write_failed_nodes` are written to $CIFAR_FAILED_NODES_FILE (training's
// restart scripts read it).
void walk_startup(MPI_Comm comm, const std::string& host, StartupWalk& walk, bool write_failed_nodes = true,
                  StartupStage last = StartupStage::Resume);

// "configuration, node launch, ..., resume": the stages, in order.
std::string startup_stage_list();

}  // namespace cifar
