// The shape of the job as MPI sees it: who this rank is, which node it is on,
// and how many ranks share that node. Computed once by the bootstrap.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace cifar {

struct World {
  int rank = 0;        // in the job
  int size = 1;        // ranks in the job
  int local_rank = 0;  // among the ranks on this node (MPI_COMM_TYPE_SHARED)
  int local_size = 1;  // ranks on this node
  int node_index = 0;  // 0..num_nodes-1, ordered by the lowest world rank on each node
  int num_nodes = 1;
  std::string host;  // MPI_Get_processor_name
  // The node's name in node checks and the failed-nodes file: Slurm's
  // (SLURMD_NODENAME, which differs from the host name where a site's
  // NodeName and NodeHostname do), else `host`.
  std::string node_name;
};

// Where one rank stands among the nodes of its job.
struct NodeLayout {
  int local_rank = 0;  // among the ranks of its node, in world-rank order
  int local_size = 1;  // ranks on its node
  int node_index = 0;  // its node's place when the nodes are ordered by their lowest world rank
  int num_nodes = 1;
};

// `node_of_rank[r]` names the node of world rank r (ranks of one node share
// the name, no other node has it). Ranks need not come node by node: Slurm
// may order them by the network's topology (rank 0 and 5 on one node, 1-4 on
// another), so nothing here assumes that a node's ranks are consecutive.
NodeLayout node_layout(const std::vector<std::string>& node_of_rank, int rank);

// Collective over `comm`: splits it by shared-memory node and derives the
// node-local rank, node index and node count (node_layout). Right under
// mpirun and under `srun --mpi=pmix`, where the launcher tells MPI which
// ranks share a node.
World discover_world(MPI_Comm comm);

}  // namespace cifar
