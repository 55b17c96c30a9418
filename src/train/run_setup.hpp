// RunParts: everything a run trains with, built once before its first step;
// RunSetup: training's walk of the start-up sequence (train/startup.hpp),
// which builds them stage by stage: the device and outputs, the data and the
// run's plan, the model and its optimiser, the communicators, and what the
// run continues (a checkpoint's position, plan and learning-rate scale). The
// Trainer (train/trainer.hpp) runs them; it builds nothing itself.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "comm/backends.hpp"
#include "comm/communicator.hpp"
#include "comm/gradient_reducer.hpp"
#include "config/run_config.hpp"
#include "data/batch_loader.hpp"
#include "data/dataset.hpp"
#include "model/model.hpp"
#include "mpi/mpi_env.hpp"
#include "optim/lookahead.hpp"
#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"
#include "outputs/run_outputs.hpp"
#include "process/threads.hpp"
#include "report/profile.hpp"
#include "report/progress.hpp"
#include "step/cuda_graph_step.hpp"
#include "step/divergence.hpp"
#include "step/precision.hpp"
#include "step/precision_choice.hpp"
#include "step/run_plan.hpp"
#include "step/test_hooks.hpp"
#include "train/startup.hpp"

namespace cifar {

struct RunParts {
  explicit RunParts(const RunConfig& config);

  // Where this rank runs, and what it owns.
  Placement placement;
  // What it trains and evaluates in: --precision, auto resolved for the
  // placement. Read here, never from the configuration, which may say auto.
  PrecisionChoice precision;
  ThreadCounts threads;               // the pools' sizes and why (the start-up lines name them)
  std::optional<RunOutputs> outputs;  // rank 0: checked and locked outputs

  // The data and the run's plan.
  Dataset data;
  LoaderOptions loader_options;  // the run's part (data/epoch_shard.hpp); each epoch's shard adds its own
  torch::MemoryFormat format = torch::MemoryFormat::Contiguous;
  RunPlan plan;  // as the run continues (after a resume, at its step shape and length)

  // The model and its update.
  std::shared_ptr<Model> model;
  std::vector<torch::Tensor> parameters;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<Lookahead> lookahead;
  ScheduleOptions schedule;
  double prepare_seconds = 0;  // the untrained model, its whitening, the optimiser

  // The step's guards and measures.
  LossScaler scaler;
  DivergenceGuard guard;
  StepProfile profile;
  std::unique_ptr<ProgressReporter> progress;

  // Communication and checkpoints.
  std::unique_ptr<Communicator> control;  // host MPI: agreement, preemption and checkpoint decisions
  std::unique_ptr<Communicator> comm;     // the placement's backend: gradients, evaluation, loss sums
  std::unique_ptr<GradientReducer> reducer;
  std::unique_ptr<GraphedStep> graphed;  // --cuda-graphs
  std::unique_ptr<Checkpointer> checkpoints;
  Resumption resumption;  // what the start-up continues (Checkpointer::resume)

  TestHooks test_hooks;  // CIFAR_MPI_TEST_SAMPLE_TRACE, CIFAR_FAULT_INJECT
};

class RunSetup : public StartupWalk {
 public:
  // Fills `parts`, which outlives the walk. `config` is the run's: the
  // device stage sets its length for the precision it resolves
  // (trained_length), before the plan and the checkpoints read it.
  RunSetup(const MpiEnvironment& env, RunConfig& config, RunParts& parts);

  void configuration() override;
  std::vector<NodeFailure> node_launch() override;
  void device() override;
  void outputs() override;
  void data() override;
  void model() override;
  std::vector<NodeFailure> node_resources() override;
  void communication() override;
  void resume() override;

 private:
  const MpiEnvironment& env_;
  RunConfig& config_;
  const World& world_;
  RunParts& parts_;
};

}  // namespace cifar
