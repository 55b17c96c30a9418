#!/usr/bin/env bash
# --fused-optimizer (the graph-safe Adam/SGD) keeps checkpoints working:
#   * resumes are exact (compare_models --rtol 0) from a mid-epoch step
#     checkpoint, for SGD with Nesterov momentum and a cosine schedule and for
#     Adam, whose step count lives on the device between checkpoints;
#   * its checkpoints are those of the default optimiser: a run checkpointed
#     with --fused-optimizer true continues with it false (and back) and ends
#     within rounding of the straight run.
# shellcheck source=tests/checkpoint/lib.sh
source "$(dirname "$0")/lib.sh"

# close A B DESCRIPTION: within float32 rounding, compounded over a few steps.
close() {
  echo "--- $3"
  compare "$1" "$2" 1e-3 "$3: parameters differ beyond rounding"
}

# 512 samples / 2 ranks / 16 = 16 steps in the one epoch, checkpoints every 5 steps.
for opt in "sgd --momentum 0.9 --nesterov true --lr 0.05 --weight-decay 5e-4" "adam --lr 0.002 --weight-decay 1e-4"; do
  read -r -a o <<<"--optimizer $opt"
  name=${o[1]}
  args=("${quiet[@]}" --model convnet "${o[@]}" --schedule cosine --seed 5 --augment true --batch-size 16 --epochs 1)
  train 2 "${name}_straight.log" "${args[@]}" --fused-optimizer true --output "${name}_straight.pth" \
    --checkpoint-dir "${name}_ckpt" --checkpoint-every-steps 5 --keep-checkpoints 100
  train 2 "${name}_mid.log" "${args[@]}" --fused-optimizer true --output "${name}_mid.pth" \
    --resume "${name}_ckpt/ckpt-e0000-s000010.pt"
  expect_in "${name}_mid.log" 'resumed from checkpoint .*ckpt-e0000-s000010.pt: epoch 0, 10 batch\(es\) of it done'
  identical "${name}_straight.pth" "${name}_mid.pth" "$name, fused: straight == resumed at step 10"
  train 2 "${name}_eager.log" "${args[@]}" --fused-optimizer false --output "${name}_eager.pth" \
    --resume "${name}_ckpt/ckpt-e0000-s000005.pt"
  close "${name}_straight.pth" "${name}_eager.pth" "$name: fused checkpoint at step 5, continued by the default optimiser"
done

# The other way: a default-optimiser checkpoint continued by the fused one.
args=("${quiet[@]}" --model convnet --optimizer adam --lr 0.002 --seed 5 --batch-size 16 --epochs 1)
train 2 plain.log "${args[@]}" --output plain.pth --checkpoint-dir plain_ckpt --checkpoint-every-steps 5 \
  --keep-checkpoints 100
train 2 plain_fused.log "${args[@]}" --fused-optimizer true --output plain_fused.pth \
  --resume plain_ckpt/ckpt-e0000-s000005.pt
close plain.pth plain_fused.pth "adam: default checkpoint at step 5, continued by the fused optimiser"
echo PASS
