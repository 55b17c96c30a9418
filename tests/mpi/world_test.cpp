// World discovery: ranks are grouped into nodes by host, local ranks cover
// 0..local_size-1 on each node, and every node is one distinct host. The
// expected number of nodes comes from CIFAR_EXPECT_NODES (default 1: ctest's
// one-host runs); the multinode tests set it when they run this binary across
// simulated hosts with an equal number of ranks per host. The layout itself
// (node_layout) is checked on made-up jobs whose ranks are not in node order.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "mpi/world.hpp"
#include "support/mpi_test_env.hpp"
#include "util/error.hpp"

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

// One row: each rank's node, and the layout every rank must get.
struct LayoutRow {
  const char* name;
  std::vector<std::string> node_of_rank;
  std::vector<int> local_rank, local_size, node_index;
  int num_nodes;
};

TEST(NodeLayout, RanksInAnyOrder) {
  const std::vector<LayoutRow> rows = {
      {"node by node", {"A", "A", "B", "B"}, {0, 1, 0, 1}, {2, 2, 2, 2}, {0, 0, 1, 1}, 2},
      // Slurm's topology order: 6 ranks on 2 nodes as A B B A B A.
      {"interleaved", {"A", "B", "B", "A", "B", "A"}, {0, 0, 1, 1, 2, 2}, {3, 3, 3, 3, 3, 3}, {0, 1, 1, 0, 1, 0}, 2},
      // Rank 0 and 5 on one node, 1-4 on another: nodes numbered by their lowest rank.
      {"ends on one node",
       {"A", "B", "B", "B", "B", "A"},
       {0, 0, 1, 2, 3, 1},
       {2, 4, 4, 4, 4, 2},
       {0, 1, 1, 1, 1, 0},
       2},
      {"uneven, three nodes", {"C", "A", "C", "B", "A"}, {0, 0, 1, 0, 1}, {2, 2, 2, 1, 2}, {0, 1, 0, 2, 1}, 3},
      {"one rank", {"A"}, {0}, {1}, {0}, 1},
  };
  for (const auto& row : rows) {
    for (int r = 0; r < static_cast<int>(row.node_of_rank.size()); ++r) {
      const NodeLayout l = node_layout(row.node_of_rank, r);
      const auto at = static_cast<size_t>(r);
      EXPECT_EQ(l.local_rank, row.local_rank[at]) << row.name << ", rank " << r;
      EXPECT_EQ(l.local_size, row.local_size[at]) << row.name << ", rank " << r;
      EXPECT_EQ(l.node_index, row.node_index[at]) << row.name << ", rank " << r;
      EXPECT_EQ(l.num_nodes, row.num_nodes) << row.name << ", rank " << r;
    }
  }
}

TEST(NodeLayout, RankOutsideTheJob) {
  EXPECT_THROW(node_layout({"A", "B"}, 2), Error);
  EXPECT_THROW(node_layout({"A", "B"}, -1), Error);
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
  EXPECT_FALSE(w.host.empty());

  // Same node <=> same host name, in whatever order the launcher numbered the ranks.
  const auto hosts = all_hosts(w);
  const NodeLayout by_host = node_layout(hosts, w.rank);
  EXPECT_EQ(w.node_index, by_host.node_index);
  EXPECT_EQ(w.local_rank, by_host.local_rank);
  EXPECT_EQ(w.local_size, by_host.local_size);
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
