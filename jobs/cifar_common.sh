# shellcheck shell=bash
# jobs/cifar_common.sh — what every cifar_mpi launch script shares: where the
# program, configuration, data and outputs are (from CIFAR_* environment
# variables, so nobody edits a script to point it elsewhere), the runtime
# environment of the ranks, the program's command line and the mpirun command.
# Sourced by jobs/run_cifar.sh (Slurm) and jobs/local_mpirun.sh (no Slurm).
# Restarting after a failure (CIFAR_MAX_RESTARTS, CIFAR_RESTART_BACKOFF,
# CIFAR_PROBE_TIMEOUT) is in jobs/cifar_restart.sh, sourced at the end.
#
#   CIFAR_BUILD       folder holding cifar_mpi   (default: <repo>/build/cuda, else <repo>/build/cpu;
#                     installed: <prefix>/bin, for these scripts in <prefix>/share/cifar_mpi/jobs)
#   CIFAR_CONFIG      INI file for --config      (default: <repo>/config/default.ini; "" for none)
#   CIFAR_DATA        HDF5 file for --data       (default: none; the config's or program's default)
#   CIFAR_RUN_DIR     outputs: model.pth, metrics.jsonl, checkpoints/ (default: per launcher)
#   CIFAR_EXTRA_ARGS  more cifar_mpi options, split on spaces (e.g. "--epochs 30 --batch-size 128");
#                     options that need quoting go after the script's name on its command line.
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
    candidates=("$repo/build/cuda" "$repo/build/cpu")
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
  [[ -x $CIFAR_BIN ]] ||
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
}

# cifar_remove_unused_run_dir: on exit, the run folder this launch created
# is removed again while it holds nothing (a launch refused before training,
# a bad setting): no empty folder per failed launch. rmdir removes only
# empty folders, so nothing a run wrote is ever lost.
CIFAR_RUN_DIR_CREATED=
cifar_remove_unused_run_dir() {
  [[ -n $CIFAR_RUN_DIR_CREATED ]] || return 0
  rmdir "$CIFAR_RUN_DIR/checkpoints" "$CIFAR_RUN_DIR" 2>/dev/null || true
}

# cifar_export_rank_env CPUS_PER_RANK: the environment every rank inherits.
cifar_export_rank_env() {
  local cpus_per_rank=$1
  # Every rank opens the same HDF5 file read-only; HDF5's flock() fails or
  # serialises on NFS/Lustre/GPFS mounts, and read-only use needs no lock.
  export HDF5_USE_FILE_LOCKING=FALSE
  # One OpenMP/BLAS thread pool per rank, sized to the cores the rank owns
  # (LibTorch's default of "all cores" oversubscribes a node N ranks times).
  export OMP_NUM_THREADS=$cpus_per_rank
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
  for var in PATH LD_LIBRARY_PATH OMP_NUM_THREADS HDF5_USE_FILE_LOCKING $(compgen -e | grep '^NCCL_' || true); do
    [[ -n ${!var+set} ]] && CIFAR_MPIRUN+=(-x "$var")
  done
  cifar_mpirun_site_options
  CIFAR_MPIRUN+=("${CIFAR_MPIRUN_SITE[@]}")
}

# shellcheck source=jobs/cifar_restart.sh
source "$(dirname "${BASH_SOURCE[0]}")/cifar_restart.sh"
