#!/usr/bin/env bash
# Two jobs never share an output. While job A trains, a job B given A's
# --checkpoint-dir, --output or --metrics is refused at start-up (exit code 2,
# one error line naming A's host and pid) and A's files stay A's. A job
# killed with SIGKILL leaves no stuck lock: the next job on the same paths
# starts, continues A's run, and deletes the partial files (.NAME.tmp-PID,
# and ..NAME.run.tmp-PID of the owner records beside the outputs) a
# kill leaves behind.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/common.sh
source "$here/../e2e/common.sh"
# shellcheck source=tests/robustness/faults.sh
source "$here/faults.sh"  # run_ranks, rank_pid, wait_until_training, the clean-up trap

a=$run_tag  # faults.sh finds the run's processes by this folder
mkdir -p "$a"
a_opts=(--data "$E2E_DATA" --batch-size 8 --epochs 100000 --eval false --log-every 1 --output "$a/model.pth"
  --metrics "$a/metrics.jsonl" --checkpoint-dir "$a/ckpt" --checkpoint-every-steps 2)
mpi 2 "$CIFAR_MPI" "${a_opts[@]}" >run.log 2>&1 &
job=$!
wait_until_training
holder="host $(hostname), pid $(rank_pid 0),"

# expect_busy N PATTERN [cifar_mpi options...]: job B number N is refused with
# exit code 2 and one error line. The three B jobs share no path but A's, so
# they run side by side (common.sh's `background`) while A trains.
check_busy() {
  local log=b$1.log pattern=$2 rc=0
  shift 2
  mpi 2 "$CIFAR_MPI" --data "$E2E_DATA" --epochs 1 --eval false "$@" >"$log" 2>&1 || rc=$?
  [[ $rc == 2 ]] || { cat "$log"; fail "job B ($*) exited $rc, expected 2"; }
  [[ $(grep -c 'error:' "$log") == 1 ]] || { cat "$log"; fail "job B: expected one error line"; }
  grep -qF -- "$pattern" "$log" || { cat "$log"; fail "job B's error does not say '$pattern'"; }
  grep -qF -- "$holder" "$log" || { cat "$log"; fail "job B's error does not name the holder '$holder'"; }
  echo "ok: $(grep -o 'error: .*' "$log" | cut -c1-250)"
}
expect_busy() { background "b$1.out" check_busy "$@"; }
expect_busy 1 "--checkpoint-dir $a/ckpt is in use by another job (host" \
  --output b1.pth --metrics "" --checkpoint-dir "$a/ckpt" --resume auto
expect_busy 2 "--output $a/model.pth is in use by another job" --output "$a/model.pth" --metrics ""
expect_busy 3 "--metrics $a/metrics.jsonl is in use by another job" --output b3.pth --metrics "$a/metrics.jsonl"
wait_background "a job B was not refused as expected"
kill -0 "$job" 2>/dev/null || { cat run.log; fail "job A did not survive job B"; }
[[ ! -e b1.pth && ! -e b3.pth ]] || fail "a refused job wrote its model"

# A crash: every rank of A killed; its lock files stay, its locks do not.
mapfile -t ranks < <(run_ranks)
kill -9 "${ranks[@]}"
wait "$job" || true
job=
[[ -f $a/.model.pth.lock && -f $a/ckpt/.cifar_mpi.lock ]] || fail "expected A's lock files to be left behind"
newest=$(find "$a/ckpt" -maxdepth 1 -name 'ckpt-*.pt' | sed -n 's/.*-s0*\([0-9][0-9]*\)\.pt/\1/p' | sort -n | tail -1)
[[ -n $newest ]] || fail "A left no checkpoint in $a/ckpt"
# Partial files of every kind a writer publishes: a checkpoint, the model and
# metrics files, and the owner records beside them.
partials=("$a/ckpt/.ckpt-e0000-s000099.pt.tmp-4242" "$a/.model.pth.tmp-4242" "$a/.metrics.jsonl.tmp-77"
  "$a/ckpt/..ckpt-e0000-s000099.pt.run.tmp-4242" "$a/..model.pth.run.tmp-4242" "$a/..metrics.jsonl.run.tmp-77")
touch "${partials[@]}"
mpi 2 "$CIFAR_MPI" "${a_opts[@]}" --resume auto --max-steps $((newest + 2)) \
  >c.log 2>&1 || { cat c.log; fail "the job after the crash did not run"; }
grep -q "resumed from checkpoint $a/ckpt/" c.log || { cat c.log; fail "did not resume A's run"; }
for partial in "${partials[@]}"; do
  grep -qF "removed $partial, a partial file left by an interrupted run" c.log || { cat c.log; fail "$partial not reported"; }
  [[ ! -e $partial ]] || fail "$partial is still there"
done
[[ -f $a/model.pth && ! -e $a/.model.pth.lock && ! -e $a/ckpt/.cifar_mpi.lock ]] ||
  fail "after a clean end: the model, and no lock files, expected: $(ls -A "$a" "$a/ckpt")"
echo PASS
