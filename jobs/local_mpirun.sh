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
#   -c, --cpus-per-rank N threads per rank (cifar_mpi --threads N; default: its
#                         automatic count, cores / ranks here)
#   --hostfile FILE       machines and slots for mpirun
#   --max-restarts N      restarts after a failure (default: CIFAR_MAX_RESTARTS, else 3; 0: none)
#   --                    everything after goes to cifar_mpi
# Environment: CIFAR_BUILD, CIFAR_CONFIG, CIFAR_DATA, CIFAR_EXTRA_ARGS,
# CIFAR_MPIRUN_ARGS (see jobs/cifar_common.sh); CIFAR_MAX_RESTARTS,
# CIFAR_RESTART_BACKOFF, CIFAR_PROBE_TIMEOUT, CIFAR_STOP_HOLD (see jobs/cifar_restart.sh);
# CIFAR_RUN_DIR defaults to a new folder per launch,
# runs/local-<date>-<time>-<pid>, so that no launch continues or overwrites
# another's run; a launch that leaves it empty (refused before training)
# removes it again. The options the script sets (--data from CIFAR_DATA,
# --output, --metrics, --checkpoint-dir, --resume auto) give way to the same
# option after -- or in CIFAR_EXTRA_ARGS.
# A failed run is restarted by itself, from the newest checkpoint, the first
# time at once, then after a back-off (CIFAR_RESTART_BACKOFF: 10 s before the
# second restart, doubling): every failure but exit code 2 (configuration),
# 5 (divergence) and 6 (bad input), which would recur. With a hostfile, each host must
# first run `true` through mpirun within CIFAR_PROBE_TIMEOUT s; the hosts
# that do not are left out (<run folder>/hostfile.alive) and the run goes on
# with the ranks the others hold (cifar_mpi resumes at the new world size).
# Each restart is logged with its cause. Exit code 3 (preempted, checkpoint
# written) is passed on: run again with the CIFAR_RUN_DIR the launch printed
# to resume from the checkpoint. SIGTERM or SIGINT (Ctrl-C) to this script
# stops the run with a checkpoint and exit code 3, as SIGUSR1 does, at any
# moment (before the launch: nothing starts; while the ranks start: they get
# the stop once they can take it), and is never followed by a restart; a
# second SIGINT ends the ranks at once, exit code 130.
set -euo pipefail

jobs_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=jobs/cifar_common.sh
source "$jobs_dir/cifar_common.sh"

# mpirun forwards SIGUSR1 to the ranks (checkpoint and exit 3) and its exit
# code is then the program's. SIGTERM it answers by ending the job with exit
# code 1 even when the ranks stopped cleanly with a checkpoint (Open MPI 4.1),
# so this script takes SIGTERM itself and passes it on as SIGUSR1. Either
# signal also means: no restart. SIGINT (Ctrl-C) stops alike; a second one
# ends the ranks at once, without a checkpoint. In every case the script
# waits for mpirun, so that no rank goes on training unsupervised. mpirun
# runs in a session of its own (start_step): a terminal's Ctrl-C reaches
# this script alone, never mpirun or the ranks directly (Open MPI 4.1's
# mpirun crashes on a second signal while it ends a job, and a rank has no
# SIGINT handler).
# The traps come first, so that a signal at any moment is honoured.
interrupted_twice=0
# shellcheck disable=SC2317  # called by the traps below
stop_step() {
  [[ $1 != TERM || -z $CIFAR_STEP_PID ]] ||
    cifar_log "SIGTERM: asking the ranks to checkpoint and stop (SIGUSR1 through mpirun)"
  cifar_request_stop "$1" USR1
}
# shellcheck disable=SC2317  # called by the trap below
interrupt_step() {
  if [[ $CIFAR_STOP_REQUESTED == INT ]]; then
    cifar_log "SIGINT again: ending the ranks now, without a checkpoint"
    interrupted_twice=1
    # SIGKILL to mpirun's session: mpirun and the ranks here (a signal to
    # mpirun alone while it ends the job crashes it); the daemons of other
    # hosts end their ranks when mpirun's connection drops.
    [[ -z $CIFAR_STEP_PID ]] || pkill -KILL -s "$CIFAR_STEP_PID" 2>/dev/null || true
    return 0
  fi
  [[ -z $CIFAR_STEP_PID ]] ||
    cifar_log "SIGINT: asking the ranks to checkpoint and stop (SIGUSR1 through mpirun); again to end them at once"
  stop_step INT
}
trap 'stop_step TERM' TERM
trap 'stop_step USR1' USR1
trap interrupt_step INT

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

np=
cpus_per_rank=
cpus_given=0
hostfile=
while (($#)); do
  case $1 in
    -n | --np) np=${2:?$1 needs a number}; shift 2 ;;
    -c | --cpus-per-rank) cpus_per_rank=${2:?$1 needs a number} cpus_given=1; shift 2 ;;
    --hostfile) hostfile=${2:?--hostfile needs a file}; shift 2 ;;
    --max-restarts) CIFAR_MAX_RESTARTS=${2:?--max-restarts needs a number}; shift 2 ;;
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
trap cifar_remove_unused_run_dir EXIT
cifar_check_restart_settings
cifar_export_rank_env "$cpus_per_rank"
# cifar_mpi reads no OMP_NUM_THREADS: a count asked for goes in as --threads;
# without -c its own count (cores / ranks on the node) is this default.
[[ $cpus_given == 0 ]] || CIFAR_THREADS=$cpus_per_rank
cifar_program_args "$@"
CIFAR_NP=$np
CIFAR_HOSTFILE=$hostfile
[[ -z $hostfile ]] || cifar_read_hostfile "$hostfile"

# The hooks of cifar_supervise (jobs/cifar_restart.sh).
start_step() {
  cifar_mpirun_command "$CIFAR_NP"
  [[ -z $CIFAR_HOSTFILE ]] || CIFAR_MPIRUN+=(--hostfile "$CIFAR_HOSTFILE")
  cifar_log "launch: ${CIFAR_MPIRUN[*]} ${CIFAR_BIN} ${CIFAR_ARGS[*]}"
  setsid "${CIFAR_MPIRUN[@]}" "$CIFAR_BIN" "${CIFAR_ARGS[@]}" &
  CIFAR_STEP_PID=$!
}
prepare_restart() {
  local failed
  if [[ -n $CIFAR_HOSTFILE ]]; then
    cifar_drop_lost_hosts
  elif failed=$(cifar_failed_nodes) && [[ -n $failed ]]; then
    cifar_log "this machine ($failed) failed its node checks: not restarting here"
    return 1
  else
    CIFAR_RESTART_NOTE="again $CIFAR_NP rank(s) on this machine"
  fi
}

cifar_log "run folder ${CIFAR_RUN_DIR}; to resume it after exit code 3: CIFAR_RUN_DIR=${CIFAR_RUN_DIR} $0 ..."
cifar_supervise
if ((interrupted_twice)); then
  cifar_log "ended by a second SIGINT (mpirun's exit code $CIFAR_STEP_STATUS); the run folder resumes from" \
    "$(cifar_newest_checkpoint) (exit code 130)"
  exit 130
fi
exit "$CIFAR_STEP_STATUS"
