// Trainer: the C++ counterpart of the PyTorch DDP recipe's worker(). Its
// constructor walks the start-up sequence (train/startup.hpp), which builds
// everything the run trains with (RunParts, train/run_setup.hpp) before the
// first step; then train() runs the plan:
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

#include <chrono>
#include <memory>

#include "config/run_config.hpp"
#include "data/batch_loader.hpp"
#include "data/epoch_shard.hpp"
#include "eval/evaluation.hpp"
#include "mpi/mpi_env.hpp"
#include "report/metrics.hpp"
#include "report/run_summary.hpp"
#include "report/tensorboard.hpp"
#include "train/run_setup.hpp"

namespace cifar {

class Trainer {
 public:
  // Collective. Start-up failures (configuration, the CUDA stack, placement,
  // data, outputs, a checkpoint that does not fit) stop every rank with one
  // message. A failure of this rank alone, here or in train(), ends the job
  // before anything is torn down (mpi/mpi_main.hpp's end_job_on_failure),
  // with the start-up stage, or the epoch and step, it happened at.
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

  // The whole run: its totals and closing lines (run_totals.cpp).
  void continue_resumed_run();
  void open_tensorboard();
  RunTotals run_totals() const;
  bool already_finished() const;
  int report_already_finished() const;
  void report_unreached_target() const;

  // The run.
  int run();
  void announce() const;
  std::string where() const;  // "in epoch 2 at optimiser step 57", for a failure's report
  // What a rank that fails alone gives up before the job ends: rank 0's
  // output locks, and the folders it made while they are still empty
  // (RunOutputs), so that a run refused at its start leaves none.
  void let_go_of_outputs() { run_.outputs.reset(); }
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

  // The run as configured, its length as trained (the start-up sets it for
  // the precision it resolves), and the world it runs in.
  RunConfig config_;
  const World& world_;

  // Everything it trains with, built by the start-up (run_setup.hpp).
  RunParts run_;

  // Where it is.
  TrainingPosition position_;  // epoch, batches done in it, optimiser steps done (and the epoch's order)
  EpochState epoch_;
  bool continue_resumed_epoch_ = false;  // the first epoch starts from the resumed epoch's loss sums

  // What it reports.
  Evaluation last_eval_;  // its accuracy -1 until the run's first evaluation (RESULT: "none")
  RunSummary summary_;    // time, images and a --target-accuracy over all the run's segments
  MetricsLog metrics_;
  std::unique_ptr<TensorBoardLog> tensorboard_;  // rank 0, with --tensorboard
  Clock::time_point setup_start_, run_start_;
};

}  // namespace cifar
