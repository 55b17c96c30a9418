#!/usr/bin/env bash
# Resume continues exactly with --optimizer muon: the speed94_muon network
# (whitening bias trained for a fraction of an epoch with its own decay),
# Muon's momentum buffers, step count and rescale step in the checkpoint, the
# linear schedule, and the jitter draws of the loader's stream. A straight
# 2-rank run equals runs resumed from step checkpoints inside epoch 0 and 1,
# bit for bit; a resume that changes the run's length says what follows it.
# shellcheck source=tests/checkpoint/lib.sh
source "$(dirname "$0")/lib.sh"

muon=("${quiet[@]}" --model speed94_muon --optimizer muon --lr 0.5 --momentum 0.8 --nesterov true --muon-lr 0.1
  --muon-momentum 0.6 --muon-weight-decay 0.01 --schedule linear --seed 3 --augment true --flip alternating
  --crop-pad 2 --brightness-jitter 0.1 --contrast-jitter 0.1 --drop-last true --batch-size 16 --epochs 2)
# 512 samples / 2 ranks / 16 = 16 steps per epoch, 32 in all; checkpoints every 5.
train 2 straight.log "${muon[@]}" --output straight.pth --checkpoint-dir ckpt --checkpoint-every-steps 5 \
  --keep-checkpoints 100
[[ -f ckpt/ckpt-e0000-s000005.pt && -f ckpt/ckpt-e0001-s000020.pt ]] || fail "expected step checkpoints: $(ls ckpt)"
train 2 early.log "${muon[@]}" --output early.pth --resume ckpt/ckpt-e0000-s000005.pt
same straight.pth early.pth "Muon: 2 epochs straight == resumed at step 5 (epoch 0)"
train 2 late.log "${muon[@]}" --output late.pth --resume ckpt/ckpt-e0001-s000020.pt
same straight.pth late.pth "Muon: 2 epochs straight == resumed at step 20 (epoch 1)"
# Made shorter at a resume, Muon's progress and the linear schedule follow the
# new length: said in one line, never silently another run.
train 2 shorter.log "${muon[@]}" --output shorter.pth --resume ckpt/ckpt-e0001-s000020.pt --max-steps 22
expect_in shorter.log "the run's length changes from --epochs 2 --max-steps 0 to --epochs 2 --max-steps 22, and the linear schedule and Muon's progress \(its target magnitude and rescale period\) depend on it"
echo PASS
