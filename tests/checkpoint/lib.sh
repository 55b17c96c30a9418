# shellcheck shell=bash
# Shared by the checkpoint test scripts (sourced): the e2e helpers (work
# folder, mpi, fail), a 2-rank training run and an exact model comparison.
# shellcheck source=tests/e2e/common.sh
source "$SOURCE_DIR/tests/e2e/common.sh"

# quiet: the options most runs share (no metrics, no evaluation, few progress lines).
# shellcheck disable=SC2034  # used by the scripts that source this file
quiet=(--metrics "" --eval false --log-every 1000)

# run NP LOG [cifar_mpi options...]: returns the program's exit code.
run() {
  local np=$1 log=$2
  shift 2
  local rc=0
  mpi "$np" "$CIFAR_MPI" --data "$CKPT_DATA" "$@" >"$log" 2>&1 || rc=$?
  return $rc
}
# train NP LOG [options...]: a run that must succeed.
train() {
  local log=$2
  run "$@" || { cat "$log"; fail "run logged in $log failed"; }
}
# identical A B DESCRIPTION: parameter for parameter, relative tolerance 0.
identical() {
  echo "--- $3"
  compare "$1" "$2" 0 "$3: parameters differ"
}
expect_in() {  # expect_in FILE REGEX
  grep -Eq -- "$2" "$1" || { cat "$1"; fail "$1 lacks /$2/"; }
}

# rank_pid_of MARKER RANK: the pid of rank RANK of the run whose --output is
# MARKER (a path unique to the run), or nothing while it has none.
rank_pid_of() {
  local pid
  for pid in $(pgrep -f -- "--output $1" || true); do
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == cifar_mpi ]] || continue
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && echo "$pid"
  done
  return 0
}
# expect_preempted LAUNCHER LOG: the background run LAUNCHER (logging to LOG)
# exits 3, and no rank was aborted or killed by a signal.
expect_preempted() {
  local rc=0
  wait "$1" || rc=$?
  [[ $rc == 3 ]] || { cat "$2"; fail "the preempted run exited $rc, expected 3"; }
  if grep -Eqi 'MPI_ABORT|exited on signal|User defined signal' "$2"; then
    cat "$2"
    fail "a rank was aborted or killed, not stopped cleanly"
  fi
}
