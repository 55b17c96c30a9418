#!/usr/bin/env bash
# Resume continues exactly: the final parameters of an interrupted-and-resumed
# run equal those of a straight run bit for bit (compare_models --rtol 0),
#   * from a mid-epoch step checkpoint (--resume PATH): SGD with momentum,
#     cosine schedule, augmentation and shuffling, so the sampler position,
#     the loader's augmentation stream and the optimiser state must all be
#     restored;
#   * from a step checkpoint written after an epoch's last step, before the
#     epoch's end (what a preemption during that step leaves);
#   * "1 epoch, stop, resume for 1 more" (--resume auto): Adam;
# plus --keep-checkpoints, a fresh start when the folder is empty, and a
# world size that cannot keep the global batch refused with the numbers named.
# shellcheck source=tests/checkpoint/lib.sh
source "$(dirname "$0")/lib.sh"

sgd=("${quiet[@]}" --model convnet --optimizer sgd --momentum 0.9 --lr 0.05 --schedule cosine --seed 5 --augment true
  --batch-size 16 --epochs 2)
# 512 samples / 2 ranks / 16 = 16 steps per epoch: checkpoints at steps 4, 8,
# 12, 16 (once, at epoch 0's end: e0001), 20, 24, 28 and the end (32).
train 2 straight.log "${sgd[@]}" --output straight.pth --checkpoint-dir straight_ckpt \
  --checkpoint-every-steps 4 --keep-checkpoints 100
ls straight_ckpt
[[ -f straight_ckpt/ckpt-e0001-s000028.pt && -f straight_ckpt/ckpt-e0001-s000016.pt &&
  -f straight_ckpt/ckpt-e0002-s000032.pt ]] || fail "expected step and epoch checkpoints in straight_ckpt"
# The state after epoch 0's last step, before its end (its evaluation, its
# metrics row), is written by a stop at that step: SIGUSR1 as step 15 begins.
rc=0
CIFAR_FAULT_INJECT=rank=1,step=15,kind=usr1 run 2 stopped.log "${sgd[@]}" --output stopped.pth \
  --checkpoint-dir straight_ckpt_stop || rc=$?
[[ $rc == 3 && -f straight_ckpt_stop/ckpt-e0000-s000016.pt ]] ||
  { cat stopped.log; fail "a stop at epoch 0's last step: exit $rc, $(ls straight_ckpt_stop)"; }

train 2 mid.log "${sgd[@]}" --output mid.pth --resume straight_ckpt/ckpt-e0001-s000028.pt
expect_in mid.log 'resumed from checkpoint .*ckpt-e0001-s000028.pt: epoch 1, 12 batch\(es\) of it done, step 28'
identical straight.pth mid.pth "2 epochs straight == resumed at epoch 1, batch 12 (step 28) from a step checkpoint"
train 2 mid0.log "${sgd[@]}" --output mid0.pth --resume straight_ckpt/ckpt-e0000-s000008.pt
identical straight.pth mid0.pth "2 epochs straight == resumed in epoch 0 at step 8"
train 2 last.log "${sgd[@]}" --output last.pth --resume straight_ckpt_stop/ckpt-e0000-s000016.pt
expect_in last.log 'resumed from checkpoint .*ckpt-e0000-s000016.pt: epoch 0, 16 batch\(es\) of it done, step 16'
identical straight.pth last.pth "2 epochs straight == resumed after epoch 0's last step, before its end"

adam=(--model convnet --optimizer adam --lr 0.002 --seed 9 --augment true --batch-size 16
  --metrics metrics.jsonl --log-every 1000)
train 2 adam_straight.log "${adam[@]}" --epochs 2 --output adam_straight.pth
train 2 adam_first.log "${adam[@]}" --epochs 1 --output adam_first.pth --checkpoint-dir adam_ckpt \
  --checkpoint-every-steps 3 --keep-checkpoints 2 --resume auto
expect_in adam_first.log 'no checkpoint in adam_ckpt; starting afresh'
kept=$(find adam_ckpt -name 'ckpt-*.pt' | wc -l)
[[ $kept == 2 ]] || fail "--keep-checkpoints 2 left $kept checkpoint(s): $(ls adam_ckpt)"
echo "--keep-checkpoints 2 kept: $(find adam_ckpt -mindepth 1 -maxdepth 1 -name '[!.]*' -printf '%f\n' | sort | tr '\n' ' ')"
train 2 adam_second.log "${adam[@]}" --epochs 2 --output adam_second.pth --checkpoint-dir adam_ckpt --resume auto
expect_in adam_second.log 'resumed from checkpoint .*ckpt-e0001-s000016.pt: epoch 1, 0 batch\(es\) of it done, step 16'
identical adam_straight.pth adam_second.pth "Adam: 2 epochs straight == 1 epoch, stop, resume for 1 more"
rows=$(grep -c '"epoch"' metrics.jsonl)
{ [[ $rows == 2 ]] && grep -q '"epoch": 0' metrics.jsonl && grep -q '"epoch": 1' metrics.jsonl; } ||
  fail "metrics.jsonl after the resume should hold epochs 0 and 1: $(cat metrics.jsonl)"

# Another world size that cannot keep the global batch of 32 (16 per rank x 2
# ranks): refused, naming the numbers (elastic.sh resumes at sizes that can).
rc=0
run 3 three_ranks.log "${sgd[@]}" --output three.pth --checkpoint-dir straight_ckpt --resume auto || rc=$?
[[ $rc == 6 ]] || { cat three_ranks.log; fail "resuming a 2-rank checkpoint on 3 ranks exited $rc, expected 6"; }
expect_in three_ranks.log 'ckpt-e0002-s000032.pt.*global batch of 32 samples per optimiser step \(16 per rank x 2 ranks\) does not divide among 3 ranks'
grep -m1 -o 'global batch of.*ranks' three_ranks.log
echo PASS
