// Training's walk of the start-up sequence (see run_setup.hpp): each stage
// builds its parts of the run.
#include "train/run_setup.hpp"

#include <algorithm>
#include <chrono>

#include "comm/agreement.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/nccl_log.hpp"
#include "gpu/cuda_stack.hpp"
#include "model/speed94.hpp"
#include "optim/optimizer.hpp"
#include "outputs/owner_records.hpp"
#include "placement/numa_binding.hpp"
#include "train/preflight.hpp"
#include "util/deadline.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

std::chrono::milliseconds comm_timeout(const CommConfig& c) { return milliseconds_of(c.timeout_seconds); }

}  // namespace

RunParts::RunParts(const RunConfig& config)
    : scaler(false),  // the device stage sets it, from the precision the run resolved
      guard(config.training.on_nonfinite, true, torch::kCPU, lower_rate_advice(config.optim)),
      profile(config.runtime.profile, torch::kCPU) {}

RunSetup::RunSetup(const MpiEnvironment& env, RunConfig& config, RunParts& parts)
    : env_(env), config_(config), world_(env.world()), parts_(parts) {}

// Before the placement, which would only find no GPU on too old a driver.
// A stage of its own: the placement's first step is collective, and a rank
// that threw before it would leave the others waiting there.
void RunSetup::configuration() {
  gpu::require_usable_cuda_stack(config_.runtime.device != DeviceRequest::Cpu);
  parts_.test_hooks = TestHooks(world_.rank);
}

std::vector<NodeFailure> RunSetup::node_launch() { return probe_node_launch(config_, world_); }

void RunSetup::device() {
  parts_.placement = place_rank(env_.comm(), world_, config_.comm.backend, config_.runtime.device);
  bind_near_gpu(world_, parts_.placement.node_gpus, config_.runtime.bind_numa);  // before the data stage sizes threads
  const Placement& p = parts_.placement;
  check_device_settings(config_, p);
  parts_.precision = resolve_precision(config_.training.precision, p.device);
  config_.training = trained_length(config_.training, parts_.precision.precision);
  parts_.scaler = LossScaler(parts_.precision.precision == Precision::Fp16);  // never for auto's choice
  parts_.profile = StepProfile(config_.runtime.profile, p.device);
  // Reading the verdict every step would synchronise a GPU; on the CPU it is free.
  parts_.guard =
      DivergenceGuard(config_.training.on_nonfinite, !p.device.is_cuda(), p.device, lower_rate_advice(config_.optim));
}

// Placement and outputs are decided before any data is read.
void RunSetup::outputs() {
  if (world_.rank != 0) return;
  parts_.outputs.emplace(config_);
  if (const std::string note = cpu_fallback_note(config_, parts_.placement); !note.empty()) log::info(note);
}

// Every rank reads and validates the data; any failure stops all.
void RunSetup::data() {
  parts_.threads = configure_process(config_.runtime, world_, parts_.placement.device.is_cuda());
  parts_.data = load_dataset(config_.data, SplitRequest{true, config_.training.eval});
  parts_.plan = plan_for_data(config_, parts_.data.train.info.count, world_.size);
  place_dataset(parts_.data, config_.data, parts_.placement.device);
  parts_.progress =
      std::make_unique<ProgressReporter>(parts_.plan, world_.size, config_.output.log_every, world_.rank == 0);
}

// The same seed on every rank gives the same initial weights; the reducer
// broadcasts rank 0's anyway and checks every rank's shapes.
void RunSetup::model() {
  const auto start = std::chrono::steady_clock::now();
  RunParts& p = parts_;
  torch::manual_seed(static_cast<uint64_t>(config_.training.seed));
  p.model = make_model(config_.model.name);
  choose_head(*p.model, config_.model.head);
  if (const int64_t n = std::min(p.model->initialization_images(), p.data.train.size()); n > 0) {
    p.model->initialize_from_data(normalize_batch(p.data.train.images.narrow(0, 0, n).cpu(), p.data.normalization));
  }
  p.model->to(p.placement.device);
  if (config_.model.channels_last) {
    p.format = torch::MemoryFormat::ChannelsLast;  // weights here, batches in the loader
    set_memory_format(*p.model, p.format);
  }
  p.loader_options = loader_options(config_.data, p.placement.device, p.data.normalization,
                                    static_cast<uint64_t>(config_.training.seed), p.format);
  const std::vector<ParameterGroup> groups = p.model->parameter_groups();
  p.parameters = trainable_parameters(groups);
  p.optimizer = make_optimizer(config_, groups);
  const LookaheadOptions lookahead{config_.optim.lookahead_every, config_.optim.lookahead_decay,
                                   config_.optim.lookahead_last_steps};
  p.lookahead = std::make_unique<Lookahead>(*p.model, lookahead, p.plan.total_steps);
  p.prepare_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<NodeFailure> RunSetup::node_resources() {
  return probe_node_resources(config_, world_, parts_.placement, *parts_.model, parts_.plan);
}

void RunSetup::communication() {
  RunParts& p = parts_;
  p.control = std::make_unique<MpiCommunicator>(env_.comm(), comm_timeout(config_.comm));
  // Multi-node NCCL: the network NCCL chose, from its own log of the set-up
  // (the same decision on every rank, so all reach the agreement; a rank
  // that captured nothing finds no network and passes).
  const bool check_network = p.placement.backend == "nccl" && world_.num_nodes > 1;
  NcclLogCapture nccl_log(check_network);
  p.comm = make_communicator(env_.comm(), p.placement, comm_timeout(config_.comm));
  if (check_network) {
    const std::string network = nccl_network_from_log(nccl_log.finish());
    agree_on_node_checks(env_.comm(), world_.node_name, [&] {
      return check_nccl_network(world_.node_name, network, config_.comm.allow_socket_network);
    });
  }
  const BucketOptions buckets{static_cast<size_t>(config_.comm.first_bucket_mb * (1 << 20)),
                              static_cast<size_t>(config_.comm.bucket_mb * (1 << 20))};
  p.reducer = std::make_unique<GradientReducer>(p.parameters, untrained_state(*p.model), *p.comm, buckets);
  p.optimizer->distribute(*p.comm);
  const TrainState state{*p.model,          p.optimizer->torch_optimizer(),
                         p.scaler,          p.placement.device,
                         p.lookahead.get(), &p.guard.skipped() /* a live count */};
  if (config_.runtime.cuda_graphs) p.graphed = std::make_unique<GraphedStep>(p.placement.device, *p.control, *p.comm);
  p.checkpoints =
      std::make_unique<Checkpointer>(config_, p.data.train.size(), p.data.identity, state, p.guard, *p.control);
}

// The checkpoint layer decides what the run continues (checkpointer.hpp);
// the plan, the schedule and the lookahead follow it. Outputs that are
// another run's are refused on rank 0, naming the owner, before anything is
// written: every rank stops alike.
void RunSetup::resume() {
  RunParts& p = parts_;
  p.resumption = p.checkpoints->resume(p.plan);
  const Resumption& r = p.resumption;
  agree_on(*p.control, [&] {
    if (world_.rank == 0) check_output_owners(config_, r.run_id, r.run_folder);
  });
  p.plan = r.plan;
  p.lookahead->set_total_steps(p.plan.total_steps);
  if (r.resumed()) p.guard.restore_skipped(r.skipped_steps);
  // When the plan's length is final: --lr (scaled after an --elastic-batch
  // per-rank resume) over the run's optimiser steps.
  p.schedule =
      make_schedule(config_.optim, r.lr_scale, p.plan.total_steps, p.plan.warmup_steps, p.plan.steps_per_epoch);
  p.optimizer->set_total_steps(p.schedule.shape_steps());
}

}  // namespace cifar
