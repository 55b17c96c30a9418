#!/usr/bin/env bash
# Every file a run writes carries its run id (an owner record, .NAME.run), and
# a run touches no file that is not proven its own:
#  * pruning: run Y resumed in a folder that also holds run X's checkpoints
#    (Y's newest) prunes Y's files to --keep-checkpoints and leaves X's, saying so;
#  * an --output or --metrics of another run, or holding a file of another
#    kind (a checkpoint as --output, a model file as --metrics), is refused at
#    start-up (exit 2) naming the path and the owner, and nothing is written
#    (--check-env refuses it alike);
#  * an empty owner record, and an output that start-up would make a folder
#    of, are refused alike;
#  * a copy of a run's checkpoint folder resumed for longer (a fork) is
#    refused the run's model and metrics, and writes its own;
#  * a refused run leaves no folder it made behind.
# shellcheck source=tests/checkpoint/lib.sh
source "$(dirname "$0")/lib.sh"

common=(--eval false --log-every 1000 --model convnet --optimizer sgd --momentum 0.9 --batch-size 32 --checkpoint-every-steps 1)
# 512 samples / 2 ranks / 32 = 8 steps per epoch. X: steps 1-3; Y: steps 1-8 (another seed).
train 2 x.log "${common[@]}" --seed 3 --max-steps 3 --keep-checkpoints 10 --output x.pth --metrics x.jsonl --checkpoint-dir ckpt
expect_in x.log '^RESULT train_seconds=[0-9.]+ images_per_second=[0-9.]+ test_accuracy=none$'  # --eval false
train 2 y.log "${common[@]}" --seed 4 --epochs 1 --keep-checkpoints 10 --output y.pth --metrics "" --checkpoint-dir ckpt_y
cp -p ckpt_y/ckpt-e0000-s00000[45678].pt ckpt_y/.ckpt-e0000-s00000[45678].pt.run ckpt_y/ckpt-e0001-s000008.pt \
  ckpt_y/.ckpt-e0001-s000008.pt.run ckpt/
x_files=$(cd ckpt && md5sum ckpt-e0000-s00000[123].pt)

# Y continues in the shared folder from its newest file and keeps 3 of its own.
train 2 y_more.log "${common[@]}" --seed 4 --epochs 2 --output y_more.pth --metrics "" --checkpoint-dir ckpt --resume auto \
  --keep-checkpoints 3
expect_in y_more.log 'resumed from checkpoint ckpt/ckpt-e0001-s000008.pt'
expect_in y_more.log "ckpt holds 3 checkpoint\(s\) not proven this run's \(run [0-9a-f]{16}; another run's, or without an owner record\): they are never pruned"
[[ $(cd ckpt && md5sum ckpt-e0000-s00000[123].pt 2>/dev/null) == "$x_files" ]] ||
  fail "run Y's pruning deleted or changed run X's checkpoints: $(ls ckpt)"
[[ $(find ckpt -name 'ckpt-*.pt' | sort | tr '\n' ' ') == \
  "ckpt/ckpt-e0000-s000001.pt ckpt/ckpt-e0000-s000002.pt ckpt/ckpt-e0000-s000003.pt ckpt/ckpt-e0001-s000014.pt ckpt/ckpt-e0001-s000015.pt ckpt/ckpt-e0002-s000016.pt " ]] ||
  fail "expected X's 3 and Y's newest 3 checkpoints, found: $(find ckpt -name 'ckpt-*.pt' | sort | tr "\n" " ")"
echo "ok: Y pruned to its newest 3, X's 3 left: $(find ckpt -name 'ckpt-*.pt' | sort | tr '\n' ' ')"

[[ -f ckpt/.ckpt-e0000-s000003.pt.run && -f .x.pth.run && -f .x.jsonl.run ]] ||
  fail "expected owner records beside X's checkpoints, model and metrics: $(ls -A . ckpt)"
before=$(md5sum x.pth x.jsonl ckpt/*.pt)
# expect_refused LOG PATTERN [options...]: exit 2, one error line matching
# PATTERN, nothing changed, and no folder new/ (the refused run's outputs) left.
expect_refused() {
  local log=$1 pattern=$2 rc=0
  shift 2
  run 2 "$log" "${common[@]}" --epochs 1 "$@" || rc=$?
  [[ $rc == 2 ]] || { cat "$log"; fail "$log: exit code $rc, expected 2"; }
  [[ $(grep -c 'error:' "$log") == 1 ]] || { cat "$log"; fail "$log: expected exactly one error line"; }
  expect_in "$log" "$pattern"
  [[ $(md5sum x.pth x.jsonl ckpt/*.pt) == "$before" ]] || fail "$log: a refused run changed a file"
  [[ ! -e new ]] || fail "$log: the refused run left $(find new) behind"
  echo "ok ($log): $(grep -m1 -o 'error: .*' "$log" | cut -c1-260)"
  # --check-env runs the same start-up checks: it fails alike, writing nothing.
  rc=0
  run 2 "check-$log" "${common[@]}" --epochs 1 "$@" --check-env || rc=$?
  [[ $rc == 2 ]] || { cat "check-$log"; fail "check-$log: --check-env exited $rc, expected 2"; }
  expect_in "check-$log" "$pattern"
  [[ ! -e new ]] || fail "check-$log: --check-env left $(find new) behind"
}
expect_refused other_model.log \
  "--output x.pth belongs to another run \(run [0-9a-f]{16}, its checkpoints in $PWD/ckpt; owner record $PWD/.x.pth.run\): a run never replaces or appends to another run's files; continue that run \(--checkpoint-dir $PWD/ckpt --resume auto\), or give this run its own --output" \
  --seed 5 --output x.pth --metrics "" --checkpoint-dir new/ckpt
expect_refused other_metrics.log "--metrics x.jsonl belongs to another run \(run [0-9a-f]{16}" \
  --seed 5 --output new/z.pth --metrics x.jsonl --checkpoint-dir new/ckpt
expect_refused no_identity.log "--output x.pth belongs to another run" --seed 5 --output x.pth --metrics ""
expect_refused kind_checkpoint.log \
  "--output ckpt/ckpt-e0000-s000001.pt is a checkpoint file \(run [0-9a-f]{16}, its checkpoints in $PWD/ckpt\), not a model file" \
  --seed 3 --output ckpt/ckpt-e0000-s000001.pt --metrics "" --checkpoint-dir new/ckpt
expect_refused kind_model.log "--metrics y.pth is a model file \(run [0-9a-f]{16}.*\), not a metrics file" \
  --seed 4 --output new/y.pth --metrics y.pth --checkpoint-dir new/ckpt
# A damaged guard refuses: an empty owner record proves nothing either way.
cp -p .x.pth.run x.pth.run.good
: >.x.pth.run
expect_refused empty_record.log "--output x.pth: its owner record $PWD/.x.pth.run is empty, so whose file it is cannot be told" \
  --seed 5 --output x.pth --metrics "" --checkpoint-dir new/ckpt
mv x.pth.run.good .x.pth.run
# An output that start-up would make a folder of could never be written.
expect_refused file_as_folder.log "--output new is a folder that --checkpoint-dir new/ck needs" \
  --seed 5 --output new --metrics "" --checkpoint-dir new/ck
# A copy of X's checkpoint folder, resumed for longer, is a run of its own:
# it never replaces X's model and metrics while X's folder is there.
mkdir new_copy
cp -p ckpt/ckpt-e0000-s00000[123].pt ckpt/.ckpt-e0000-s00000[123].pt.run new_copy/
rc=0
run 2 fork.log "${common[@]}" --seed 3 --max-steps 5 --output x.pth --metrics x.jsonl --checkpoint-dir new_copy \
  --resume auto || rc=$?
[[ $rc == 2 ]] || { cat fork.log; fail "fork.log: exit code $rc, expected 2"; }
expect_in fork.log "and this run continues a copy of it from $PWD/new_copy: a copy never replaces the files of the run it came from"
[[ $(md5sum x.pth x.jsonl ckpt/*.pt) == "$before" ]] || fail "the copy changed X's files"
train 2 fork_own.log "${common[@]}" --seed 3 --max-steps 5 --output new_copy.pth --metrics new_copy.jsonl \
  --checkpoint-dir new_copy --resume auto
echo "ok: a resumed copy is refused X's outputs and writes its own"
rm -r new_copy new_copy.pth new_copy.jsonl
# Any start-up refusal leaves none of the folders it made: here, missing data.
rc=0
mpi 2 "$CIFAR_MPI" --data missing.h5 "${common[@]}" --output new/m.pth --metrics new/m.jsonl --checkpoint-dir new/a/ckpt \
  --tensorboard new/tb >missing.log 2>&1 || rc=$?
[[ $rc != 0 && ! -e new ]] || { cat missing.log; fail "a run refused for missing data exited $rc and left: $(find new)"; }
echo "ok: a refusal for missing data left no folder"
echo PASS
