#!/usr/bin/env bash
# jobs/run_cifar.sh — the body of every cifar_mpi Slurm job (jobs/train.slurm,
# jobs/train_multinode.slurm exec it; inside `salloc` it can be run directly).
# It owns: launching one rank per task (srun --mpi=pmix, or mpirun), passing
# Slurm's early-warning signal to the ranks, restarting the step after a
# failure within the same job, and requeueing the job when the program
# reports "preempted, checkpoint written" (exit code 3).
#
# Preemption, step by step:
#   1. Slurm sends SIGUSR1 to this batch shell 120 s before the time limit
#      (#SBATCH --signal=B:USR1@120), or someone runs
#      `scancel --signal=USR1 --batch JOBID`. SIGTERM (scancel, preemption,
#      a time limit reached without the warning) is forwarded the same way.
#   2. The trap forwards the signal to the launcher (srun or mpirun) as
#      SIGUSR1, which the launcher forwards to every rank (neither passes
#      SIGTERM on). The program finishes its step, writes a checkpoint and
#      exits with code 3.
#   3. Exit code 3 after SIGUSR1 (or after a signal the ranks got directly)
#      -> `scontrol requeue $SLURM_JOB_ID`: the job goes back to
#      the queue under the same job id (so the same default run folder) and the
#      batch script exits 0. The next start runs with --resume auto and
#      continues from the checkpoint; SLURM_RESTART_COUNT counts the restarts.
#      CIFAR_REQUEUE=0 turns requeueing off (the job then ends with exit code 3,
#      the checkpoint stays for a manual resubmit); CIFAR_MAX_REQUEUES
#      (default 20) stops a job that is preempted forever.
#   Exit code 3 after SIGTERM is not requeued by the script: Slurm is ending
#   the job (scontrol requeue would even revive a job the user cancelled).
#   After `scancel` or a time limit the job ends with exit code 3 and its
#   checkpoint; a new job with the same CIFAR_RUN_DIR resumes. After
#   `scontrol requeue` (or preemption with PreemptMode=REQUEUE) Slurm has
#   requeued the job itself before the SIGTERM: the script sees it
#   (cifar_slurm_requeued_by_slurm), says so and exits 0, and the next start
#   resumes. When Slurm ends a job (scancel, scontrol requeue, time limit),
#   SIGTERM reaches the batch shell, srun and the ranks at once (inside
#   Pyxis containers too), and SIGKILL follows KillWait seconds later:
#   KillWait must leave time for one step, the checkpoint and, with Pyxis,
#   the removal of the unpacked image (docs/slurm.md).
#
# Failures (jobs/cifar_restart.sh): a step that fails with any exit code but
# 2 (configuration), 5 (divergence) or 6 (bad input), and was not asked to stop, is started
# again in the same allocation, up to CIFAR_MAX_RESTARTS times (default 3),
# the first time at once, then after CIFAR_RESTART_BACKOFF s (default 10,
# doubling), and resumes from the newest checkpoint. Before each restart the
# job's nodes are checked: a node Slurm removed from the job (#SBATCH
# --no-kill keeps the allocation when a node fails), reports down, drained or
# not responding, that does not run a probe step within CIFAR_PROBE_TIMEOUT s,
# or that cifar_mpi named as failing its node checks (exit code 7) is left out
# (srun --exclude, the same tasks per node on fewer nodes; cifar_mpi resumes
# at the new world size). Each restart is logged with its cause and the nodes
# lost. A requeue adds those nodes to the job's ExcNodeList (scontrol update);
# a one-node job whose node is lost or failed its checks is requeued without it.
#
# Environment (see also jobs/cifar_common.sh): CIFAR_BUILD, CIFAR_CONFIG,
# CIFAR_DATA, CIFAR_RUN_DIR (default <submit dir>/runs/<job name>_<job id>),
# CIFAR_EXTRA_ARGS, CIFAR_LAUNCHER=srun|mpirun, CIFAR_MPIRUN_ARGS,
# CIFAR_REQUEUE, CIFAR_MAX_REQUEUES, CIFAR_MAX_RESTARTS, CIFAR_RESTART_BACKOFF,
# CIFAR_PROBE_TIMEOUT, CIFAR_STOP_HOLD. Arguments go to cifar_mpi unchanged.
set -euo pipefail

jobs_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=jobs/cifar_common.sh
source "$jobs_dir/cifar_common.sh"

# The traps come first, so that a signal at any moment is honoured: before
# the launch nothing starts (exit code 3); while the ranks start, the stop is
# held until they can take it (cifar_pass_stop_on, jobs/cifar_restart.sh).
launcher_name=${CIFAR_LAUNCHER:-srun}
launcher=("$launcher_name")
terminated_by_slurm=0
# A stop reaches the launcher as SIGUSR1, whatever the signal was: srun and
# mpirun pass SIGUSR1 on to every rank, but neither passes SIGTERM on. srun
# answers SIGTERM by abandoning the step: it waits KillWait + 2 s, then has
# Slurm SIGKILL the ranks, without a checkpoint; mpirun ends the job with
# exit code 1. cifar_mpi handles both signals alike (checkpoint, exit 3).
# When Slurm itself ends the job (scancel, scontrol requeue, a time limit),
# its SIGTERM reaches the ranks of an srun step directly, inside Pyxis
# containers too: nothing is forwarded then, so the ranks stop on that
# SIGTERM alone.
# shellcheck disable=SC2317  # called by the traps below
forward_signal() {
  [[ $1 != TERM ]] || terminated_by_slurm=1
  if [[ $1 == TERM && $launcher_name == srun ]] && cifar_slurm_ending_job; then
    cifar_log "received SIGTERM; Slurm is ending the job and sends SIGTERM to every rank itself"
    cifar_request_stop TERM ""
    return 0
  fi
  [[ -z $CIFAR_STEP_PID ]] ||
    cifar_log "received SIG$1; forwarding it to the job step as SIGUSR1 (${launcher[0]} pid ${CIFAR_STEP_PID})"
  cifar_request_stop "$1" USR1
}
trap 'forward_signal USR1' USR1
trap 'forward_signal TERM' TERM

[[ -n ${SLURM_JOB_ID:-} ]] ||
  cifar_die "not inside a Slurm allocation: submit with sbatch jobs/train.slurm (or use jobs/local_mpirun.sh)"

cifar_resolve_paths "$(dirname "$jobs_dir")" "${SLURM_SUBMIT_DIR:-$PWD}/runs/${SLURM_JOB_NAME:-cifar}_${SLURM_JOB_ID}"
cifar_check_restart_settings
cpus_per_task=${SLURM_CPUS_PER_TASK:-1}
# Since Slurm 22.05 srun no longer inherits --cpus-per-task from sbatch; without
# this every rank would be squeezed onto one core.
export SRUN_CPUS_PER_TASK=$cpus_per_task
cifar_export_rank_env "$cpus_per_task"
cifar_program_args "$@"

case $launcher_name in
  # srun starts the ranks itself and hands Open MPI its world through PMIx
  # (check `srun --mpi=list` shows pmix). Every rank sees all GPUs of its node
  # and takes cuda:<local rank>. No --kill-on-bad-exit: ranks that end with
  # code 3 one after another must not have the slower ones killed mid-exit;
  # real failures end the whole job through MPI_Abort. A stop reaches it as
  # SIGUSR1 (forward_signal, above).
  # With GPUs per task (sbatch --gpus-per-task=1) each rank computes on its
  # own GPU, its cuda:0; on Slurm 23.11 and newer srun then also gets
  # --gres-flags=allow-task-sharing, so NCCL can reach the node's other GPUs
  # (cifar_srun_gpu_options).
  srun) cifar_srun_gpu_options ;;
  # mpirun inside the allocation reads the node list and slots from Slurm and
  # starts its daemons with srun. Use it where srun lacks PMIx support. It
  # forwards SIGUSR1 to the ranks, but answers SIGTERM by ending the job with
  # exit code 1 whatever the ranks do, so forward_signal (above) passes
  # SIGTERM on to it as SIGUSR1: the ranks checkpoint and exit 3 either way.
  mpirun) : "${SLURM_NTASKS:?SLURM_NTASKS unset: request tasks with --ntasks or --ntasks-per-node}" ;;
  *) cifar_die "CIFAR_LAUNCHER=$CIFAR_LAUNCHER: use srun or mpirun" ;;
esac

cifar_log "job ${SLURM_JOB_ID} (restart ${SLURM_RESTART_COUNT:-0}) on ${SLURM_JOB_NODELIST:-?}:" \
  "${SLURM_NTASKS:-?} task(s), ${cpus_per_task} CPU(s) per task, run folder ${CIFAR_RUN_DIR}"

# The hooks of cifar_supervise (jobs/cifar_restart.sh). The launcher runs in
# the background: a shell waiting on a foreground child runs no trap until
# that child ends, which would be after the time limit.
start_step() {
  cifar_slurm_step_layout "$launcher_name"
  case $launcher_name in
    srun)
      launcher=(srun --mpi=pmix "${CIFAR_STEP_LAYOUT[@]}" "${CIFAR_SRUN_GPU[@]+"${CIFAR_SRUN_GPU[@]}"}"
        "${CIFAR_CONTAINER_SRUN[@]+"${CIFAR_CONTAINER_SRUN[@]}"}")
      ;;
    mpirun)
      cifar_mpirun_command "$(cifar_slurm_ntasks)"
      launcher=("${CIFAR_MPIRUN[@]}" "${CIFAR_STEP_LAYOUT[@]}")
      ;;
  esac
  cifar_log "launch: ${launcher[*]} ${CIFAR_BIN} ${CIFAR_ARGS[*]}"
  "${launcher[@]}" "$CIFAR_BIN" "${CIFAR_ARGS[@]}" &
  CIFAR_STEP_PID=$!
}
prepare_restart() { cifar_slurm_drop_lost_nodes; }

cifar_supervise
step_status=$CIFAR_STEP_STATUS

# requeue_job WHAT: puts the job back in the queue (without the nodes it
# lost: cifar_slurm_requeue_without_lost) and exits 0, unless it has been
# requeued CIFAR_MAX_REQUEUES times already or scontrol refuses; then it
# logs why and returns. WHAT ends the log line of a requeue.
requeue_job() {
  if ((${SLURM_RESTART_COUNT:-0} >= ${CIFAR_MAX_REQUEUES:-20})); then
    cifar_log "already restarted ${SLURM_RESTART_COUNT} times (CIFAR_MAX_REQUEUES): not requeueing"
    return 0
  fi
  # Slurm accepts the requeue and at once ends this incarnation with
  # SIGTERM to every process of the batch step, scontrol included: ignore
  # it (children inherit that) so scontrol can report the outcome.
  trap '' TERM
  if cifar_slurm_requeue_without_lost; then
    cifar_log "requeued job ${SLURM_JOB_ID}$1; it resumes from the newest checkpoint when it starts again"
    exit 0
  fi
  cifar_log "scontrol requeue failed (submitted with --no-requeue?); resubmit with CIFAR_RUN_DIR=${CIFAR_RUN_DIR} to resume"
}

case $step_status in
  0)
    cifar_log "finished; run folder ${CIFAR_RUN_DIR} holds: $(ls -m "$CIFAR_RUN_DIR")"
    exit 0
    ;;
  3)
    cifar_log "preempted: checkpoint written to ${CIFAR_RUN_DIR}/checkpoints"
    if [[ ${CIFAR_REQUEUE:-1} != 1 ]]; then
      cifar_log "CIFAR_REQUEUE=${CIFAR_REQUEUE}: not requeueing; resubmit with CIFAR_RUN_DIR=${CIFAR_RUN_DIR} to resume"
    elif ((terminated_by_slurm)) && cifar_slurm_requeued_by_slurm; then
      cifar_log "SIGTERM: Slurm requeued job ${SLURM_JOB_ID} itself (scontrol requeue or preemption):" \
        "not requeueing it again; it resumes from the newest checkpoint when it starts again"
      exit 0
    elif ((terminated_by_slurm)); then
      cifar_log "SIGTERM: the job is asked to end (scancel, preemption or time limit): not requeueing;" \
        "resubmit with CIFAR_RUN_DIR=${CIFAR_RUN_DIR} to resume"
    else
      requeue_job ""
    fi
    exit 3
    ;;
  *)
    cifar_log "cifar_mpi failed with exit code ${step_status} ($(cifar_exit_meaning "$step_status"); see the rank messages above)"
    # A one-node job whose node failed its checks or was lost: the job goes
    # back to the queue without that node, at most CIFAR_MAX_REQUEUES times.
    if [[ -n $CIFAR_SLURM_ALL_LOST && ${#CIFAR_SLURM_LOST[@]} == 1 && ${CIFAR_REQUEUE:-1} == 1 &&
      -z $CIFAR_STOP_REQUESTED ]]; then
      requeue_job " without node ${CIFAR_SLURM_LOST[0]}"
    fi
    exit "$step_status"
    ;;
esac
