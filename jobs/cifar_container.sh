#!/usr/bin/env bash
# jobs/cifar_container.sh — one rank of a container-mode launch: the host's
# srun or mpirun starts this script once per rank, and it replaces itself
# with the container runtime running the image's cifar_mpi (the hybrid model:
# the host's launcher and PMIx, the image's Open MPI and program). The job
# scripts set it up (jobs/cifar_common.sh, cifar_container_resolve); by hand:
#   CIFAR_CONTAINER=build/image/cifar_mpi-cpu.ch CIFAR_CONTAINER_RUNTIME=charliecloud \
#     mpirun -np 2 jobs/cifar_container.sh --data /tmp/cifar10.h5 --epochs 1
#
#   CIFAR_CONTAINER          the image, in the runtime's form
#   CIFAR_CONTAINER_RUNTIME  a runtime of jobs/cifar_runtimes.sh that has a
#                            wrapper per rank (pyxis has none: srun itself
#                            starts the container)
#   CIFAR_CONTAINER_BINDS    host folders, comma-separated, bound at the same
#                            path inside (the run folder, the data's folder, the
#                            config's folder); PMIx's server folder is added
# --exec PROGRAM ARGS...: run PROGRAM in the image instead of cifar_mpi.
set -euo pipefail

cifar_die() {
  printf '[%s] error: %s\n' "${0##*/}" "$*" >&2
  exit 2
}
# shellcheck source=jobs/cifar_runtimes.sh
source "$(dirname "${BASH_SOURCE[0]}")/cifar_runtimes.sh"

image=${CIFAR_CONTAINER:?CIFAR_CONTAINER: the image to run}
runtime=${CIFAR_CONTAINER_RUNTIME:?CIFAR_CONTAINER_RUNTIME: $(cifar_runtimes_with exec)}
program=$CIFAR_IMAGE_PROGRAM
if [[ ${1:-} == --exec ]]; then
  program=${2:?--exec needs a program}
  shift 2
fi

IFS=, read -r -a CIFAR_RANK_BINDS <<<"${CIFAR_CONTAINER_BINDS:-}"
# Under srun --mpi=pmix the rank reaches slurmstepd's PMIx server through a
# socket in this folder (in slurmd's spool, outside /tmp).
[[ -n ${PMIX_SERVER_TMPDIR:-} && -d $PMIX_SERVER_TMPDIR ]] && CIFAR_RANK_BINDS+=("$PMIX_SERVER_TMPDIR")

declare -F "cifar_runtime_${runtime}_exec" >/dev/null ||
  cifar_die "CIFAR_CONTAINER_RUNTIME=$runtime: use $(cifar_runtimes_with exec) ($(cifar_runtimes_with srun): srun starts the container)"
"cifar_runtime_${runtime}_exec" "$image" "$program" "$@"
