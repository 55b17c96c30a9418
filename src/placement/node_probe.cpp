// The live node probes behind the node checks (see node_probe.hpp).
#include "placement/node_probe.hpp"

#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "gpu/cuda_runtime.hpp"
#include "gpu/cuda_stack.hpp"
#include "placement/topology_probe.hpp"
#include "placement/visible_devices.hpp"
#include "util/paths.hpp"

namespace cifar {
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

// Whether a driver answers and runs this build's CUDA (gpu/cuda_stack.hpp).
bool driver_runs_this_build() {
  const gpu::CudaStack stack = gpu::cuda_stack();
  return stack.driver > 0 && gpu::check_cuda_stack(stack, true).ok;
}

// The facts every probe starts from: this rank's node and the job's shape.
NodeFacts facts_of(const World& world) {
  NodeFacts f;
  f.host = world.node_name;
  f.world_size = world.size;
  f.local_size = world.local_size;
  return f;
}

}  // namespace

bool writes_checkpoints(const RunConfig& config, const World& world) {
  return world.rank == 0 && config.checkpoint.enabled();
}

NodeFacts probe_launch_facts(const RunConfig& config, const World& world) {
  NodeFacts f = facts_of(world);
  f.srun_direct = detect_launcher() == Launcher::Srun;
  const int tasks = env_count("SLURM_STEP_NUM_TASKS");
  f.launcher_tasks = tasks > 0 ? tasks : env_count("SLURM_NTASKS");
  if (f.launcher_tasks == 0) f.launcher_tasks = -1;  // not under srun: the check is skipped
  const bool cuda_requested = config.runtime.device == DeviceRequest::Cuda && gpu::compiled();
  const bool driver_runs_build = cuda_requested && driver_runs_this_build();
  f.granted_gpus = gpus_held_to(cuda_requested, driver_runs_build, std::getenv("CUDA_VISIBLE_DEVICES"));
  if (f.granted_gpus > 0) f.usable_gpus = gpu::device_count();
  return f;
}

NodeFacts probe_resource_facts(const RunConfig& config, const World& world, const std::string& backend,
                               const ResourceNeeds& needs) {
  NodeFacts f = facts_of(world);
  if (writes_checkpoints(config, world)) {
    dev_t checkpoint_device = 0, model_device = 1;
    f.checkpoint_dir = config.checkpoint.dir;
    f.checkpoint_free = free_bytes(config.checkpoint.dir, &checkpoint_device);
    f.checkpoint_bytes = needs.checkpoint_bytes;
    f.keep = config.checkpoint.keep;
    f.max_writes = needs.max_writes;
    f.existing_checkpoints = needs.existing_checkpoints;
    f.checkpoint_local = f.checkpoint_free >= 0 && node_local(existing_folder(config.checkpoint.dir));
    if (free_bytes(paths::parent(paths::absolute(config.output.model)), &model_device) >= 0 &&
        model_device == checkpoint_device)
      f.model_file_bytes = needs.model_state_bytes;
  }
  if (backend == "nccl" && world.local_size > 1) {
    f.nccl_shares_node = true;
    struct stat st {};
    f.shm_free = stat("/dev/shm", &st) == 0 ? free_bytes("/dev/shm") : 0;  // none at all: NCCL cannot run either
  }
  return f;
}

}  // namespace cifar
