#!/usr/bin/env bash
# jobs/local_mpirun.sh — run cifar_mpi with Open MPI's mpirun where there is no
# Slurm: one workstation, or several machines listed in a hostfile.
#
#   jobs/local_mpirun.sh -n 2                                  # 2 ranks here
#   jobs/local_mpirun.sh -n 16 --hostfile hosts.txt -- --epochs 30
#
# hosts.txt, one line per machine with its GPU count as slots:
#   node01 slots=8
#   node02 slots=8
# All machines need the same paths (shared file system) and passwordless ssh.
# Options:
#   -n, --np N            number of ranks (default: GPUs here, else 2)
#   -c, --cpus-per-rank N OpenMP/BLAS threads per rank (default: cores / ranks here)
#   --hostfile FILE       machines and slots for mpirun
#   --                    everything after goes to cifar_mpi
# Environment: CIFAR_BUILD, CIFAR_CONFIG, CIFAR_DATA, CIFAR_EXTRA_ARGS,
# CIFAR_MPIRUN_ARGS (see jobs/cifar_common.sh); CIFAR_RUN_DIR defaults to a
# new folder per launch, runs/local-<date>-<time>-<pid>, so that no launch
# continues or overwrites another's run. Exit code 3 (preempted, checkpoint
# written) is passed on: run again with the CIFAR_RUN_DIR the launch printed
# to resume from the checkpoint. SIGTERM to this script stops the run with a
# checkpoint and exit code 3, as SIGUSR1 does.
set -euo pipefail

jobs_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=jobs/cifar_common.sh
source "$jobs_dir/cifar_common.sh"

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

np=
cpus_per_rank=
hostfile=
while (($#)); do
  case $1 in
    -n | --np) np=${2:?$1 needs a number}; shift 2 ;;
    -c | --cpus-per-rank) cpus_per_rank=${2:?$1 needs a number}; shift 2 ;;
    --hostfile) hostfile=${2:?--hostfile needs a file}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    *) cifar_die "unknown option $1 (options for cifar_mpi go after --; see --help)" ;;
  esac
done

if [[ -z $np ]]; then
  np=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  ((np > 0)) || np=2
fi
[[ $np =~ ^[1-9][0-9]*$ ]] || cifar_die "--np must be a positive number (got $np)"
[[ -z $hostfile || -r $hostfile ]] || cifar_die "--hostfile $hostfile is not a readable file"
if [[ -z $cpus_per_rank ]]; then
  cpus_per_rank=$(($(nproc) / np))
  ((cpus_per_rank > 0)) || cpus_per_rank=1
fi

cifar_resolve_paths "$(dirname "$jobs_dir")" "$PWD/runs/local-$(date +%Y%m%d-%H%M%S)-$$"
cifar_export_rank_env "$cpus_per_rank"
cifar_program_args "$@"
cifar_mpirun_command "$np"
[[ -n $hostfile ]] && CIFAR_MPIRUN+=(--hostfile "$hostfile")

cifar_log "run folder ${CIFAR_RUN_DIR}; to resume it after exit code 3: CIFAR_RUN_DIR=${CIFAR_RUN_DIR} $0 ..."
cifar_log "launch: ${CIFAR_MPIRUN[*]} ${CIFAR_BIN} ${CIFAR_ARGS[*]}"
# mpirun forwards SIGUSR1 to the ranks (checkpoint and exit 3) and its exit
# code is then the program's. SIGTERM it answers by ending the job with exit
# code 1 even when the ranks stopped cleanly with a checkpoint (Open MPI 4.1),
# so this script takes SIGTERM itself and passes it on as SIGUSR1. Ctrl-C
# reaches mpirun directly and ends the job at once.
"${CIFAR_MPIRUN[@]}" "$CIFAR_BIN" "${CIFAR_ARGS[@]}" &
mpirun_pid=$!
trap 'cifar_log "SIGTERM: asking the ranks to checkpoint and stop (SIGUSR1 through mpirun)"
      kill -s USR1 "$mpirun_pid" 2>/dev/null || true' TERM
trap 'kill -s USR1 "$mpirun_pid" 2>/dev/null || true' USR1
status=0
cifar_wait "$mpirun_pid" || status=$?
exit "$status"
