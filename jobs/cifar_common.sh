# shellcheck shell=bash
# jobs/cifar_common.sh — what every cifar_mpi launch script shares: where the
# program, configuration, data and outputs are (from CIFAR_* environment
# variables, so nobody edits a script to point it elsewhere), the runtime
# environment of the ranks, the program's command line and the mpirun command.
# Sourced by jobs/run_cifar.sh (Slurm) and jobs/local_mpirun.sh (no Slurm).
# Restarting after a failure (CIFAR_MAX_RESTARTS, CIFAR_RESTART_BACKOFF,
# CIFAR_PROBE_TIMEOUT) is in jobs/cifar_restart.sh, and the container
# runtimes are in jobs/cifar_runtimes.sh, both sourced at the end.
#
#   CIFAR_BUILD       folder holding cifar_mpi   (default: <repo>/build/cuda, cuda12, else cpu;
#                     installed: <prefix>/bin, for these scripts in <prefix>/share/cifar_mpi/jobs)
#   CIFAR_CONFIG      INI file for --config      (default: <repo>/config/default.ini; "" for none)
#   CIFAR_DATA        HDF5 file for --data       (default: none; the config's or program's default)
#   CIFAR_RUN_DIR     outputs: model.pth, metrics.jsonl, checkpoints/ (default: per launcher)
#   CIFAR_EXTRA_ARGS  more cifar_mpi options, split on spaces (e.g. "--epochs 30 --batch-size 128");
#                     options that need quoting go after the script's name on its command line.
#   CIFAR_CONTAINER   container mode: each rank runs the image's cifar_mpi (cifar_container_resolve)
#   CIFAR_CONTAINER_RUNTIME  one of jobs/cifar_runtimes.sh's (default: from CIFAR_CONTAINER)
#   CIFAR_CONTAINER_MOUNTS   more host folders the ranks need, comma-separated
# The options set here (--config, --data, --output, --metrics, --checkpoint-dir,
# --resume) are defaults: one given in CIFAR_EXTRA_ARGS or on the command line
# replaces it (cifar_mpi takes each option once).

cifar_log() { printf '[%s %(%H:%M:%S)T] %s\n' "${0##*/}" -1 "$*"; }
cifar_die() {
  printf '[%s] error: %s\n' "${0##*/}" "$*" >&2
  exit 2
}

# cifar_resolve_paths REPO DEFAULT_RUN_DIR: settles CIFAR_BUILD, CIFAR_BIN,
# CIFAR_CONFIG, CIFAR_DATA and CIFAR_RUN_DIR, and fails before any launch if one
# is missing (a job that dies after waiting in the queue for an hour over a typo
# is the most expensive kind of typo).
cifar_resolve_paths() {
  local repo=$1 default_run_dir=$2 candidate candidates
  if [[ -z ${CIFAR_BUILD:-} ]]; then
    CIFAR_BUILD=$repo/build/cuda
    candidates=("$repo/build/cuda" "$repo/build/cuda12" "$repo/build/cpu")
    # Installed, these scripts are in <prefix>/share/cifar_mpi/jobs (so "repo" is
    # <prefix>/share/cifar_mpi, whose config/ is the installed one) and the programs in <prefix>/bin.
    [[ $repo == */share/cifar_mpi ]] && candidates+=("${repo%/share/cifar_mpi}/bin")
    for candidate in "${candidates[@]}"; do
      if [[ -x $candidate/cifar_mpi ]]; then
        CIFAR_BUILD=$candidate
        break
      fi
    done
  fi
  CIFAR_BIN=$CIFAR_BUILD/cifar_mpi
  [[ -n ${CIFAR_CONTAINER:-} || -x $CIFAR_BIN ]] ||
    cifar_die "no executable $CIFAR_BIN: build it (cmake --preset cuda && cmake --build --preset cuda) or set CIFAR_BUILD"
  CIFAR_CONFIG=${CIFAR_CONFIG-$repo/config/default.ini}
  [[ -z $CIFAR_CONFIG || -r $CIFAR_CONFIG ]] ||
    cifar_die "CIFAR_CONFIG=$CIFAR_CONFIG is not a readable file (set CIFAR_CONFIG to an INI file, or to \"\" for none)"
  CIFAR_DATA=${CIFAR_DATA:-}
  [[ -z $CIFAR_DATA || -r $CIFAR_DATA ]] ||
    cifar_die "CIFAR_DATA=$CIFAR_DATA is not a readable file (pack it with cifar_pack, or fix the path)"
  CIFAR_RUN_DIR=${CIFAR_RUN_DIR:-$default_run_dir}
  [[ -e $CIFAR_RUN_DIR ]] || CIFAR_RUN_DIR_CREATED=1
  mkdir -p "$CIFAR_RUN_DIR/checkpoints" || cifar_die "cannot create CIFAR_RUN_DIR=$CIFAR_RUN_DIR"
  [[ -z ${CIFAR_CONTAINER:-} ]] || cifar_container_resolve
}

# cifar_container_resolve: container mode (CIFAR_CONTAINER set). The host's
# srun or mpirun starts one container per rank; CIFAR_BIN becomes the per-rank
# wrapper jobs/cifar_container.sh, or for a runtime that srun starts itself
# (pyxis) the image's cifar_mpi, with CIFAR_CONTAINER_SRUN holding srun's
# container options. The run folder and the folders of the data and config
# are bound at their own paths. Checks, before any launch, the runtime, the
# image, and that the host's launcher and the image's MPI fit
# (cifar_container_check_mpi). The runtimes: jobs/cifar_runtimes.sh.
cifar_container_resolve() {
  local runtime=${CIFAR_CONTAINER_RUNTIME:-} image=$CIFAR_CONTAINER binds launcher=${CIFAR_LAUNCHER:-srun} name
  [[ -n ${SLURM_JOB_ID:-} ]] || launcher=mpirun
  if [[ -z $runtime ]]; then
    for name in "${CIFAR_RUNTIMES[@]}"; do
      if "cifar_runtime_${name}_claims" "$image"; then
        runtime=$name
        break
      fi
    done
  fi
  declare -F "cifar_runtime_${runtime}_check" >/dev/null ||
    cifar_die "CIFAR_CONTAINER_RUNTIME=$runtime: use $(cifar_runtimes_with check)"
  CIFAR_RUNTIME_USED=$runtime
  "cifar_runtime_${runtime}_check" "$image" "$launcher"
  runtime=$CIFAR_RUNTIME_USED
  binds=$CIFAR_RUN_DIR
  [[ -z $CIFAR_DATA ]] || binds+=,$(cd "$(dirname "$CIFAR_DATA")" && pwd)
  [[ -z $CIFAR_CONFIG ]] || binds+=,$(cd "$(dirname "$CIFAR_CONFIG")" && pwd)
  [[ -z ${CIFAR_CONTAINER_MOUNTS:-} ]] || binds+=,$CIFAR_CONTAINER_MOUNTS
  export CIFAR_CONTAINER CIFAR_CONTAINER_RUNTIME=$runtime CIFAR_CONTAINER_BINDS=$binds
  CIFAR_CONTAINER_SRUN=()  # read by jobs/run_cifar.sh
  if declare -F "cifar_runtime_${runtime}_srun" >/dev/null; then
    "cifar_runtime_${runtime}_srun" "$image" "$binds"
  else
    CIFAR_BIN=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/cifar_container.sh
    cifar_container_check_mpi "$launcher"
  fi
  cifar_log "container mode: $runtime, image $image, bound: $binds"
}

# cifar_container_check_mpi LAUNCHER: the hybrid model's contract. With
# mpirun, the host's Open MPI daemons talk to the image's Open MPI library:
# the same Open MPI release series (major.minor) on both sides, or the ranks
# cannot join. With srun --mpi=pmix, the image's Open MPI is a PMIx client of
# Slurm's PMIx server: Slurm needs its pmix plugin, the image a libpmix
# (PMIx keeps client and server compatible across releases from 2.1 on; a
# different major is logged). The image lists its versions in
# /opt/cifar_mpi/share/cifar_mpi/image-mpi.txt.
cifar_container_check_mpi() {
  local launcher=$1 versions image_ompi image_pmix host
  versions=$("$CIFAR_BIN" --exec cat /opt/cifar_mpi/share/cifar_mpi/image-mpi.txt) ||
    cifar_die "cannot start the image $CIFAR_CONTAINER with $CIFAR_CONTAINER_RUNTIME (see the message above)"
  image_ompi=$(sed -n 's/^openmpi //p' <<<"$versions")
  image_pmix=$(sed -n 's/^pmix //p' <<<"$versions")
  if [[ $launcher == mpirun ]]; then
    host=$(mpirun --version 2>/dev/null | sed -n 's/.*(Open MPI) \([0-9.]*\).*/\1/p')
    [[ -n $host ]] || cifar_die "container mode with mpirun needs the host's Open MPI mpirun on PATH (the image has Open MPI $image_ompi)"
    [[ ${host%.*} == "${image_ompi%.*}" ]] ||
      cifar_die "the host's Open MPI $host and the image's $image_ompi differ in release series: load an Open MPI ${image_ompi%.*}.x module, or use srun (CIFAR_LAUNCHER=srun, PMIx)"
    cifar_log "MPI: host mpirun Open MPI $host, image Open MPI $image_ompi"
  else
    host=$(srun --mpi=list 2>&1 | grep -o 'pmix[_v0-9]*' | sort -u | tr '\n' ' ')
    [[ -n $host ]] || cifar_die "container mode with srun needs Slurm's pmix plugin (srun --mpi=list shows none): ask the site, or use CIFAR_LAUNCHER=mpirun"
    [[ -n $image_pmix ]] || cifar_die "the image $CIFAR_CONTAINER has no PMIx library: rebuild it (tools/build_image.sh)"
    [[ $host == *"pmix_v${image_pmix%%.*}"* ]] ||
      cifar_log "note: Slurm's PMIx plugins ($host) and the image's PMIx $image_pmix differ in major version; PMIx supports that from 2.1 on"
    cifar_log "MPI: srun --mpi=pmix ($host), image Open MPI $image_ompi with PMIx $image_pmix"
  fi
}

# cifar_remove_unused_run_dir: on exit, the run folder this launch created
# is removed again while it holds nothing (a launch refused before training,
# a bad setting): no empty folder per failed launch. rmdir removes only
# empty folders, so nothing a run wrote is ever lost.
CIFAR_RUN_DIR_CREATED=
cifar_remove_unused_run_dir() {
  [[ -n $CIFAR_RUN_DIR_CREATED ]] || return 0
  local entry
  # The launcher's own notes (the failed-nodes file, the signals' ready
  # file) do not make a run: a folder holding only them goes too.
  for entry in "$CIFAR_RUN_DIR"/* "$CIFAR_RUN_DIR"/.[!.]*; do
    [[ -e $entry && $entry != "$CIFAR_RUN_DIR/checkpoints" && $entry != "${CIFAR_FAILED_NODES_FILE:-}" &&
      $entry != "${CIFAR_SIGNALS_READY_FILE:-}" ]] && return 0
  done
  rm -f "${CIFAR_FAILED_NODES_FILE:-}" "${CIFAR_SIGNALS_READY_FILE:-}"
  rmdir "$CIFAR_RUN_DIR/checkpoints" "$CIFAR_RUN_DIR" 2>/dev/null || true
}

# cifar_export_rank_env CPUS_PER_RANK: the environment every rank inherits.
cifar_export_rank_env() {
  local cpus_per_rank=$1
  # Every rank opens the same HDF5 file read-only; HDF5's flock() fails or
  # serialises on NFS/Lustre/GPFS mounts, and read-only use needs no lock.
  export HDF5_USE_FILE_LOCKING=FALSE
  # One OpenMP thread pool per rank, sized to the cores the rank owns, for
  # the OpenMP programs a rank may start (cifar_mpi itself reads no
  # OMP_NUM_THREADS: its --threads and --blas-threads decide, so the launcher
  # does not change the model).
  export OMP_NUM_THREADS=$cpus_per_rank
  # Where rank 0 names the nodes that failed their checks before training
  # (exit code 7); a restart or requeue leaves them out (cifar_restart.sh).
  export CIFAR_FAILED_NODES_FILE=$CIFAR_RUN_DIR/failed_nodes
  # Which rank 0 creates once every rank handles the stop signals: a stop
  # asked for earlier is held until then (cifar_pass_stop_on, cifar_restart.sh).
  export CIFAR_SIGNALS_READY_FILE=$CIFAR_RUN_DIR/.signals-ready
  # NCCL: WARN prints only problems; INFO prints the rings/trees, the
  # interfaces and the transports chosen (NET/IB vs NET/Socket) — use it once on
  # a new cluster to check that the fast network is used.
  export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
  # NCCL_SOCKET_IFNAME: the interface NCCL's bootstrap (and its TCP transport
  # when there is no InfiniBand) uses. Set it when nodes have several
  # interfaces (docker0, a slow management network): "ib0", "eth0", or "^lo,docker"
  # to exclude. NCCL_IB_HCA picks the InfiniBand adapters, e.g. "mlx5_0,mlx5_1"
  # or "=mlx5_0:1" (exact, port 1). Leave both unset where NCCL chooses well.
  # export NCCL_SOCKET_IFNAME=ib0
  # export NCCL_IB_HCA=mlx5
}

# cifar_slurm_version_at_least MAJOR MINOR: whether srun is Slurm MAJOR.MINOR
# or newer (`srun --version` prints e.g. "slurm 23.11.4" or "slurm-wlm 22.05.8").
cifar_slurm_version_at_least() {
  local version
  version=$(srun --version 2>/dev/null) || return 1
  [[ $version =~ ([0-9]+)\.([0-9]+) ]] || return 1
  ((BASH_REMATCH[1] > $1 || (BASH_REMATCH[1] == $1 && 10#${BASH_REMATCH[2]} >= $2)))
}

# cifar_srun_gpu_options: sets the array CIFAR_SRUN_GPU, srun's options for
# the job's GPUs. With GPUs bound per task (sbatch --gpus-per-task, which
# sets SLURM_GPUS_PER_TASK), Slurm 23.11 and newer confine each task to its
# own GPU where the site constrains devices (cgroups, ConstrainDevices=yes):
# NCCL then cannot reach the other ranks' GPUs of the node for its
# peer-to-peer and shared-memory transports and fails with
# ncclUnhandledCudaError. --gres-flags=allow-task-sharing lets every task of
# the node open the node's GPUs while each still computes on its own.
# Older srun rejects the flag (and does not confine tasks): none there, nor
# for GPUs per node, which every rank of the node sees anyway.
# shellcheck disable=SC2034  # CIFAR_SRUN_GPU is the launcher's (jobs/run_cifar.sh)
cifar_srun_gpu_options() {
  CIFAR_SRUN_GPU=()
  [[ -n ${SLURM_GPUS_PER_TASK:-} ]] || return 0
  if cifar_slurm_version_at_least 23 11; then
    CIFAR_SRUN_GPU=(--gres-flags=allow-task-sharing)
  fi
}

# cifar_program_args [ARGS...]: sets the array CIFAR_ARGS, the command line of
# cifar_mpi; the run always resumes from the newest checkpoint in the run
# folder (none yet: a fresh start), which is what makes requeueing safe.
# Each option set here is left out when the user's options (CIFAR_EXTRA_ARGS,
# ARGS) give it themselves, as `--name value` or `--name=value`: theirs wins.
cifar_program_args() {
  local extra=() user=() option value
  read -r -a extra <<<"${CIFAR_EXTRA_ARGS:-}"
  user=("${extra[@]}" "$@")
  CIFAR_ARGS=()
  cifar_default_option() {  # NAME VALUE: adds --NAME VALUE unless the user gives --NAME
    option=--$1 value=$2
    [[ " ${user[*]} " =~ \ $option(=|\ ) ]] || CIFAR_ARGS+=("$option" "$value")
  }
  [[ -z $CIFAR_CONFIG ]] || cifar_default_option config "$CIFAR_CONFIG"
  [[ -z $CIFAR_DATA ]] || cifar_default_option data "$CIFAR_DATA"
  [[ -z ${CIFAR_THREADS:-} ]] || cifar_default_option threads "$CIFAR_THREADS"
  cifar_default_option output "$CIFAR_RUN_DIR/model.pth"
  cifar_default_option metrics "$CIFAR_RUN_DIR/metrics.jsonl"
  cifar_default_option checkpoint-dir "$CIFAR_RUN_DIR/checkpoints"
  cifar_default_option resume auto
  CIFAR_ARGS+=("${user[@]}")
}

# cifar_wait PID: waits until the background process PID has really ended
# (`wait` returns early each time a trapped signal arrives; bash keeps the
# status) and returns its exit status.
cifar_wait() {
  local pid=$1 status=0
  while kill -0 "$pid" 2>/dev/null; do
    wait "$pid" || true
  done
  wait "$pid" || status=$?
  return "$status"
}

# cifar_mpirun_site_options: sets the array CIFAR_MPIRUN_SITE, the options
# every mpirun of this launch takes (the step's and a restart's probes):
# CIFAR_MPIRUN_ARGS (e.g. "--mca btl_tcp_if_include ib0"), and --allow-run-as-root for root.
cifar_mpirun_site_options() {
  read -r -a CIFAR_MPIRUN_SITE <<<"${CIFAR_MPIRUN_ARGS:-}"
  # Open MPI refuses root unless told; containers and CI often run as root.
  if [[ $(id -u) -eq 0 ]]; then CIFAR_MPIRUN_SITE=(--allow-run-as-root "${CIFAR_MPIRUN_SITE[@]}"); fi
}

# cifar_mpirun_command NP: sets the array CIFAR_MPIRUN, Open MPI's mpirun for NP
# ranks. Binding is left to OMP_NUM_THREADS and the program (one rank per GPU
# owns its cores); CIFAR_MPIRUN_ARGS adds options (cifar_mpirun_site_options).
cifar_mpirun_command() {
  local np=$1 var
  CIFAR_MPIRUN=(mpirun -np "$np" --bind-to none)
  # mpirun starts remote ranks with its own environment, not this shell's:
  # pass on what the ranks need (under Slurm this is harmless repetition).
  for var in PATH LD_LIBRARY_PATH OMP_NUM_THREADS HDF5_USE_FILE_LOCKING CIFAR_FAILED_NODES_FILE CIFAR_SIGNALS_READY_FILE \
    $(compgen -e | grep '^NCCL_' || true); do
    [[ -n ${!var+set} ]] && CIFAR_MPIRUN+=(-x "$var")
  done
  cifar_mpirun_site_options
  CIFAR_MPIRUN+=("${CIFAR_MPIRUN_SITE[@]}")
}

# shellcheck source=jobs/cifar_runtimes.sh
source "$(dirname "${BASH_SOURCE[0]}")/cifar_runtimes.sh"
# shellcheck source=jobs/cifar_restart.sh
source "$(dirname "${BASH_SOURCE[0]}")/cifar_restart.sh"
