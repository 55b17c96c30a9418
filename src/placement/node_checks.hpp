// Node checks: before training, every node checks what would otherwise fail
// later, and a failure ends the job step before the first step with the
// node's name, what was found and the fix. Each check is a pure function of
// numbers and text probed from the node (NodeFacts), so tests drive them with
// known answers; placement/node_probe.hpp probes the live node, and
// agree_on_node_checks gathers every rank's failures so that the whole job
// ends with one report and one exit code.
//
// Exit codes: a world size that does not match the launcher's task count,
// and a checkpoint folder on a shared file system too small for the run, are
// the launch's fault (exit 2: the same command fails the same way wherever it
// restarts); every other failure exits 7, and the nodes at fault (not enough
// /dev/shm, a GPU the node was given but cannot use, NCCL on TCP sockets, a
// full node-local checkpoint folder) are written to $CIFAR_FAILED_NODES_FILE,
// one a line, for the job scripts to leave out.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cifar {

// What one rank found on its node. -1 (or empty) where not probed or unknown:
// that check is then skipped.
struct NodeFacts {
  std::string host;
  int world_size = 1;
  int local_size = 1;  // ranks on this node

  // Launcher: srun started this rank itself (SLURM_PROCID set, no
  // OMPI_COMM_WORLD_SIZE), and the tasks of its step (SLURM_STEP_NUM_TASKS,
  // else SLURM_NTASKS).
  bool srun_direct = false;
  long launcher_tasks = -1;

  // Checkpoints (only on the rank that writes them).
  std::string checkpoint_dir;     // "" when this rank writes none
  int64_t checkpoint_free = -1;   // bytes free to this user there
  int64_t checkpoint_bytes = -1;  // one checkpoint, estimated
  int keep = 0;                   // checkpoints the run keeps
  long max_writes = -1;           // checkpoint files the run writes at most (its schedule's); -1: unknown
  int existing_checkpoints = 0;   // already there (they count towards the kept ones)
  int64_t model_file_bytes = 0;   // the model file, when it goes to the same file system
  bool checkpoint_local = false;  // on a node-local file system (a full one is the node's failure)

  // /dev/shm (only for NCCL on GPUs with more than one rank on the node).
  bool nccl_shares_node = false;
  int64_t shm_free = -1;

  // GPUs: those the launcher gave the rank (CUDA_VISIBLE_DEVICES' entries; -1
  // when unset) against those the CUDA runtime can use.
  int granted_gpus = -1;
  int usable_gpus = -1;
};

// One failed check on one node.
struct NodeFailure {
  std::string check;  // "world size", "checkpoint space", "/dev/shm", "GPUs", "NCCL network", "probe"
  std::string host;
  std::string found;
  std::string fix;
  int exit_code = 7;
  bool node_at_fault = false;  // leaving the node out helps (written to the failed-nodes file)
  // "node h: <check>: <found>. Fix: <fix>"
  std::string text() const;
};

// The least /dev/shm an NCCL node needs: NCCL's shared-memory transport
// maps a few MiB per pair of local ranks and channel; 256 MiB is four times
// Docker's default of 64 MiB, the classic "failed to extend /dev/shm/nccl-…".
inline constexpr int64_t kMinShmBytes = 256LL << 20;

// The room a run's checkpoints and model file need at their peak, beyond
// what the checkpoint folder holds now. A checkpoint is written after the
// prune down to --keep-checkpoints, so the last write holds the kept ones
// and itself (files_writing new files); the model file is written after the
// last prune, beside the kept ones alone (files_after). Only the writes the
// run makes count (max_writes), and those already there take no new room.
// Saturates at INT64_MAX: no overflow at any --keep-checkpoints.
struct CheckpointSpace {
  int64_t files_writing = 0, files_after = 0;
  int64_t need = 0;          // bytes: the larger of the two moments
  bool model_after = false;  // the moment of the model file is the larger
};
CheckpointSpace checkpoint_space(const NodeFacts& facts);

// Every check on one rank's facts.
std::vector<NodeFailure> check_node(const NodeFacts& facts);

// What NCCL's INFO lines of a communicator's start say about the network it
// chose between nodes: "Using network IB" (2.19 and later), else the NET/IB
// or NET/Socket "Using" line. "" when the lines do not say.
std::string nccl_network_from_log(const std::vector<std::string>& lines);
// A multi-node NCCL job on TCP sockets: a failure unless the user allows
// it; none for another network or "" (not known).
std::vector<NodeFailure> check_nccl_network(const std::string& host, const std::string& network, bool allow_socket);

// Failures as text and back (gathering them to rank 0).
std::string encode_failures(const std::vector<NodeFailure>& failures);
std::vector<NodeFailure> decode_failures(const std::string& text);

// The job's exit code for these failures: 0 for none, 2 when any is the
// launch's (exit_code 2), else 7.
int node_checks_exit_code(const std::vector<NodeFailure>& failures);

// Collective over `comm`: every rank runs `probe` (one that throws reports a
// "probe" failure naming its host instead), rank 0 logs every failure of
// every rank once and, with `write_failed_nodes`, writes the nodes at fault
// to $CIFAR_FAILED_NODES_FILE (atomically; when set), and every rank throws
// AgreedFailure with the same exit code when any failed.
void agree_on_node_checks(MPI_Comm comm, const std::string& host,
                          const std::function<std::vector<NodeFailure>()>& probe, bool write_failed_nodes = true);

}  // namespace cifar
