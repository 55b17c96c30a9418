// Start-up checks shared by the Trainer and --check-env (see startup_checks.hpp).
#include "train/preflight.hpp"

#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cstdlib>

#include "checkpoint/checkpointer.hpp"
#include "gpu/cuda_runtime.hpp"
#include "gpu/cuda_stack.hpp"
#include "outputs/checkpoint_files.hpp"
#include "placement/topology_probe.hpp"
#include "placement/visible_devices.hpp"
#include "step/cuda_graph_step.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"

namespace cifar {

void check_device_settings(const RunConfig& config, const Placement& placement) {
  if (config.training.precision == Precision::Fp16 && !placement.device.is_cuda())
    throw ConfigError("--precision fp16 needs a GPU (--device cuda); CPUs train in fp32 or bf16");
  const std::string no_graphs = cuda_graphs_refusal(config, placement.device, placement.backend);
  if (!no_graphs.empty()) throw ConfigError(no_graphs);
}

RunPlan plan_for_data(const RunConfig& config, int64_t train_samples, int world_size) {
  if (train_samples < world_size) {
    throw ConfigError(
        strprintf("%s has %lld training samples but the job has %d ranks: every rank needs at least "
                  "one sample; use fewer ranks",
                  config.data.path.c_str(), static_cast<long long>(train_samples), world_size));
  }
  return make_run_plan(train_samples, world_size, config.training, config.data.drop_last, config.optim.warmup_epochs);
}

namespace {

// `path`, or the nearest folder above it that exists (a folder not made yet).
std::string existing_folder(std::string path) {
  struct stat st {};
  path = paths::absolute(path);
  while (stat(path.c_str(), &st) != 0 && path != "/" && !path.empty()) path = paths::parent(path);
  return path;
}

// Bytes free to an unprivileged user on the file system holding
// existing_folder(path); -1 when it cannot be read.
int64_t free_bytes(const std::string& path, dev_t* device = nullptr) {
  const std::string folder = existing_folder(path);
  struct statvfs fs {};
  struct stat st {};
  if (statvfs(folder.c_str(), &fs) != 0 || stat(folder.c_str(), &st) != 0) return -1;
  if (device) *device = st.st_dev;
  return static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
}

// Whether `path` lies on a file system of this node alone, not one shared
// over the network (NFS, SMB, Lustre, GPFS, BeeGFS, CephFS, AFS, 9p, FUSE).
bool node_local(const std::string& path) {
  struct statfs fs {};
  if (statfs(path.c_str(), &fs) != 0) return false;
  static const std::vector<int64_t> shared = {0x6969,     0x517B,     0xFF534D42, 0xFE534D42, 0x0BD00BD0, 0x47504653,
                                              0x19830326, 0x00C36400, 0x5346414F, 0x01021997, 0x65735546, 0xAAD7AAEA};
  return std::find(shared.begin(), shared.end(), static_cast<int64_t>(fs.f_type)) == shared.end();
}

int64_t state_bytes(Model& model) {
  int64_t bytes = 0;
  for (const auto& entry : state_entries(model)) bytes += static_cast<int64_t>(entry.second.nbytes());
  return bytes;
}

// Whether a driver answers and runs this build's CUDA (gpu/cuda_stack.hpp).
bool driver_runs_this_build() {
  const gpu::CudaStack stack = gpu::cuda_stack();
  return stack.driver > 0 && gpu::check_cuda_stack(stack, true).ok;
}

}  // namespace

std::string cpu_fallback_note(const RunConfig& config, const Placement& placement) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (config.runtime.device != DeviceRequest::Auto || placement.device.is_cuda() || !visible) return "";
  std::string why;
  if (gpu::compiled()) gpu::device_count(&why);
  return std::string("--device auto: no usable GPU here (CUDA_VISIBLE_DEVICES=") + visible +
         (why.empty() ? "" : "; " + why) + "): training on the CPU";
}

std::vector<NodeFailure> probe_node_launch(const RunConfig& config, const World& world) {
  NodeFacts f;
  f.host = world.node_name;
  f.world_size = world.size;
  f.local_size = world.local_size;
  f.srun_direct = detect_launcher() == Launcher::Srun;
  const int tasks = env_count("SLURM_STEP_NUM_TASKS");
  f.launcher_tasks = tasks > 0 ? tasks : env_count("SLURM_NTASKS");
  if (f.launcher_tasks == 0) f.launcher_tasks = -1;  // not under srun: the check is skipped
  const bool cuda_requested = config.runtime.device == DeviceRequest::Cuda && gpu::compiled();
  const bool driver_runs_build = cuda_requested && driver_runs_this_build();
  f.granted_gpus = gpus_held_to(cuda_requested, driver_runs_build, std::getenv("CUDA_VISIBLE_DEVICES"));
  if (f.granted_gpus > 0) f.usable_gpus = gpu::device_count();
  return check_node(f);
}

int64_t checkpoint_bytes_estimate(const RunConfig& config, int64_t model_state_bytes) {
  const int64_t optimizer_slots = config.optim.optimizer == "adam" ? 2 : 1;
  const int64_t lookahead = config.optim.lookahead_every > 0 ? 1 : 0;
  return model_state_bytes * (1 + optimizer_slots + lookahead) + (64 << 10);
}

std::vector<NodeFailure> probe_node_resources(const RunConfig& config, const World& world, const Placement& placement,
                                              Model& model, const RunPlan& plan) {
  NodeFacts f;
  f.host = world.node_name;
  f.world_size = world.size;
  f.local_size = world.local_size;
  if (world.rank == 0 && config.checkpoint.enabled()) {  // rank 0 writes every checkpoint and the model file
    const int64_t model_bytes = state_bytes(model);
    dev_t checkpoint_device = 0, model_device = 1;
    f.checkpoint_dir = config.checkpoint.dir;
    f.checkpoint_free = free_bytes(config.checkpoint.dir, &checkpoint_device);
    f.checkpoint_bytes = checkpoint_bytes_estimate(config, model_bytes);
    f.keep = config.checkpoint.keep;
    f.max_writes = checkpoint_writes(config.checkpoint, plan);
    f.existing_checkpoints = static_cast<int>(list_checkpoints(config.checkpoint.dir).size());
    f.checkpoint_local = f.checkpoint_free >= 0 && node_local(existing_folder(config.checkpoint.dir));
    if (free_bytes(paths::parent(paths::absolute(config.output.model)), &model_device) >= 0 &&
        model_device == checkpoint_device)
      f.model_file_bytes = model_bytes;
  }
  if (placement.backend == "nccl" && world.local_size > 1) {
    f.nccl_shares_node = true;
    struct stat st {};
    f.shm_free = stat("/dev/shm", &st) == 0 ? free_bytes("/dev/shm") : 0;  // none at all: NCCL cannot run either
  }
  return check_node(f);
}

}  // namespace cifar
