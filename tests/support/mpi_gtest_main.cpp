// main() for GoogleTest binaries that ctest runs under mpirun: MPI comes up
// through the program's own MpiEnvironment, failures on any rank fail the
// test (mpirun returns non-zero), and only rank 0 prints the summary.
#include <gtest/gtest.h>

#include "mpi/mpi_env.hpp"
#include "support/mpi_test_env.hpp"

namespace cifar::test {
MpiEnvironment* g_env = nullptr;
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  cifar::MpiEnvironment env(&argc, &argv);
  cifar::test::g_env = &env;
  if (env.world().rank != 0) {
    // Keep failure messages from every rank, drop the per-test chatter.
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int failed = RUN_ALL_TESTS();
  // A failure on any rank fails the whole run on every rank.
  int any = failed;
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, env.comm());
  return any;
}
