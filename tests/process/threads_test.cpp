// Thread-count policy: the OpenBLAS pool is sized as the Python recipe's
// processes get it, because OpenBLAS's GEMM results depend on the pool size.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include "process/threads.hpp"
#include "support/scoped_env.hpp"

namespace cifar {
namespace {

using test::ScopedEnv;

int cpus() { return static_cast<int>(sysconf(_SC_NPROCESSORS_CONF)); }

TEST(RecipeBlasThreads, TheNodesCpusWithoutEnvironment) {
  ScopedEnv env(
      {{"OPENBLAS_NUM_THREADS", std::nullopt}, {"GOTO_NUM_THREADS", std::nullopt}, {"OMP_NUM_THREADS", std::nullopt}});
  EXPECT_EQ(recipe_blas_thread_count(), cpus());
}

TEST(RecipeBlasThreads, EnvironmentInOpenBlasOrderCappedByTheCpus) {
  {
    ScopedEnv env({{"OPENBLAS_NUM_THREADS", "1"}, {"GOTO_NUM_THREADS", "2"}, {"OMP_NUM_THREADS", "3"}});
    EXPECT_EQ(recipe_blas_thread_count(), 1);
  }
  {
    ScopedEnv env({{"OPENBLAS_NUM_THREADS", "0"}, {"GOTO_NUM_THREADS", std::nullopt}, {"OMP_NUM_THREADS", "1"}});
    EXPECT_EQ(recipe_blas_thread_count(), 1) << "0 counts as unset";
  }
  {
    ScopedEnv env({{"OPENBLAS_NUM_THREADS", std::nullopt}, {"GOTO_NUM_THREADS", "100000"}, {"OMP_NUM_THREADS", "1"}});
    EXPECT_EQ(recipe_blas_thread_count(), cpus()) << "OpenBLAS caps the count at the CPUs";
  }
}

TEST(BlasThreadCount, OptionOrRecipeOrTheIntraOpCount) {
  ScopedEnv env({{"OPENBLAS_NUM_THREADS", "1"}, {"GOTO_NUM_THREADS", std::nullopt}, {"OMP_NUM_THREADS", std::nullopt}});
  EXPECT_EQ(blas_thread_count(3, 2), 3);
  EXPECT_EQ(blas_thread_count(0, 2), 2) << "default: as many as the intra-op pool";
  EXPECT_EQ(blas_thread_count(-1, 2), 1) << "-1: the recipe's count, here $OPENBLAS_NUM_THREADS";
}

TEST(ApplyThreadCount, SizesTorchsAndOpenBlassPools) {
  using GetThreads = int (*)();
  auto openblas_threads = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (!openblas_threads) GTEST_SKIP() << "this process's BLAS is not OpenBLAS";
  apply_thread_count(1, 2);
  EXPECT_EQ(at::get_num_threads(), 1);
  EXPECT_EQ(openblas_threads(), 2) << "OpenBLAS's pool is set apart from the intra-op pool";
  apply_thread_count(1, 1);
  EXPECT_EQ(openblas_threads(), 1);
}

}  // namespace
}  // namespace cifar
