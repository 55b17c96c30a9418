// Thread-count policy (see threads.hpp).
#include "process/threads.hpp"

#include <dlfcn.h>
#include <sched.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

#include "util/log.hpp"
#include "util/memory.hpp"

namespace cifar {

namespace {

// The variables that OpenMP and OpenBLAS read for their pool sizes.
constexpr const char* kThreadVariables[] = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS"};

int bound_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::thread::hardware_concurrency());
}

int online_cpu_count() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

// What OpenBLAS counts when it sizes its pool: the configured CPUs.
int configured_cpu_count() { return std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_CONF))); }

// The intra-op count and why: the option, or the node's share.
std::pair<int, std::string> decide_intra_op(const ThreadInputs& in) {
  if (in.threads_option > 0) return {in.threads_option, strprintf("--threads %d", in.threads_option)};
  const int ranks = std::max(1, in.local_ranks);
  // Bound to (almost) every core: the launcher did not bind, so the node's
  // ranks share all cores. Otherwise the binding already separates them.
  if (in.bound_cpus >= in.online_cpus) {
    return {std::max(1, in.online_cpus / ranks),
            strprintf("automatic: the node's %d CPUs / %d rank(s) on it", in.online_cpus, ranks)};
  }
  return {std::max(1, in.bound_cpus), strprintf("automatic: the %d CPU(s) this rank is bound to", in.bound_cpus)};
}

// The OpenBLAS count and why: the option, the PyTorch DDP recipe's count, or the intra-op count.
std::pair<int, std::string> decide_blas(const ThreadInputs& in, int intra_op) {
  if (in.blas_threads_option > 0) {
    return {in.blas_threads_option, strprintf("--blas-threads %d", in.blas_threads_option)};
  }
  if (in.blas_threads_option == -1) {
    return {in.configured_cpus,
            strprintf("--blas-threads -1: the node's %d CPUs, as the recipe's processes", in.configured_cpus)};
  }
  return {intra_op, "as intra-op"};
}

}  // namespace

ThreadCounts decide_thread_counts(const ThreadInputs& in) {
  ThreadCounts counts;
  std::tie(counts.intra_op, counts.intra_op_source) = decide_intra_op(in);
  std::tie(counts.blas, counts.blas_source) = decide_blas(in, counts.intra_op);
  counts.unused_environment = in.thread_environment;
  return counts;
}

ThreadInputs probe_thread_inputs(const RuntimeConfig& runtime, const World& world) {
  ThreadInputs in;
  in.threads_option = runtime.threads;
  in.blas_threads_option = runtime.blas_threads;
  in.bound_cpus = bound_cpu_count();
  in.online_cpus = online_cpu_count();
  in.configured_cpus = configured_cpu_count();
  in.local_ranks = world.local_size;
  for (const char* name : kThreadVariables) {
    if (const char* value = std::getenv(name)) in.thread_environment.push_back(std::string(name) + "=" + value);
  }
  return in;
}

std::string describe_thread_counts(const ThreadCounts& counts) {
  std::string line = strprintf("intra-op %d (%s), OpenBLAS %d (%s)", counts.intra_op, counts.intra_op_source.c_str(),
                               counts.blas, counts.blas_source.c_str());
  if (counts.unused_environment.empty()) return line;
  line += "; not used:";
  for (const auto& variable : counts.unused_environment) line += " " + variable;
  return line + " (--threads and --blas-threads set the counts)";
}

int automatic_thread_count(const World& world) {
  return decide_thread_counts(probe_thread_inputs(RuntimeConfig{}, world)).intra_op;
}

void apply_thread_count(int threads, int blas_threads) {
  at::set_num_threads(threads);
  // OpenBLAS keeps its own pool, sized from the environment and the
  // process's CPU binding when it is loaded; resize it when it is the BLAS
  // this process uses.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(blas_threads);
}

ThreadCounts configure_process(const RuntimeConfig& runtime, const World& world, bool cuda) {
  const ThreadCounts counts = decide_thread_counts(probe_thread_inputs(runtime, world));
  apply_thread_count(counts.intra_op, counts.blas);
  if (runtime.retain_memory) retain_freed_memory();
  if (cuda) {
    // Autotuning picks the fastest kernels, which may differ from run to run
    // and sum in a different order; --deterministic trades it for repeatability.
    at::globalContext().setBenchmarkCuDNN(!runtime.deterministic);
    at::globalContext().setDeterministicCuDNN(runtime.deterministic);
  }
  return counts;
}

}  // namespace cifar
