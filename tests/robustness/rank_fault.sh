#!/usr/bin/env bash
# A failure of one rank alone (CIFAR_FAULT_INJECT: an Error thrown as an
# optimiser step begins, as a failed CUDA call would) ends the whole job
# within 10 s, with --comm-timeout left at its 600 s: the failing rank's
# report, naming its rank, epoch, step and cause, is the job's first error
# report of any rank, the exit code is 1 (a runtime failure), and no rank is
# left. Once on 2 ranks and once on 4, each line of output stamped with the
# time it came; prints a table of the cases.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/common.sh
source "$here/../e2e/common.sh"
readonly limit_s=10

# stamp: each line of standard input prefixed with the time it arrived.
stamp() {
  local line
  while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done
}

# fault NP RANK STEP: one run, its output in npNP.log; its exit code and the
# time it ended in npNP.rc and npNP.end. A hang is killed after 120 s.
fault() {
  local np=$1 rank=$2 step=$3
  {
    local rc=0
    CIFAR_FAULT_INJECT="rank=$rank,step=$step,kind=throw" timeout -s KILL 120 \
      "$MPIEXEC" --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader,tcp \
      --mca btl_vader_single_copy_mechanism none -np "$np" "$CIFAR_MPI" --data "$E2E_DATA" --model convnet \
      --batch-size 8 --epochs 1000 --eval false --metrics "" --log-every 1000 --output "$PWD/np$np/model.pth" 2>&1 ||
      rc=$?
    echo "$EPOCHREALTIME" >"np$np.end"
    echo "$rc" >"np$np.rc"
  } | stamp >"np$np.log"
}

table=("| world size | faulty rank | step | fault to job end (s) | exit code | message |" "|---|---|---|---|---|---|")
check() {
  local np=$1 rank=$2 step=$3 log rc first report seconds
  log=np$np.log
  fault "$np" "$rank" "$step"
  cat "$log"
  rc=$(cat "np$np.rc")
  report="\[rank $rank/$np [^]]*\] error: failed in epoch [0-9]+ at optimiser step $step: injected fault"
  # The first report of any rank; mpirun's own MPI_ABORT notice may come
  # before it (it travels apart from the ranks' output).
  first=$(grep -m 1 -E '\] error: ' "$log" || true)
  grep -qE -- "$report" <<<"$first" || fail "np $np: the first error line is not rank $rank's report at step $step: $first"
  # The fault came before its report and before mpirun's notice of the abort.
  seconds=$(grep -E -- "$report|MPI_ABORT was invoked" "$log" |
    awk -v end="$(cat "np$np.end")" 'NR == 1 || $1 < t { t = $1 } END { printf "%.2f", end - t }')
  ((rc == 1)) || fail "np $np: exit code $rc, expected 1 (a runtime failure)"
  awk -v t="$seconds" -v l="$limit_s" 'BEGIN { exit !(t < l) }' ||
    fail "np $np: the job took $seconds s to end after the fault (limit $limit_s s)"
  if pgrep -f -- "$PWD/np$np/model.pth" >/dev/null; then fail "np $np: a rank outlived mpirun"; fi
  table+=("| $np | $rank | $step | $seconds | $rc | \`$(cut -d' ' -f2- <<<"$first")\` |")
  echo "PASS: np $np, rank $rank failing at step $step ended the job in $seconds s with exit code $rc"
}

check 2 1 5
check 4 2 3
printf '%s\n' "${table[@]}"
