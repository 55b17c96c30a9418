#!/usr/bin/env bash
# Resuming at another world size when the global micro-batch does not divide
# among the new ranks, end to end. A 4-rank run with 2 per
# rank and 3 micro-batches per optimiser step (24 samples per step) is
# checkpointed after 2 of the 5 steps of epoch 0 (global position 48), and
# resumed on 3 ranks, which do not divide the micro-batch of 8:
#   * --elastic-batch global (the default): 24 = 3 ranks x 2 x 4 micro-batches
#     (gradient accumulation). The sample trace (CIFAR_MPI_TEST_SAMPLE_TRACE)
#     shows every sample of both epochs trained exactly once and every
#     optimiser step training the 4-rank run's samples; with SGD (ConvNet has
#     no BatchNorm, no augmentation) the model equals the 4-rank run's to 1e-5.
#   * --elastic-batch per-rank: 3 ranks x 2 x 3 = 18 per step; the learning
#     rate is scaled by 18/24 (0.05 -> 0.0375, in the log and every metrics
#     row), the rest of epoch 0 is still trained exactly once, in steps of 18,
#     and the run's length in steps follows (2 done + 4 + 7 = 13).
# 120 samples: no padding on 3 or 4 ranks, so the 3-rank epochs cut into the
# same steps of 24 as the 4-rank ones.
# shellcheck source=tests/checkpoint/lib.sh
source "$(dirname "$0")/lib.sh"

"$CIFAR_PACK" --synthetic 120 --test-count 16 --seed 3 --output elastic_batch.h5 >pack.log 2>&1 ||
  { cat pack.log; fail "cifar_pack"; }
CKPT_DATA=$PWD/elastic_batch.h5
N=120
opts=(--eval false --log-every 1000 --model convnet --optimizer sgd --momentum 0.9 --lr 0.05 --schedule constant
  --seed 5 --shuffle true --augment false --epochs 2 --batch-size 2 --accumulate 3)

traced straight 4 straight.log "${opts[@]}" --metrics "" --output straight.pth --checkpoint-dir ckpt \
  --checkpoint-every-steps 2 --keep-checkpoints 100
mid=ckpt/ckpt-e0000-s000002.pt
[[ -f $mid ]] || fail "no step-2 checkpoint: $(ls ckpt)"
steps straight.rank* >straight.steps
cat straight.rank* | awk '$2 == 0 && $4 < 2' >head.trace  # what the 4-rank run trained before its checkpoint

background global.out traced global 3 global.log "${opts[@]}" --metrics "" --output global.pth --resume "$mid"
background per_rank.out traced per_rank 3 per_rank.log "${opts[@]}" --metrics per_rank.jsonl --output per_rank.pth \
  --resume "$mid" --elastic-batch per-rank
wait_background "the resumed runs"

# --elastic-batch global: gradient accumulation keeps 24 per step.
expect_in global.log 'elastic resume: written on 4 rank\(s\) with 2 per rank x 3 micro-batches, continued on 3 rank\(s\) with 2 per rank x 4 micro-batches \(gradient accumulation\): the same global batch of 24 per optimiser step \(--elastic-batch global\)'
grep -m1 'elastic resume' global.log
check_exactly_once "4 -> 3, accumulating" 1 global.rank*
same_as_straight "4 -> 3, accumulating" global.pth head.trace global.rank*

# --elastic-batch per-rank: 18 per step, the learning rate scaled with it.
expect_in per_rank.log 'continued on 3 rank\(s\) with 2 per rank x 3 micro-batches: the global batch per optimiser step changes from 24 to 18 \(--elastic-batch per-rank\); the learning rate follows it \(linear scaling\): --lr 0.05 x 18/24 = 0.0375'
grep -m1 'elastic resume' per_rank.log
expect_in per_rank.log 'the run now has 13 optimiser steps'
for epoch in 0 1; do check_exactly_once "4 -> 3, per-rank" $epoch head.trace per_rank.rank*; done
sizes=$(steps per_rank.rank* | awk '$1 == 0 { print NF - 2 }' | sort -u | tr '\n' ' ')
[[ $sizes == "18 " ]] || fail "per-rank: the resumed steps of epoch 0 hold $sizes samples, expected 18 each"
echo "4 -> 3, per-rank: the rest of epoch 0 in $(steps per_rank.rank* | awk '$1 == 0' | wc -l) steps of 18"
rows=$(grep -c '"lr": 0.0375,' per_rank.jsonl || true)
[[ $rows == 2 ]] || { cat per_rank.jsonl; fail "per-rank: $rows of the 2 metrics rows have lr 0.0375"; }
echo "per-rank: both metrics rows have lr 0.0375"
echo PASS
