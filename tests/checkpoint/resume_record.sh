#!/usr/bin/env bash
# Resume continues exactly with the E1 record recipe's pieces: epoch 0 trained
# at 24 px and epoch 1 at 32 px (--resolution-schedule, the global max-pool
# head), the low-rate tail (--lr-tail-epochs, --lr-floor) and the tail average
# (--lookahead-last-steps with a constant --lookahead-decay). A straight
# 2-rank run equals runs resumed from step checkpoints in the 24 px epoch and
# in the 32 px epoch inside the averaged tail, bit for bit.
# shellcheck source=tests/checkpoint/lib.sh
source "$(dirname "$0")/lib.sh"

record=("${quiet[@]}" --model speed94_muon --head global-max --resolution-schedule "24:1,32" --optimizer muon
  --lr 0.5 --momentum 0.8 --nesterov true --muon-lr 0.1 --muon-momentum 0.6 --schedule linear --lr-tail-epochs 0.5
  --lr-floor 0.05 --lookahead-every 2 --lookahead-decay 0.7 --lookahead-last-steps 10 --seed 3 --augment true
  --flip alternating --crop-pad 2 --drop-last true --batch-size 16 --epochs 2)
# 512 samples / 2 ranks / 16 = 16 steps per epoch, 32 in all: the schedule
# ends at step 24, the average starts at step 22; checkpoints every 5.
train 2 straight.log "${record[@]}" --output straight.pth --checkpoint-dir ckpt --checkpoint-every-steps 5 \
  --keep-checkpoints 100
[[ -f ckpt/ckpt-e0000-s000005.pt && -f ckpt/ckpt-e0001-s000025.pt ]] || fail "expected step checkpoints: $(ls ckpt)"
for checkpoint in ckpt-e0000-s000005 ckpt-e0001-s000025; do
  train 2 "$checkpoint.log" "${record[@]}" --output "$checkpoint.pth" --resume "ckpt/$checkpoint.pt"
  same straight.pth "$checkpoint.pth" "record pieces: 2 epochs straight == resumed from $checkpoint"
done
echo PASS
