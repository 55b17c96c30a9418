#!/usr/bin/env bash
# tests/slurm/test_startup_faults.sh — start-up cannot wait without bound,
# under a real (private, one-node) Slurm: jobs/train.slurm launches cifar_mpi
# on 2 ranks through srun --mpi=pmix (which does not end a job when one task
# exits: the ranks' own clock must), with a start-up fault injected
# (CIFAR_STARTUP_FAULT) and --startup-timeout 8:
#   1. rank 1 exits before MPI starts: rank 0 waits in MPI_Init;
#   2. rank 0 stalls before the first collective (the reading of the options).
# Each job must end FAILED within the deadline and a margin for Slurm, its
# log naming the rank, the stage and the cause; no restart (CIFAR_MAX_RESTARTS=0).
# Prints one table row per case.
#
#   test_startup_faults.sh --repo DIR --build DIR --data FILE
# shellcheck source=tests/slurm/job_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/job_test_lib.sh"

job_test_parse_data_args "$@"
readonly kNtasks=2 kDeadline=8 kSlack=30

started=$SECONDS
job_test_start
rows=()

# run_case NAME RANK STAGE KIND LINE_REGEX...: one job with the fault.
run_case() {
  local name=$1 rank=$2 stage=$3 kind=$4
  shift 4
  local job log state exit_code t0=$SECONDS
  job=$(job_test_submit "$name" "$kNtasks" "CIFAR_BUILD=$JOB_TEST_BUILD" "CIFAR_RUN_DIR=$JOB_TEST_WORK/$name" \
    CIFAR_CONFIG= "CIFAR_DATA=$JOB_TEST_DATA" CIFAR_MAX_RESTARTS=0 \
    "CIFAR_STARTUP_FAULT=rank=$rank,stage=$stage,kind=$kind" \
    "CIFAR_EXTRA_ARGS=--epochs 1 --batch-size 16 --eval false --startup-timeout $kDeadline")
  mini_cluster_log "submitted $name as job $job: rank $rank $kind at start-up stage '$stage'"
  state=$(mini_cluster_wait_job "$job" $((kDeadline + kSlack))) || true
  local seconds=$((SECONDS - t0))
  exit_code=$(mini_cluster_job_field "$job" ExitCode)
  job_test_show_log "$name" "$job"
  mini_cluster_log "job $job ($name): $state, exit code $exit_code, ${seconds}s after submission"
  [[ $state == FAILED ]] || job_test_fail "job $job ($name) ended '$state', expected FAILED within $((kDeadline + kSlack)) s"
  local regex
  for regex in "$@"; do job_test_expect_in_log "$name" "$job" 1 "$regex"; done
  log=$(job_test_log_file "$name" "$job")
  rows+=("| srun | $rank | $stage | $kind | $seconds (from submission) | $exit_code | $(grep -m1 'did not end within' "$log" | cut -c1-160) |")
}

# Rank 0 waits in MPI_Init for a rank that is gone; its clock ends it.
run_case exit-before-mpi 1 MPI-start exit \
  "injected fault \(CIFAR_STARTUP_FAULT\): rank 1 exits at start-up stage 'MPI start'" \
  "launcher rank 0: start-up stage 'MPI start' did not end within $kDeadline s \(--startup-timeout\): MPI_Init waits for every rank" \
  'step failed with exit code 4 '
# Rank 1 waits in the options' agreement for rank 0, which stalls.
run_case stall-before-collective 0 options stall \
  "^\[rank 1/2 [^]]*\] error: start-up stage 'options' did not end within $kDeadline s \(--startup-timeout\): this rank had done its part and waited for the others" \
  'step failed with exit code 4 '

echo "| launcher | rank | stage | fault | s to the job's end | exit code | first message |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
mini_cluster_log "PASS: both start-up faults ended their jobs within --startup-timeout $kDeadline s; $((SECONDS - started))s in all"
