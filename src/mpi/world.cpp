// Node-aware rank discovery with MPI_Comm_split_type(MPI_COMM_TYPE_SHARED).
#include "mpi/world.hpp"

#include <cstdlib>

#include "util/error.hpp"

namespace cifar {

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

  // Ranks that share memory are one node; key = world rank keeps the order.
  MPI_Comm node_comm = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, w.rank, MPI_INFO_NULL, &node_comm));
  MPI_CHECK(MPI_Comm_rank(node_comm, &w.local_rank));
  MPI_CHECK(MPI_Comm_size(node_comm, &w.local_size));

  // One leader per node (local rank 0); the leaders' own ordering numbers the
  // nodes, then each leader tells its node.
  MPI_Comm leaders = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split(comm, w.local_rank == 0 ? 0 : MPI_UNDEFINED, w.rank, &leaders));
  int node_info[2] = {0, 0};
  if (leaders != MPI_COMM_NULL) {
    MPI_CHECK(MPI_Comm_rank(leaders, &node_info[0]));
    MPI_CHECK(MPI_Comm_size(leaders, &node_info[1]));
    MPI_CHECK(MPI_Comm_free(&leaders));
  }
  MPI_CHECK(MPI_Bcast(node_info, 2, MPI_INT, 0, node_comm));
  w.node_index = node_info[0];
  w.num_nodes = node_info[1];
  MPI_CHECK(MPI_Comm_free(&node_comm));
  return w;
}

}  // namespace cifar
