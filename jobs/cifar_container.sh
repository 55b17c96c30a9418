#!/usr/bin/env bash
# jobs/cifar_container.sh — one rank of a container-mode launch: the host's
# srun or mpirun starts this script once per rank, and it replaces itself
# with the container runtime running the image's cifar_mpi (the hybrid model:
# the host's launcher and PMIx, the image's Open MPI and program). The job
# scripts set it up (jobs/cifar_common.sh, cifar_container_resolve); by hand:
#   CIFAR_CONTAINER=build/image/cifar_mpi-cpu.ch CIFAR_CONTAINER_RUNTIME=charliecloud \
#     mpirun -np 2 jobs/cifar_container.sh --data /tmp/cifar10.h5 --epochs 1
#
#   CIFAR_CONTAINER          the image: a Charliecloud directory (charliecloud), a
#                            .sif file (apptainer), an image name or id (podman)
#   CIFAR_CONTAINER_RUNTIME  charliecloud | apptainer | podman (pyxis needs no
#                            wrapper: srun itself starts the container)
#   CIFAR_CONTAINER_BINDS    host folders, comma-separated, bound at the same
#                            path inside (the run folder, the data's folder, the
#                            config's folder); PMIx's server folder is added
# --exec PROGRAM ARGS...: run PROGRAM in the image instead of cifar_mpi.
set -euo pipefail

die() {
  printf '[cifar_container.sh] error: %s\n' "$*" >&2
  exit 2
}
image=${CIFAR_CONTAINER:?CIFAR_CONTAINER: the image to run}
runtime=${CIFAR_CONTAINER_RUNTIME:?CIFAR_CONTAINER_RUNTIME: charliecloud, apptainer or podman}
program=/opt/cifar_mpi/bin/cifar_mpi
if [[ ${1:-} == --exec ]]; then
  program=${2:?--exec needs a program}
  shift 2
fi

binds=()
IFS=, read -r -a binds <<<"${CIFAR_CONTAINER_BINDS:-}"
# Under srun --mpi=pmix the rank reaches slurmstepd's PMIx server through a
# socket in this folder (in slurmd's spool, outside /tmp).
[[ -n ${PMIX_SERVER_TMPDIR:-} && -d $PMIX_SERVER_TMPDIR ]] && binds+=("$PMIX_SERVER_TMPDIR")
gpu_flag=()
[[ -e /dev/nvidiactl ]] && gpu_flag=(--nv)

args=()
case $runtime in
  charliecloud)
    # ch-run passes the host's environment (PMIx, Open MPI, Slurm, CIFAR_*
    # variables) and shares /tmp, $HOME and /dev/shm; LD_LIBRARY_PATH and
    # PATH are the host's and must not leak in. GPUs: `ch-fromhost --nvidia
    # IMAGE` once after ch-convert.
    # ch-run mounts the image read-only and binds only onto folders that
    # exist in it: make them in an image directory we may write to (our own
    # export); a shared read-only image needs them made once by its owner.
    for b in "${binds[@]+"${binds[@]}"}"; do
      if [[ ! -d $image$b ]] && ! mkdir -p "$image$b" 2>/dev/null; then
        die "cannot bind $b: no such folder in the image $image and it is not writable (mkdir -p $image$b once, as its owner, or keep data and runs under /tmp or \$HOME)"
      fi
      args+=("--bind=$b:$b")
    done
    # Each ch-run is its own user namespace, where Open MPI's single-copy
    # shared memory (CMA) cannot work: say so up front instead of a warning per rank.
    export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
    exec ch-run "${args[@]+"${args[@]}"}" --unset-env=LD_LIBRARY_PATH \
      --set-env=PATH=/opt/cifar_mpi/bin:/usr/bin:/bin "$image" -- "$program" "$@"
    ;;
  apptainer | singularity)
    for b in "${binds[@]+"${binds[@]}"}"; do args+=(--bind "$b"); done
    exec "$runtime" exec "${gpu_flag[@]+"${gpu_flag[@]}"}" "${args[@]+"${args[@]}"}" \
      --env LD_LIBRARY_PATH= "$image" "$program" "$@"
    ;;
  podman)
    # One container per rank sharing the host's network, IPC (Open MPI's
    # shared memory), process namespace and /tmp (the launcher's session
    # folder, where the rank finds its PMIx server), running as the caller
    # (root: as root; rootless podman: keep-id); the launcher's variables go
    # in by prefix.
    for b in /tmp "${binds[@]+"${binds[@]}"}"; do args+=(--volume "$b:$b"); done
    [[ -e /dev/nvidiactl ]] && args+=(--device nvidia.com/gpu=all)
    if [[ $(id -u) -eq 0 ]]; then args+=(--user 0:0); else args+=(--userns keep-id); fi
    exec podman run --rm --network host --ipc host --pid host --entrypoint "$program" \
      --env 'OMPI_*' --env 'PMIX_*' --env 'SLURM_*' --env 'CIFAR_*' --env 'NCCL_*' \
      --env 'OPENBLAS_*' --env OMP_NUM_THREADS --env HDF5_USE_FILE_LOCKING "${args[@]+"${args[@]}"}" "$image" "$@"
    ;;
  *) die "CIFAR_CONTAINER_RUNTIME=$runtime: use charliecloud, apptainer or podman (pyxis: srun starts the container)" ;;
esac
