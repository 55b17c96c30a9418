// Node-aware rank discovery with MPI_Comm_split_type(MPI_COMM_TYPE_SHARED).
#include "mpi/world.hpp"

#include <algorithm>
#include <cstdlib>

#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {

NodeLayout node_layout(const std::vector<std::string>& node_of_rank, int rank) {
  if (rank < 0 || rank >= static_cast<int>(node_of_rank.size()))
    throw Error(strprintf("node layout: rank %d is outside the job's %zu rank(s)", rank, node_of_rank.size()));
  const std::string& mine = node_of_rank[static_cast<size_t>(rank)];
  NodeLayout layout;
  layout.local_rank = static_cast<int>(std::count(node_of_rank.begin(), node_of_rank.begin() + rank, mine));
  layout.local_size = static_cast<int>(std::count(node_of_rank.begin(), node_of_rank.end(), mine));
  // Each node in the order of its lowest rank: the first time its name appears.
  std::vector<std::string> nodes;
  for (const std::string& node : node_of_rank)
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
  layout.node_index = static_cast<int>(std::find(nodes.begin(), nodes.end(), mine) - nodes.begin());
  layout.num_nodes = static_cast<int>(nodes.size());
  return layout;
}

namespace {

// The lowest world rank of this rank's node, which names the node: MPI tells
// which ranks share memory, whatever their host names say.
int node_leader(MPI_Comm comm, int rank) {
  MPI_Comm node_comm = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_comm));
  int leader = rank;
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node_comm));
  MPI_CHECK(MPI_Comm_free(&node_comm));
  return leader;
}

}  // namespace

World discover_world(MPI_Comm comm) {
  World w;
  MPI_CHECK(MPI_Comm_rank(comm, &w.rank));
  MPI_CHECK(MPI_Comm_size(comm, &w.size));

  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int name_len = 0;
  MPI_CHECK(MPI_Get_processor_name(name, &name_len));
  w.host.assign(name, static_cast<size_t>(name_len));
  const char* slurm_node = std::getenv("SLURMD_NODENAME");
  w.node_name = slurm_node && *slurm_node ? slurm_node : w.host;

  // Every rank's node, by world rank; the layout follows from that list alone.
  const int leader = node_leader(comm, w.rank);
  std::vector<int> leaders(static_cast<size_t>(w.size));
  MPI_CHECK(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm));
  std::vector<std::string> node_of_rank;
  for (int l : leaders) node_of_rank.push_back(std::to_string(l));
  const NodeLayout layout = node_layout(node_of_rank, w.rank);
  w.local_rank = layout.local_rank;
  w.local_size = layout.local_size;
  w.node_index = layout.node_index;
  w.num_nodes = layout.num_nodes;
  return w;
}

}  // namespace cifar
