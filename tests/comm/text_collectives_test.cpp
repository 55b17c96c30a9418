// Collectives of text and topologies at several world sizes, with answers
// known from the rank alone: rank r's text is r copies of the letter 'a' + r
// (rank 0's is empty, so empty texts are covered), and its topology names
// host "node-<r/2>" with cores {r, r + W}.
#include <gtest/gtest.h>

#include "comm/mpi_communicator.hpp"
#include "comm/text_collectives.hpp"
#include "placement/topology_probe.hpp"
#include "support/mpi_test_env.hpp"

namespace cifar {
namespace {

MpiCommunicator& text_comm() {
  static MpiCommunicator c(test::env().comm());
  return c;
}

std::string letters_of(int rank) { return std::string(static_cast<size_t>(rank), static_cast<char>('a' + rank)); }

RankTopology topology_of(int rank, int world) {
  RankTopology t;
  t.rank = rank;
  t.local_rank = rank % 2;
  t.local_size = 2;
  t.host = "node-" + std::to_string(rank / 2);
  t.bound_cpus = {rank, rank + world};
  t.intra_op_threads = rank + 1;
  t.nccl_socket_ifname = rank % 2 ? "ib0" : "";
  return t;
}

TEST(TextCollectives, GatherStringsToEachRoot) {
  const int world = text_comm().size(), rank = text_comm().rank();
  for (int root = 0; root < world; ++root) {
    const auto texts = gather_strings(test::env().comm(), letters_of(rank), root);
    if (rank != root) {
      EXPECT_TRUE(texts.empty());
      continue;
    }
    ASSERT_EQ(texts.size(), static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) EXPECT_EQ(texts[r], letters_of(r)) << "root " << root << ", rank " << r;
  }
}

TEST(TextCollectives, GatherStringsAllEmpty) {
  const auto texts = gather_strings(test::env().comm(), "");
  if (text_comm().rank() == 0) {
    EXPECT_EQ(texts, std::vector<std::string>(static_cast<size_t>(text_comm().size())));
  }
}

TEST(TextCollectives, GatherTopologies) {
  const int world = text_comm().size(), rank = text_comm().rank();
  const auto topologies = gather_topologies(test::env().comm(), topology_of(rank, world));
  if (rank != 0) {
    EXPECT_TRUE(topologies.empty());
    return;
  }
  ASSERT_EQ(topologies.size(), static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    const RankTopology want = topology_of(r, world);
    EXPECT_EQ(topologies[r].rank, r);
    EXPECT_EQ(topologies[r].local_rank, want.local_rank);
    EXPECT_EQ(topologies[r].host, want.host);
    EXPECT_EQ(topologies[r].bound_cpus, want.bound_cpus);
    EXPECT_EQ(topologies[r].intra_op_threads, want.intra_op_threads);
    EXPECT_EQ(topologies[r].nccl_socket_ifname, want.nccl_socket_ifname);
  }
}

TEST(TextCollectives, BroadcastStringFromEachRoot) {
  const int world = text_comm().size(), rank = text_comm().rank();
  for (int root = 0; root < world; ++root) {
    // Every rank offers another text; only the root's arrives.
    const std::string got = broadcast_string(text_comm(), "checkpoint-" + std::to_string(rank) + ".pt", root);
    EXPECT_EQ(got, "checkpoint-" + std::to_string(root) + ".pt");
  }
  // Rank 0 with nothing to say (no checkpoint to resume): every rank gets "".
  EXPECT_EQ(broadcast_string(text_comm(), rank == 0 ? "" : letters_of(rank)), "");
}

}  // namespace
}  // namespace cifar
