#!/usr/bin/env bash
# --tensorboard curves equal the metrics file's after every way a run stops
# and resumes in the same folders (TensorBoard's own reader:
# tensorboard_check.py epochs):
#  * --max-steps inside an epoch, then the rest: the epoch's point written for
#    its part is replaced by the whole epoch's, as its metrics row is;
#  * --max-steps at an epoch's end, then the rest;
#  * preempted (SIGUSR1 to one rank, exit 3) inside an epoch, then the rest;
# and while a run writes a --tensorboard folder, a second run given the same
# folder is refused at start-up (exit 2), naming the holder, and writes no
# event file there.
CKPT_DATA=$E2E_DATA  # lib.sh's runs: the e2e data, 1024 samples
# shellcheck source=tests/checkpoint/lib.sh
source "$SOURCE_DIR/tests/checkpoint/lib.sh" "$1"
"$TOOLS_PYTHON" -c "import tensorboard" 2>/dev/null ||
  fail "this test needs $TOOLS_PYTHON with tensorboard: run tools/setup.sh (it makes .venv-tools)"
check() { "$TOOLS_PYTHON" "$SOURCE_DIR/tests/e2e/tensorboard_check.py" "$@" || fail "tensorboard_check.py $*"; }

# 1024 samples / 2 ranks / 32 = 16 steps per epoch.
opts=(--model convnet --optimizer adam --lr 0.002 --seed 4 --batch-size 32 --resume auto)
# in_parts NAME MAX_STEPS: NAME's run stops at --max-steps, then runs its 2 epochs, in its own folders.
in_parts() {
  local name=$1 steps=$2
  local own=("${opts[@]}" --log-every 4 --epochs 2 --metrics "$name.jsonl" --tensorboard "tb_$name"
    --checkpoint-dir "ckpt_$name" --output "$name.pth")
  train 2 "$name.1.log" "${own[@]}" --max-steps "$steps"
  train 2 "$name.2.log" "${own[@]}"
  check epochs "tb_$name" "$name.jsonl"
}
background mid.out in_parts mid 10
background edge.out in_parts edge 16

marker=$PWD/pre.pth  # unique on this machine: finds the run's ranks
pre=("${opts[@]}" --log-every 1 --metrics pre.jsonl --tensorboard tb_pre --checkpoint-dir ckpt_pre --output "$marker")
run 2 pre.1.log "${pre[@]}" --epochs 1000 &
launcher=$!
trap 'kill "$launcher" 2>/dev/null || true' EXIT  # a failed check does not leave the long run behind
until grep -q 'Epoch: 1 | Batch: 2/' pre.1.log 2>/dev/null; do
  kill -0 $launcher 2>/dev/null || { cat pre.1.log; fail "the run to preempt ended early"; }
  sleep 0.05
done
rank0=$(rank_pid_of "$marker" 0)
rank1=$(rank_pid_of "$marker" 1)
[[ -n $rank0 && -n $rank1 ]] || fail "the run's ranks were not found"
rc=0
run 2 second.log --epochs 1 --output second.pth --metrics "" --tensorboard tb_pre || rc=$?
[[ $rc == 2 ]] || { cat second.log; fail "a second writer of tb_pre exited $rc, expected 2"; }
expect_in second.log "error: --tensorboard tb_pre is in use by another job \(host $(hostname), pid $rank0,"
echo "ok: $(grep -o 'error: .*' second.log | cut -c1-200)"
kill -s USR1 "$rank1"
expect_preempted $launcher pre.1.log
[[ $(find tb_pre -name '*tfevents*' | wc -l) == 1 ]] || fail "tb_pre should hold the first run's event file only"
# To the end of the epoch it was preempted in (the checkpoint's e<epoch>).
epoch=$(find ckpt_pre -name 'ckpt-*.pt' | sed -n 's/.*ckpt-e0*\([0-9][0-9]*\)-s.*/\1/p' | sort -n | tail -1)
train 2 pre.2.log "${pre[@]}" --epochs $((epoch + 1))
check epochs tb_pre pre.jsonl
wait_background "a run stopped by --max-steps and resumed"
echo PASS
