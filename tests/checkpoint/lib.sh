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
# same A B DESCRIPTION: byte-identical model files (compare_models reads
# convnet files only; the speed94 models are compared this way).
same() {
  echo "--- $3"
  cmp "$1" "$2" || fail "$3: the model files differ"
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

# ---- Sample traces (the elastic resume tests) -------------------------------
# With CIFAR_MPI_TEST_SAMPLE_TRACE=PREFIX each rank appends a line per
# micro-batch to PREFIX.rank<R>: "epoch E step S batch B rank R: indices...".
# N: the training samples. The run the others are held against is the
# "straight" one: its traces' steps in straight.steps, its model straight.pth.

# traced NAME NP LOG [options...]: a run that must succeed, tracing to NAME.rank<R>.
traced() {
  local name=$1
  shift
  CIFAR_MPI_TEST_SAMPLE_TRACE=$PWD/$name train "$@"
}
# steps FILES...: one line per (epoch, step): the step's samples, sorted.
steps() {
  cat "$@" | awk '{ for (i = 9; i <= NF; ++i) print $2, $4, $i }' | sort -n -k1,1 -k2,2 -k3,3 |
    awk '{ key = $1 " " $2; if (key != last) { if (NR > 1) print line; line = key ":"; last = key } line = line " " $3 }
      END { if (NR > 0) print line }'
}
# check_exactly_once LABEL EPOCH FILES...: every sample of EPOCH trained once in FILES.
check_exactly_once() {
  local label=$1 epoch=$2 counts
  shift 2
  counts=$(cat "$@" | awk -v n="$N" -v e="$epoch" '$2 == e { for (i = 9; i <= NF; ++i) c[$i]++ }
    END { for (i = 0; i < n; ++i) { if (c[i] == 1) o++; else if (c[i] == 0) z++; else t++ }
          printf "once %d twice %d never %d\n", o, t, z }')
  echo "trace $label, epoch $epoch ($N samples): $counts"
  [[ $counts == "once $N twice 0 never 0" ]] || fail "$label: epoch $epoch was not trained exactly once: $counts"
}
# same_as_straight LABEL MODEL TRACES...: the traces (with what was trained
# before the resume) train epoch 0 exactly once and every optimiser step the
# straight run's samples, and MODEL equals the straight run's to 1e-5.
same_as_straight() {
  local label=$1 model=$2
  shift 2
  check_exactly_once "$label" 0 "$@"
  steps "$@" >"$model.steps"
  diff straight.steps "$model.steps" >/dev/null ||
    fail "$label: some optimiser step trained other samples than the straight run's"
  echo "$label: all $(wc -l <"$model.steps") optimiser steps trained the straight run's samples"
  "$COMPARE_MODELS" straight.pth "$model" --rtol 1e-5 | tail -n 1
  "$COMPARE_MODELS" straight.pth "$model" --rtol 1e-5 >/dev/null || fail "$label: the model differs from the straight run's"
}
