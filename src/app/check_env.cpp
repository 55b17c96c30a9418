// Environment report: placements per rank, library versions, thread settings,
// and the placement checks' warnings (placement/placement_rules.hpp).
#include "app/check_env.hpp"

#include <H5public.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <sstream>

#include <boost/algorithm/string/join.hpp>

#include "app/stack_report.hpp"
#include "checkpoint/checkpointer.hpp"
#include "comm/agreement.hpp"
#include "comm/backends.hpp"
#include "comm/text_collectives.hpp"
#include "data/dataset.hpp"
#include "gpu/cuda_runtime.hpp"
#include "gpu/cuda_stack.hpp"
#include "gpu/torch_stream.hpp"
#include "model/model.hpp"
#include "outputs/run_outputs.hpp"
#include "placement/node_checks.hpp"
#include "placement/numa_binding.hpp"
#include "placement/placement_rules.hpp"
#include "placement/topology_probe.hpp"
#include "process/startup_deadline.hpp"
#include "process/threads.hpp"
#include "step/precision_choice.hpp"
#include "train/preflight.hpp"
#include "train/startup.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"

namespace cifar {

namespace {

// The BLAS actually mapped into the process (Debian picks it through alternatives).
std::string loaded_blas(const std::vector<std::string>& mapped) {
  for (const auto& path : mapped) {
    if (path.find("libblas") != std::string::npos || path.find("openblas") != std::string::npos ||
        path.find("libmkl") != std::string::npos) {
      return paths::resolved(path);
    }
  }
  return "none mapped";
}

std::string mpi_library() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string v(version, static_cast<size_t>(len));
  const auto nl = v.find_first_of("\n,");
  return nl == std::string::npos ? v : v.substr(0, nl);
}

std::string thread_level() {
  int provided = 0;
  MPI_Query_thread(&provided);
  return provided == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE" : "below MPI_THREAD_MULTIPLE";
}

void print_versions(const World& w, const ThreadCounts& threads, const PrecisionChoice& precision,
                    const TrainingConfig& training) {
  unsigned h5_major = 0, h5_minor = 0, h5_release = 0;
  H5get_libversion(&h5_major, &h5_minor, &h5_release);
  const std::string gpus = boost::algorithm::join(gpu::device_names(), "; ");
  std::string why_no_gpu;
  const int gpu_count = gpu::device_count(&why_no_gpu);
  log::info("versions and settings:");
  log::info("  MPI:         " + mpi_library() + ", thread level " + thread_level() +
            strprintf(", %d rank(s) on %d node(s)", w.size, w.num_nodes));
  for (const auto& line : cuda_stack_lines()) log::info("  " + line);
  log::info(strprintf("  GPUs:        %d visible%s", gpu_count,
                      gpu_count ? (" (" + gpus + ")").c_str() : (" (" + why_no_gpu + ")").c_str()));
  log::info(std::string("  LibTorch:    ") + TORCH_VERSION + (torch_built_with_cuda() ? " with CUDA" : " (CPU only)"));
  log::info(strprintf("  HDF5:        %u.%u.%u", h5_major, h5_minor, h5_release));
  log::info("  BLAS:        " + loaded_blas(paths::mapped_files()));
  // What training would apply on this rank (rank 0), from the options and the node.
  log::info("  threads:     " + describe_thread_counts(threads));
  log::info("  precision:   " + precision.text());
  if (const std::string note = trained_length_note(training, precision.precision); !note.empty())
    log::info("               " + note);
}

// Rank 0: judges every rank's topology, prints each warning with its fix, and
// returns their number.
int report_placement(const std::vector<RankTopology>& ranks) {
  const auto warnings = check_placement(ranks);
  for (const auto& warning : warnings) log::info("placement warning: " + warning.text());
  log::info(warnings.empty() ? std::string("placement: no problems found")
                             : strprintf("placement: %zu warning(s)", warnings.size()));
  return static_cast<int>(warnings.size());
}

// --check-env's walk of the start-up sequence (train/startup.hpp): each
// stage checks through the functions and agreements training uses, so each
// fails with training's message and exit code, and claims nothing: the
// outputs are checked without creating anything, the data file is opened as
// training opens it (checksum and schema) without reading the splits'
// images, no communicator is built, and the outputs' owner is judged against
// the run id the run would adopt. The placement comes from the table above.
class EnvCheck : public StartupWalk {
 public:
  EnvCheck(const MpiEnvironment& env, const RunConfig& config, const Placement& placement)
      : config_(config), world_(env.world()), placement_(placement) {}

  // The CUDA stack as training judges it, whatever the placement found (too
  // old a driver shows there only as no GPU).
  void configuration() override { gpu::require_usable_cuda_stack(config_.runtime.device != DeviceRequest::Cpu); }
  std::vector<NodeFailure> node_launch() override { return probe_node_launch(config_, world_); }
  void device() override { check_device_settings(config_, placement_); }
  void outputs() override {
    if (world_.rank == 0) RunOutputs(config_, OutputUse::Check);
  }
  void data() override {
    const Dataset data = load_dataset(config_.data, SplitRequest{false, false});
    plan_ = plan_for_data(config_, data.train.info.count, world_.size);
    train_count_ = data.train.info.count;
    data_identity_ = data.identity;
  }
  void model() override { model_ = make_model(config_.model.name); }
  std::vector<NodeFailure> node_resources() override {
    return probe_node_resources(config_, world_, placement_, *model_, plan_);
  }
  // Outputs that are another run's: refused against the id the run would adopt.
  void resume() override {
    if (world_.rank != 0) return;
    const RunDefinition run = define_run(config_, world_.size, train_count_, data_identity_);
    check_output_owners(config_, startup_run_id(config_.checkpoint, run),
                        config_.checkpoint.enabled() ? config_.checkpoint.dir : "");
  }

 private:
  const RunConfig& config_;
  const World& world_;
  const Placement& placement_;
  RunPlan plan_;
  int64_t train_count_ = 0;
  std::string data_identity_;
  std::shared_ptr<Model> model_;
};

}  // namespace

int run_check_env(const MpiEnvironment& env, const RunConfig& config) {
  const World& w = env.world();
  std::string device_text, problem;
  int problem_code = kExitOk;  // the run's exit code for the same problem
  int gpu = -1;
  Placement placement;
  const Machine machine = probe_machine(env.comm());
  try {
    placement = choose_placement(w, config.comm.backend, config.runtime.device, machine);
    const Placement& p = placement;
    device_text = p.device.str() + " backend=" + p.backend;
    if (p.device.is_cuda()) gpu = p.device.index();  // NOLINT(bugprone-signed-char-misuse): an int8 index, 0..n-1
  } catch (const Error& e) {
    device_text = "none";
    problem = e.what();
    problem_code = e.exit_code();
  }
  // What training would do: bind the rank near its GPU (--bind-numa), then
  // size its threads from that binding. Nothing is bound here.
  const NumaBinding binding = plan_numa_binding(w, placement.node_gpus, config.runtime.bind_numa);
  ThreadInputs thread_inputs = probe_thread_inputs(config.runtime, w);
  if (binding.binds()) thread_inputs.bound_cpus = static_cast<int>(binding.cpus.size());
  const ThreadCounts counts = decide_thread_counts(thread_inputs);
  // As training resolves it on this rank's device (the CPU where none was placed).
  const PrecisionChoice precision = resolve_precision(config.training.precision, placement.device);
  const int threads = counts.intra_op;
  RankTopology topology = probe_rank_topology(w, config.runtime.device, gpu, threads);
  const std::string line = strprintf(
      "host=%s rank=%d/%d node=%d/%d local_rank=%d/%d device=%s cores=%s threads=%d gpus=%d/%d%s", w.host.c_str(),
      w.rank, w.size, w.node_index, w.num_nodes, w.local_rank, w.local_size, device_text.c_str(),
      format_cpu_list(topology.bound_cpus).c_str(), threads, topology.visible_gpus, topology.node_gpus,
      gpu >= 0 ? strprintf(" gpu_numa=%d; training: %s", topology.gpu_numa, binding.text.c_str()).c_str() : "");
  // The placement rules judge the cores training would run on.
  if (binding.binds()) topology.bound_cpus = binding.cpus;
  const auto lines = gather_strings(env.comm(), line);
  const auto problems = gather_strings(env.comm(), problem);
  const auto topologies = gather_topologies(env.comm(), topology);
  int failures = problem.empty() ? 0 : 1;
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, env.comm()));
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &problem_code, 1, MPI_INT, MPI_MAX, env.comm()));
  int warnings = 0;
  if (w.rank == 0) {
    for (const auto& l : lines) log::info(l);
    print_versions(w, counts, precision, config.training);
    warnings = report_placement(topologies);
    for (int r = 0; r < w.size; ++r)
      if (!problems[r].empty()) log::info(strprintf("cannot train: rank %d: %s", r, problems[r].c_str()));
  }
  // Every rank returns the same code, so the launcher's is the program's.
  MPI_CHECK(MPI_Bcast(&warnings, 1, MPI_INT, 0, env.comm()));
  // The start-up stages as training walks them (without the failed-nodes
  // file); with a rank that cannot be placed, through the node launch only.
  EnvCheck check(env, config, placement);
  walk_startup(env.comm(), w.node_name, check, false, failures == 0 ? StartupStage::Resume : StartupStage::NodeLaunch);
  end_startup();
  if (failures == 0 && w.rank == 0)
    log::info("start-up stages checked: " + startup_stage_list() + " (communication: built by training only)");
  if (w.rank == 0)
    log::info(
        strprintf("start-up deadline: %.0f s per stage, MPI's start included (--startup-timeout); "
                  "collectives in training: %.0f s (--comm-timeout)",
                  config.comm.startup_timeout_seconds, config.comm.timeout_seconds));
  const bool strict_failure = config.strict && warnings > 0;
  if (w.rank == 0) {
    if (strict_failure) log::info(strprintf("--strict: %d placement warning(s) count as errors", warnings));
    if (failures == 0 && !strict_failure) log::info("ready to train");
  }
  if (failures > 0) return problem_code;  // as the run would exit: 2 for --device cuda without a GPU
  return strict_failure ? kExitFailure : kExitOk;
}

}  // namespace cifar
