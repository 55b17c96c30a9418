#!/usr/bin/env bash
# Unusable checkpoints: a truncated newest file is skipped by --resume auto
# (with a warning; the next newest is used and the result is still exact),
# and refused with one clear error by --resume PATH; a checkpoint of another
# model is refused naming the file and the --model to pass (with every other
# differing key: tests/checkpoint/run_identity.sh).
# shellcheck source=tests/checkpoint/lib.sh
source "$(dirname "$0")/lib.sh"

opts=("${quiet[@]}" --model convnet --optimizer sgd --momentum 0.9 --lr 0.05 --seed 4 --batch-size 16 --epochs 1)
train 2 straight.log "${opts[@]}" --output straight.pth --checkpoint-dir ckpt --checkpoint-every-steps 6 \
  --keep-checkpoints 10
ls ckpt
newest=ckpt/ckpt-e0001-s000016.pt
[[ -f $newest && -f ckpt/ckpt-e0000-s000012.pt ]] || fail "expected checkpoints at steps 12 and 16"
head -c 20000 "$newest" >truncated.pt && mv truncated.pt "$newest"

# Another model: refused (below), meanwhile in the background; it reads the
# step-12 checkpoint, which the --resume auto run resumes from and keeps.
other_model() {
  local rc=0
  run 2 model.log "${quiet[@]}" --model resnet18 --optimizer sgd --batch-size 16 --epochs 1 --output m.pth \
    --resume ckpt/ckpt-e0000-s000012.pt || rc=$?
  [[ $rc == 6 ]] || { cat model.log; fail "resuming a convnet checkpoint as resnet18 exited $rc, expected 6"; }
}
background other_model.out other_model

train 2 auto.log "${opts[@]}" --output auto.pth --checkpoint-dir ckpt --resume auto
expect_in auto.log "skipping checkpoint '$newest' is not readable \(truncated or corrupt\?\)"
expect_in auto.log 'resumed from checkpoint ckpt/ckpt-e0000-s000012.pt'
identical straight.pth auto.pth "truncated newest skipped: resumed from step 12, same result"

# (That run ended by writing a good $newest: truncate it again.)
head -c 20000 "$newest" >truncated.pt && mv truncated.pt "$newest"
rc=0
run 2 path.log "${opts[@]}" --output path.pth --resume "$newest" || rc=$?
[[ $rc == 6 ]] || { cat path.log; fail "--resume of a truncated file exited $rc, expected 6"; }
expect_in path.log "checkpoint '$newest' is not readable \(truncated or corrupt\?\).*--resume none"
[[ $(grep -c 'not readable' path.log) == 1 ]] || { cat path.log; fail "the error should be reported once"; }
grep -m1 'not readable' path.log | cut -c1-300

wait_background "another model's checkpoint was not refused"
expect_in model.log "ckpt-e0000-s000012.pt' was written by a different run: --model convnet there, resnet18 here;.*\(--model convnet "
grep -m1 'written by' model.log
echo PASS
