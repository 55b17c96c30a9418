// Thread-count policy (see threads.hpp).
#include "train/threads.hpp"

#include <dlfcn.h>
#include <sched.h>
#include <torch/torch.h>

#include <algorithm>
#include <thread>

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

void apply_thread_count(int threads) {
  at::set_num_threads(threads);
  // OpenBLAS keeps its own pool, sized from the environment at load time;
  // resize it when it is the BLAS this process uses.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(threads);
}

}  // namespace cifar
