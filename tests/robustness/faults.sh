# shellcheck shell=bash
# Shared parts of the rank-failure tests (sourced after ../e2e/common.sh):
# start a long training run in the background, wait until it trains, find one
# rank's process, and time how long the job takes to end after a fault.
# Whatever happens, the trap leaves no process of the run behind.

readonly fault_np=4
# Every process of the run has this folder in its arguments (the output path),
# so `pgrep -f` finds exactly this run's mpirun and ranks.
readonly run_tag=$PWD/fault_run
job=

# PIDs of this run's cifar_mpi processes (not mpirun, not this script).
run_ranks() { pgrep -f -- "$CIFAR_MPI .*$run_tag" | while read -r pid; do
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) == cifar_mpi ]] && echo "$pid"; done || true; }

cleanup_run() {
  local pids
  mapfile -t pids < <(run_ranks)
  ((${#pids[@]} == 0)) || kill -CONT "${pids[@]}" 2>/dev/null || true
  ((${#pids[@]} == 0)) || kill -9 "${pids[@]}" 2>/dev/null || true
  [[ -z $job ]] || kill -9 "$job" 2>/dev/null || true
}
trap 'cleanup_run' EXIT

# start_run [cifar_mpi options...]: 4 ranks, small batches, far more epochs
# than the test will ever wait for; progress on every step.
start_run() {
  mpi "$fault_np" "$CIFAR_MPI" --data "$E2E_DATA" --model convnet --batch-size 8 --epochs 100000 --eval false \
    --metrics "" --log-every 1 --output "$run_tag/model.pth" "$@" >run.log 2>&1 &
  job=$!
}

# Waits until rank 0 reports training steps (so every rank is in the loop).
wait_until_training() {
  local i
  for ((i = 0; i < 1200; i++)); do
    (($(grep -c '^.*Epoch: .* Batch: ' run.log || true) >= 3)) && return 0
    kill -0 "$job" 2>/dev/null || { cat run.log; fail "the run ended before it trained"; }
    sleep 0.1
  done
  cat run.log
  fail "the run did not start training within 120 s"
}

# The PID of rank $1's process (its OMPI_COMM_WORLD_RANK). Looked for again
# for up to 10 s while the run lives: under heavy load a scan of /proc can
# miss a process that is there (seen in a loaded cuda-preset run: "no process
# of rank 2 found" while rank 0 trained, which needs every rank).
rank_pid() {
  local pid i
  for ((i = 0; i < 100; i++)); do
    for pid in $(run_ranks); do
      if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
        echo "$pid"
        return 0
      fi
    done
    kill -0 "$job" 2>/dev/null || break
    sleep 0.1
  done
  pgrep -af -- "$run_tag" || true
  fail "no process of rank $1 found"
}

# wait_for_end LIMIT_S: waits for mpirun to exit; sets job_rc and
# end_seconds (since fault_started, set by the caller right before the fault).
# shellcheck disable=SC2034,SC2154  # job_rc, end_seconds and fault_started are the caller's
wait_for_end() {
  local limit=$1 i
  for ((i = 0; i < limit * 100; i++)); do
    kill -0 "$job" 2>/dev/null || break
    sleep 0.01
  done
  local stop
  stop=$(date +%s.%N)
  if kill -0 "$job" 2>/dev/null; then
    cat run.log
    fail "the job still runs ${limit} s after the fault"
  fi
  job_rc=0
  wait "$job" || job_rc=$?
  job=
  end_seconds=$(awk -v a="$fault_started" -v b="$stop" 'BEGIN { printf "%.2f", b - a }')
}

# No rank may outlive mpirun.
expect_no_rank_left() {
  local left
  left=$(run_ranks | tr '\n' ' ')
  [[ -z $left ]] || { cat run.log; fail "cifar_mpi processes left after mpirun ended: $left"; }
}
