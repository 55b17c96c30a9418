// World discovery: ranks are grouped into nodes by host, local ranks cover
// 0..local_size-1 on each node, and every node is one distinct host. The
// expected number of nodes comes from CIFAR_EXPECT_NODES (default 1: ctest's
// one-host runs); the multinode tests set it when they run this binary across
// simulated hosts with an equal number of consecutive ranks per host.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "mpi/world.hpp"
#include "support/mpi_test_env.hpp"

namespace cifar {
namespace {

int expected_nodes() {
  const char* v = std::getenv("CIFAR_EXPECT_NODES");
  return v ? std::atoi(v) : 1;
}

// Every rank's host name, in rank order.
std::vector<std::string> all_hosts(const World& w) {
  char mine[MPI_MAX_PROCESSOR_NAME] = {0};
  w.host.copy(mine, sizeof(mine) - 1);
  std::vector<char> all(static_cast<size_t>(w.size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                test::env().comm());
  std::vector<std::string> hosts;
  for (int r = 0; r < w.size; ++r) hosts.emplace_back(&all[static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
  return hosts;
}

TEST(World, LocalRanksPerHost) {
  const World w = discover_world(test::env().comm());
  int size = 0;
  MPI_Comm_size(test::env().comm(), &size);
  const int nodes = expected_nodes();
  ASSERT_GT(nodes, 0) << "CIFAR_EXPECT_NODES must be a positive number";
  ASSERT_EQ(size % nodes, 0) << "the test expects the same number of ranks on every host";
  const int per_node = size / nodes;
  EXPECT_EQ(w.size, size);
  EXPECT_EQ(w.num_nodes, nodes);
  EXPECT_EQ(w.local_size, per_node);
  // Ranks are placed host by host, so node and local order follow world order.
  EXPECT_EQ(w.node_index, w.rank / per_node);
  EXPECT_EQ(w.local_rank, w.rank % per_node);
  EXPECT_FALSE(w.host.empty());

  // Same node <=> same host name.
  const auto hosts = all_hosts(w);
  for (int r = 0; r < size; ++r) EXPECT_EQ(hosts[r] == w.host, r / per_node == w.node_index) << "rank " << r;
  EXPECT_EQ(std::set<std::string>(hosts.begin(), hosts.end()).size(), static_cast<size_t>(nodes));
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
