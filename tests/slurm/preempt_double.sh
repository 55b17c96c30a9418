#!/usr/bin/env bash
# tests/slurm/preempt_double.sh — a test double for cifar_mpi that follows only
# its preemption contract, so the job scripts' signal forwarding and requeue
# can be tested before (and independently of) the trainer:
#   * a checkpoint in --checkpoint-dir  -> "resumed", rank 0 writes --output, exit 0
#   * otherwise: "training" until SIGUSR1 or SIGTERM arrives, then rank 0
#     writes a checkpoint (temp name + rename) once every rank has seen the
#     signal, and every rank exits 3;
#     no signal within 60 s -> exit 1 (the forwarding is broken).
# Installed as <folder>/cifar_mpi by tests/slurm/test_preempt_requeue.sh.
set -euo pipefail

rank=${PMIX_RANK:-${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-0}}}
world=${OMPI_COMM_WORLD_SIZE:-${SLURM_NTASKS:-1}}
checkpoint_dir=
output=
while (($#)); do
  case $1 in
    --checkpoint-dir) checkpoint_dir=$2; shift 2 ;;
    --output) output=$2; shift 2 ;;
    *) shift ;;
  esac
done
[[ -n $checkpoint_dir && -n $output ]] || { echo "preempt_double: needs --checkpoint-dir and --output" >&2; exit 2; }
checkpoint=$checkpoint_dir/step_1.ckpt

if [[ -f $checkpoint ]]; then
  echo "double rank $rank: resumed from $checkpoint"
  if ((rank == 0)); then
    echo "model after resume" >"$output.tmp" && mv "$output.tmp" "$output"
  fi
  exit 0
fi

signal=
trap 'signal=USR1' USR1
trap 'signal=TERM' TERM
echo "double rank $rank: training"
for _ in $(seq 600); do
  [[ -z $signal ]] || break
  # Slurm signals the task's whole process group: the sleep dies of SIGUSR1
  # too, while this shell runs its trap.
  sleep 0.1 || true
done
[[ -n $signal ]] || { echo "double rank $rank: no signal within 60 s" >&2; exit 1; }
echo "double rank $rank: got SIG$signal, checkpointing"
# Like the trainer's collective stop decision: no rank exits before every rank
# has seen the signal (mpirun kills the others when the first one exits 3).
touch "$checkpoint_dir/signalled.$rank"
for _ in $(seq 100); do
  (($(find "$checkpoint_dir" -name 'signalled.*' | wc -l) >= world)) && break
  sleep 0.1
done
if ((rank == 0)); then
  echo "checkpoint" >"$checkpoint.tmp" && mv "$checkpoint.tmp" "$checkpoint"
fi
exit 3
