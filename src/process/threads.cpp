// Thread-count policy (see threads.hpp).
#include "process/threads.hpp"

#include <dlfcn.h>
#include <sched.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "util/memory.hpp"

namespace cifar {

int automatic_thread_count(const World& world) {
  cpu_set_t set;
  CPU_ZERO(&set);
  int bound = static_cast<int>(std::thread::hardware_concurrency());
  if (sched_getaffinity(0, sizeof(set), &set) == 0) bound = CPU_COUNT(&set);
  const int hardware = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  // Bound to (almost) every core: the launcher did not bind, so the node's
  // ranks share all cores. Otherwise the binding already separates them.
  const int share = bound >= hardware ? std::max(1, hardware / std::max(1, world.local_size)) : bound;
  return std::max(1, share);
}

int intra_op_thread_count(int option, const World& world) {
  return option > 0 ? option : automatic_thread_count(world);
}

int recipe_blas_thread_count() {
  // OpenBLAS's rule (blas_get_cpu_number): the first of these set to a
  // positive number, at most the CPU count, else the CPU count; the CPU count
  // is the configured CPUs limited by the process's binding, and the recipe's
  // processes are not bound.
  const int cpus = std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_CONF)));
  for (const char* name : {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"}) {
    const char* value = std::getenv(name);
    const int n = value ? std::atoi(value) : 0;
    if (n > 0) return std::min(n, cpus);
  }
  return cpus;
}

int blas_thread_count(int option, int intra_op_threads) {
  if (option > 0) return option;
  return option == -1 ? recipe_blas_thread_count() : intra_op_threads;
}

void apply_thread_count(int threads, int blas_threads) {
  at::set_num_threads(threads);
  // OpenBLAS keeps its own pool, sized from the environment and the
  // process's CPU binding when it is loaded; resize it when it is the BLAS
  // this process uses.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(blas_threads);
}

void configure_process(const RuntimeConfig& runtime, const World& world, bool cuda) {
  const int threads = intra_op_thread_count(runtime.threads, world);
  apply_thread_count(threads, blas_thread_count(runtime.blas_threads, threads));
  if (runtime.retain_memory) retain_freed_memory();
  if (cuda) {
    // Autotuning picks the fastest kernels, which may differ from run to run
    // and sum in a different order; --deterministic trades it for repeatability.
    at::globalContext().setBenchmarkCuDNN(!runtime.deterministic);
    at::globalContext().setDeterministicCuDNN(runtime.deterministic);
  }
}

}  // namespace cifar
