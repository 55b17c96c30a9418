// World discovery: every rank of a one-host job is on node 0 with a distinct
// local rank, and the local ranks cover 0..local_size-1.
#include <gtest/gtest.h>

#include "dist/world.hpp"
#include "support/mpi_test_env.hpp"

namespace cifar {
namespace {

TEST(World, LocalRanksOnOneHost) {
  const World w = discover_world(test::env().comm());
  int size = 0;
  MPI_Comm_size(test::env().comm(), &size);
  EXPECT_EQ(w.size, size);
  EXPECT_EQ(w.num_nodes, 1);
  EXPECT_EQ(w.node_index, 0);
  EXPECT_EQ(w.local_size, size);
  EXPECT_EQ(w.local_rank, w.rank);  // one node: local order follows world order
  EXPECT_FALSE(w.host.empty());
}

TEST(World, MatchesEnvironment) {
  const World& w = test::env().world();
  const World again = discover_world(test::env().comm());
  EXPECT_EQ(w.rank, again.rank);
  EXPECT_EQ(w.local_rank, again.local_rank);
  EXPECT_EQ(w.num_nodes, again.num_nodes);
}

}  // namespace
}  // namespace cifar
