#!/usr/bin/env bash
# Start-up cannot wait without bound (process/startup_deadline.hpp), under
# mpirun: one rank exits before MPI starts, another stalls before the first
# collective, a third stalls as the communicators are built. Each job must end
# within --startup-timeout and a few seconds, with the rank, the stage and the
# cause in its log, and leave no rank behind. Prints one table row per case:
# launcher, rank, stage, seconds to the job's end, exit code, the message.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/common.sh
source "$here/../e2e/common.sh"
# shellcheck source=tests/robustness/faults.sh
source "$here/faults.sh"
readonly deadline_s=5 slack_s=25 world=2

rows=()
# run_case RANK STAGE KIND EXPECTED_RC LINE_REGEX...: one job with the fault;
# every LINE_REGEX must match a line of its log.
run_case() {
  local rank=$1 stage=$2 kind=$3 expected_rc=$4
  shift 4
  echo "=== rank $rank $kind at start-up stage '$stage' ==="
  fault_started=$(date +%s.%N)
  CIFAR_STARTUP_FAULT="rank=$rank,stage=$stage,kind=$kind" mpi "$world" -x CIFAR_STARTUP_FAULT "$CIFAR_MPI" \
    --data "$E2E_DATA" --model convnet --batch-size 8 --epochs 1 --eval false --metrics "" \
    --startup-timeout "$deadline_s" --output "$run_tag/model.pth" >run.log 2>&1 &
  job=$!
  wait_for_end $((deadline_s + slack_s))
  cat run.log
  if [[ $expected_rc == nonzero ]]; then
    ((job_rc != 0)) || fail "rank $rank $kind at '$stage': the job ended with exit code 0"
  else
    ((job_rc == expected_rc)) || fail "rank $rank $kind at '$stage': exit code $job_rc, expected $expected_rc"
  fi
  local regex
  for regex in "$@"; do
    grep -qE "$regex" run.log || fail "rank $rank $kind at '$stage': no line matching '$regex'"
  done
  expect_no_rank_left
  local message
  message=$(grep -m1 -E 'did not end within|exited|exiting improperly' run.log | cut -c1-160 || true)
  rows+=("| mpirun | $rank | $stage | $kind | $end_seconds | $job_rc | ${message:-(see log)} |")
}

# Before MPI_Init: mpirun sees the rank end and ends the job; the rank's own
# line names it and its stage.
run_case 1 MPI-start exit nonzero \
  "injected fault \(CIFAR_STARTUP_FAULT\): rank 1 exits at start-up stage 'MPI start'"
# Before the first collective (the reading of the options): the other rank
# waits in it; both clocks run out, each rank says where it was.
run_case 0 options stall 4 \
  "^\[rank 1/2 [^]]*\] error: start-up stage 'options' did not end within $deadline_s s \(--startup-timeout\): this rank had done its part and waited for the others" \
  "^\[rank 0/2 [^]]*\] error: start-up stage 'options' did not end within $deadline_s s \(--startup-timeout\): this rank's own part of the stage did not finish"
# In the stage whose own collectives build the communicators.
run_case 1 communication stall 4 \
  "^\[rank 0/2 [^]]*\] error: start-up stage 'communication' did not end within $deadline_s s \(--startup-timeout\): this rank was still in the stage, whose collectives meet every rank"

echo "| launcher | rank | stage | fault | s to the job's end | exit code | first message |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo "PASS: every start-up fault ended its job within --startup-timeout $deadline_s s + $slack_s s"
