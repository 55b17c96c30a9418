# shellcheck shell=bash
# jobs/cifar_runtimes.sh — the container runtimes of container mode, each one
# whole in its section below: a runtime is added here and nowhere else.
# Sourced by jobs/cifar_common.sh (the runtime chosen and checked before a
# launch) and by jobs/cifar_container.sh (one rank started in the image).
#
# CIFAR_RUNTIMES lists them in the order that picks the runtime when
# CIFAR_CONTAINER_RUNTIME is unset: the first that claims the image. Each NAME
# of it has these functions:
#   cifar_runtime_NAME_claims IMAGE   whether IMAGE is written as this runtime's
#   cifar_runtime_NAME_check IMAGE LAUNCHER
#                                     fails (cifar_die) before any launch if the
#                                     runtime or the image is not there
#   cifar_runtime_NAME_exec IMAGE PROGRAM ARGS...
#                                     one rank: replaces the shell with PROGRAM
#                                     run in the image, the host folders
#                                     CIFAR_RANK_BINDS bound at their own paths
#                                     (jobs/cifar_container.sh)
# and a runtime that srun starts itself, with no wrapper per rank, has instead
# of the last:
#   cifar_runtime_NAME_srun IMAGE BINDS
#                                     sets CIFAR_CONTAINER_SRUN, srun's options
#                                     (BINDS: the host folders, comma-separated),
#                                     and CIFAR_BIN
# A check may name another runtime to use in the variable CIFAR_RUNTIME_USED
# (apptainer: singularity, where only that is installed); that name needs its
# own exec.
CIFAR_RUNTIMES=(apptainer pyxis charliecloud podman)

# The program inside every image (tools/build_image.sh installs it there).
CIFAR_IMAGE_PROGRAM=/opt/cifar_mpi/bin/cifar_mpi
CIFAR_RANK_BINDS=()

# cifar_runtimes_with PART: the runtimes that have a function of PART (check,
# exec, srun), as "a, b or c", for messages.
cifar_runtimes_with() {
  local name names=() i out
  for name in "${CIFAR_RUNTIMES[@]}"; do
    declare -F "cifar_runtime_${name}_$1" >/dev/null && names+=("$name")
  done
  out=${names[0]}
  for ((i = 1; i < ${#names[@]}; i++)); do
    if ((i + 1 == ${#names[@]})); then out+=" or ${names[i]}"; else out+=", ${names[i]}"; fi
  done
  echo "$out"
}

# Apptainer (or Singularity, its former name): a .sif file.
cifar_runtime_apptainer_claims() { [[ $1 == *.sif ]]; }
cifar_runtime_apptainer_check() {
  command -v apptainer >/dev/null || command -v singularity >/dev/null ||
    cifar_die "CIFAR_CONTAINER_RUNTIME=apptainer: neither apptainer nor singularity on PATH"
  # shellcheck disable=SC2034  # read by cifar_container_resolve (jobs/cifar_common.sh)
  command -v apptainer >/dev/null || CIFAR_RUNTIME_USED=singularity
  [[ -r $1 ]] || cifar_die "CIFAR_CONTAINER=$1: no such .sif file (apptainer build cifar.sif docker-archive://cifar_mpi-cpu.docker.tar)"
}
cifar_runtime_apptainer_exec() {
  local image=$1 program=$2 b args=() gpu_flag=()
  shift 2
  [[ -e /dev/nvidiactl ]] && gpu_flag=(--nv)
  for b in "${CIFAR_RANK_BINDS[@]+"${CIFAR_RANK_BINDS[@]}"}"; do args+=(--bind "$b"); done
  exec "${CIFAR_CONTAINER_RUNTIME:-apptainer}" exec "${gpu_flag[@]+"${gpu_flag[@]}"}" "${args[@]+"${args[@]}"}" \
    --env LD_LIBRARY_PATH= "$image" "$program" "$@"
}
cifar_runtime_singularity_exec() { cifar_runtime_apptainer_exec "$@"; }

# Pyxis: srun's --container-image (Enroot underneath): a .sqsh file, a
# docker:// address or a registry#image name.
cifar_runtime_pyxis_claims() { [[ $1 == *.sqsh || $1 == docker://* || $1 == *'#'* ]]; }
cifar_runtime_pyxis_check() {
  [[ $2 == srun ]] || cifar_die "CIFAR_CONTAINER_RUNTIME=pyxis starts containers through srun: unset CIFAR_LAUNCHER or set it to srun"
  [[ $(srun --help 2>&1) == *--container-image* ]] ||
    cifar_die "CIFAR_CONTAINER_RUNTIME=pyxis: this srun has no --container-image (the Pyxis plugin is not installed here)"
}
cifar_runtime_pyxis_srun() {
  local mounts
  mounts=$(sed -E 's/([^,]+)/\1:\1/g' <<<"$2")
  # shellcheck disable=SC2034  # both read by jobs/run_cifar.sh
  CIFAR_CONTAINER_SRUN=("--container-image=$1" "--container-mounts=$mounts" --no-container-mount-home)
  # shellcheck disable=SC2034
  CIFAR_BIN=$CIFAR_IMAGE_PROGRAM
}

# Charliecloud: ch-run on a directory image.
cifar_runtime_charliecloud_claims() { [[ -d $1 ]]; }
cifar_runtime_charliecloud_check() {
  command -v ch-run >/dev/null || cifar_die "CIFAR_CONTAINER_RUNTIME=charliecloud: no ch-run on PATH (module load charliecloud?)"
  [[ -x $1$CIFAR_IMAGE_PROGRAM ]] ||
    cifar_die "CIFAR_CONTAINER=$1 is no Charliecloud directory image of cifar_mpi (make one: tools/build_image.sh cpu --export charliecloud)"
}
cifar_runtime_charliecloud_exec() {
  local image=$1 program=$2 b args=()
  shift 2
  # ch-run passes the host's environment (PMIx, Open MPI, Slurm, CIFAR_*
  # variables) and shares /tmp, $HOME and /dev/shm; LD_LIBRARY_PATH and
  # PATH are the host's and must not leak in. GPUs: `ch-fromhost --nvidia
  # IMAGE` once after ch-convert.
  # ch-run mounts the image read-only and binds only onto folders that
  # exist in it: make them in an image directory we may write to (our own
  # export); a shared read-only image needs them made once by its owner.
  for b in "${CIFAR_RANK_BINDS[@]+"${CIFAR_RANK_BINDS[@]}"}"; do
    if [[ ! -d $image$b ]] && ! mkdir -p "$image$b" 2>/dev/null; then
      cifar_die "cannot bind $b: no such folder in the image $image and it is not writable (mkdir -p $image$b once, as its owner, or keep data and runs under /tmp or \$HOME)"
    fi
    args+=("--bind=$b:$b")
  done
  # Each ch-run is its own user namespace, where Open MPI's single-copy
  # shared memory (CMA) cannot work: say so up front instead of a warning per rank.
  export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
  exec ch-run "${args[@]+"${args[@]}"}" --unset-env=LD_LIBRARY_PATH \
    --set-env=PATH=/opt/cifar_mpi/bin:/usr/bin:/bin "$image" -- "$program" "$@"
}

# Podman: an image name or id, whatever the others do not claim.
cifar_runtime_podman_claims() { true; }
cifar_runtime_podman_check() {
  command -v podman >/dev/null || cifar_die "CIFAR_CONTAINER_RUNTIME=podman: no podman on PATH"
  podman image exists "$1" || cifar_die "CIFAR_CONTAINER=$1: podman has no such image (podman load -i cifar_mpi-cpu.docker.tar)"
}
cifar_runtime_podman_exec() {
  local image=$1 program=$2 b args=()
  shift 2
  # One container per rank sharing the host's network, IPC (Open MPI's
  # shared memory), process namespace and /tmp (the launcher's session
  # folder, where the rank finds its PMIx server), running as the caller
  # (root: as root; rootless podman: keep-id); the launcher's variables go
  # in by prefix.
  for b in /tmp "${CIFAR_RANK_BINDS[@]+"${CIFAR_RANK_BINDS[@]}"}"; do args+=(--volume "$b:$b"); done
  [[ -e /dev/nvidiactl ]] && args+=(--device nvidia.com/gpu=all)
  if [[ $(id -u) -eq 0 ]]; then args+=(--user 0:0); else args+=(--userns keep-id); fi
  exec podman run --rm --network host --ipc host --pid host --entrypoint "$program" \
    --env 'OMPI_*' --env 'PMIX_*' --env 'SLURM_*' --env 'CIFAR_*' --env 'NCCL_*' \
    --env 'OPENBLAS_*' --env OMP_NUM_THREADS --env HDF5_USE_FILE_LOCKING "${args[@]+"${args[@]}"}" "$image" "$@"
}
