// Trainer: the C++ counterpart of the PyTorch DDP recipe's worker(). Built once
// from the configuration and the MPI world — every check, placement and
// allocation happens in the constructor, before the first step — then
// train() runs the plan:
//
//   train()          epochs until the plan is done (or a preemption signal)
//     train_epoch()  one pass over this rank's shard: train_step() per batch,
//                    a checkpoint decision at every optimiser-step boundary
//       train_step() forward, backward (gradient buckets all-reduce while
//                    backward runs), and at the end of an optimiser step the
//                    wait for the averaged gradients and the update; with
//                    --cuda-graphs all of it as one graph replay per full batch
//     end_epoch()    loss over all ranks, evaluation (and the --target-accuracy
//                    stop), metrics, checkpoint
//   then the model file and the RESULT line.
//
// Progress lines, the step profile, metrics, TensorBoard scalars and
// checkpoints are attached at those points only.
#pragma once

#include <torch/torch.h>

#include <array>
#include <chrono>
#include <memory>
#include <optional>

#include "checkpoint/checkpoint.hpp"
#include "comm/backends.hpp"
#include "comm/communicator.hpp"
#include "comm/gradient_reducer.hpp"
#include "config/run_config.hpp"
#include "data/batch_loader.hpp"
#include "data/dataset.hpp"
#include "data/epoch_shard.hpp"
#include "eval/evaluation.hpp"
#include "model/model.hpp"
#include "mpi/mpi_env.hpp"
#include "optim/lookahead.hpp"
#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"
#include "outputs/run_outputs.hpp"
#include "process/fault_injection.hpp"
#include "process/threads.hpp"
#include "report/metrics.hpp"
#include "report/profile.hpp"
#include "report/progress.hpp"
#include "report/run_summary.hpp"
#include "report/tensorboard.hpp"
#include "step/cuda_graph_step.hpp"
#include "step/divergence.hpp"
#include "step/precision.hpp"
#include "step/run_plan.hpp"
#include "step/sample_trace.hpp"

namespace cifar {

class Trainer {
 public:
  // Collective. Start-up failures (configuration, the CUDA stack, placement,
  // data, outputs, a checkpoint that does not fit) stop every rank with one
  // message. A failure of this rank alone, here or in train(), ends the job
  // before anything is torn down (mpi/mpi_main.hpp's end_job_on_failure),
  // with the epoch and step it happened at.
  Trainer(const MpiEnvironment& env, const RunConfig& config);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Collective. Returns kExitOk (also for a run whose checkpoint is already
  // its end: it says so and trains nothing), or kExitPreempted after a
  // checkpoint on SIGTERM/SIGUSR1. A diverged run (--on-nonfinite stop)
  // ends every rank with exit code 5 (AgreedFailure).
  int train();

 private:
  using Clock = std::chrono::steady_clock;

  // The epoch in progress.
  struct EpochState {
    int epoch = 0;
    Clock::time_point start;
    torch::Tensor loss_sum;  // float64 [sum of losses * batch size, samples] on the device
    int64_t images = 0;      // trained by this rank
    bool counted = false;    // its time and images are in the run's totals (end_epoch)
  };

  // Set-up, in the constructor's order.
  void set_up(const MpiEnvironment& env);
  void check_placement_and_outputs(const MpiEnvironment& env);
  void load_data(const MpiEnvironment& env);
  void build_model();
  void build_communication(const MpiEnvironment& env);
  void resume();
  void plan_schedule();
  void open_tensorboard();
  void announce() const;
  // The whole run: its outputs, totals and closing lines (run_totals.cpp).
  void check_output_ownership();
  void adopt_resumed_totals();
  RunTotals run_totals() const;
  bool already_finished() const;
  int report_already_finished() const;
  void report_unreached_target() const;

  // The run.
  int run();
  std::string where() const;  // "in epoch 2 at optimiser step 57", for a failure's report
  // What a rank that fails alone gives up before the job ends: rank 0's
  // output locks, and the folders it made while they are still empty
  // (RunOutputs), so that a run refused at its start leaves none.
  void let_go_of_outputs() { outputs_.reset(); }
  bool train_epoch();  // false when preempted (the checkpoint is written)
  torch::Tensor train_step(const Batch& batch, bool ends_step);
  torch::Tensor forward_loss(const Batch& batch);
  void apply_update();
  torch::Tensor graphed_step(const Batch& batch);  // --cuda-graphs
  void finish_step();
  void record_batch(const torch::Tensor& loss, int64_t batch_size);
  void end_epoch();
  bool evaluate_if_due(bool run_ends);
  void check_target(EpochMetrics& row);
  void report_epoch(const EpochMetrics& row);
  EpochMetrics epoch_metrics(double epoch_seconds, bool evaluated) const;
  void save_outputs();

  // The data path of the epoch at position_ (data/epoch_shard.hpp): its
  // samples, micro-batches and loader, resumed or elastic.
  EpochShard epoch_shard() const;

  const RunConfig& config_;
  const World& world_;
  std::optional<RunOutputs> outputs_;  // rank 0: checked and locked outputs
  Placement placement_;
  ThreadCounts threads_;  // the pools' sizes and why (announce logs them)
  torch::MemoryFormat format_ = torch::MemoryFormat::Contiguous;
  Dataset data_;
  LoaderOptions loader_options_;  // the run's part (data/epoch_shard.hpp); each epoch's shard adds its own
  RunPlan plan_;
  ScheduleOptions schedule_;
  std::shared_ptr<Model> model_;
  std::vector<torch::Tensor> parameters_;
  std::unique_ptr<Communicator> control_;  // host MPI: agreement, preemption and checkpoint decisions
  std::unique_ptr<Communicator> comm_;     // the placement's backend: gradients, evaluation, loss sums
  std::unique_ptr<GradientReducer> reducer_;
  std::unique_ptr<GraphedStep> graphed_;  // --cuda-graphs
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<Lookahead> lookahead_;
  LossScaler scaler_;
  DivergenceGuard guard_;
  std::unique_ptr<Checkpointer> checkpoints_;
  Resumption resumption_;                // what the start-up continues (Checkpointer::resume)
  bool continue_resumed_epoch_ = false;  // the first epoch starts from the resumed epoch's loss sums
  StepProfile profile_;
  std::unique_ptr<ProgressReporter> progress_;
  MetricsLog metrics_;
  std::unique_ptr<TensorBoardLog> tensorboard_;  // rank 0, with --tensorboard

  TrainingPosition position_;           // epoch, batches done in it, optimiser steps done (and the epoch's order)
  std::unique_ptr<SampleTrace> trace_;  // test-only (CIFAR_MPI_TEST_SAMPLE_TRACE)
  FaultInjector faults_;                // test-only (CIFAR_FAULT_INJECT)
  bool started_ = false;                // set-up done: where() names the step
  EpochState epoch_;
  Evaluation last_eval_;  // its accuracy -1 until the run's first evaluation (RESULT: "none")
  RunSummary summary_;    // time, images and a --target-accuracy over all the run's segments
  Clock::time_point setup_start_, run_start_;
  double prepare_seconds_ = 0;  // build_model(): the untrained model, its whitening, the optimiser
};

}  // namespace cifar
