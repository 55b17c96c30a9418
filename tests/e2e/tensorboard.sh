#!/usr/bin/env bash
# --tensorboard: TensorBoard's own reader (the event accumulator of PyPI's
# tensorboard, in .venv-tools) reads what rank 0 wrote, and
#   * a 2-epoch run's epoch scalars equal its metrics file at the same steps,
#     train/loss equals its progress lines, the learning rate its schedule;
#   * a run that crashed after a checkpoint and resumed from it in the same
#     folder shows exactly the straight run's curves (the interrupted run's
#     steps after the checkpoint are dropped by the resumed file's START);
#   * a run stopped after epoch 0 and resumed with --resume auto appends a
#     second file whose steps continue the first's, none twice;
#   * with --accumulate 2 and a line every batch, each step is written once.
# shellcheck source=tests/e2e/common.sh
source "$(dirname "$0")/common.sh"
"$TOOLS_PYTHON" -c "import tensorboard" 2>/dev/null ||
  fail "this test needs $TOOLS_PYTHON with tensorboard: run tools/setup.sh (it makes .venv-tools)"
check() { "$TOOLS_PYTHON" "$SOURCE_DIR/tests/e2e/tensorboard_check.py" "$@" || fail "tensorboard_check.py $1"; }
train() {  # train LOG [options...]
  local log=$1
  shift
  mpi 2 "$CIFAR_MPI" --data "$E2E_DATA" --batch-size 32 "$@" >"$log" 2>&1 ||
    { cat "$log"; fail "training logged in $log failed"; }
}

# 1024 samples / 2 ranks / 32 = 16 steps per epoch, 32 in all; lines at
# batches 0, 5, 10, 15 of each epoch (steps 1, 6, 11, 16, 17, ...).
sgd=(--model convnet --optimizer sgd --momentum 0.9 --lr 0.05 --schedule cosine --seed 3 --epochs 2 --log-every 5)
train straight.log "${sgd[@]}" --output straight.pth --metrics straight.jsonl --tensorboard tb_straight \
  --checkpoint-dir ckpt --checkpoint-every-steps 5 --keep-checkpoints 100
check run tb_straight straight.jsonl straight.log 0.05 32
check list tb_straight

# A crash after the step-10 checkpoint: the folder holds steps up to 32,
# the resumed run writes 11 to 32 again.
cp -r tb_straight tb_crashed
train resumed.log "${sgd[@]}" --output resumed.pth --metrics resumed.jsonl --tensorboard tb_crashed \
  --resume ckpt/ckpt-e0000-s000010.pt
# (The raw files do hold those steps twice, so the reader's purge is what is tested.)
if "$TOOLS_PYTHON" "$SOURCE_DIR/tests/e2e/tensorboard_check.py" continuous tb_crashed 2 11 >/dev/null 2>&1; then
  fail "tb_crashed should hold steps 11 to 32 twice in its raw events"
fi
check same tb_straight tb_crashed train/loss train/learning_rate epoch/train_loss epoch/test_loss epoch/test_accuracy

# Stopped after epoch 0, resumed for epoch 1 in the same folder.
adam=(--model convnet --optimizer adam --lr 0.002 --seed 4 --log-every 5 --metrics parts.jsonl --tensorboard tb_parts
  --checkpoint-dir ckpt_parts --resume auto)
train first.log "${adam[@]}" --epochs 1 --output first.pth
train second.log "${adam[@]}" --epochs 2 --output second.pth
check continuous tb_parts 2 17
check epochs tb_parts parts.jsonl
# --accumulate 2 with a line every batch: two lines per optimiser step, one value.
train accumulate.log --epochs 1 --max-steps 6 --accumulate 2 --log-every 1 --metrics "" --eval false \
  --output accumulate.pth --tensorboard tb_accumulate
check continuous tb_accumulate 1 0
echo PASS
