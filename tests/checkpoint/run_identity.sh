#!/usr/bin/env bash
# --resume continues only the run that wrote the checkpoint, so
# that a job script's `--resume auto` never continues, or overwrites, another
# experiment:
#  * another run's settings in the same folder are refused (exit 6) naming
#    each differing key with both values; so is other data of the same size;
#  * the sample order and inputs (--shuffle, --shuffle-seed, --augment,
#    --normalize, --drop-last) are refused mid-epoch as well;
#  * a run resumed at its end says it is already finished, trains nothing and
#    leaves its model file alone (writing it only when it is missing);
#    a larger --epochs continues it;
#  * a fresh run (--resume none) into a folder with checkpoints, or a
#    --resume PATH beside another run's checkpoints, is refused (exit 2 / 6)
#    and deletes nothing.
# shellcheck source=tests/checkpoint/lib.sh
source "$(dirname "$0")/lib.sh"

common=("${quiet[@]}" --model convnet --optimizer sgd --momentum 0.9 --batch-size 32)
run_a=("${common[@]}" --lr 0.05 --seed 3 --output model.pth --checkpoint-dir ckpt)
# 512 samples / 2 ranks / 32 = 8 steps per epoch: checkpoints at steps 3, 6 and 8.
train 2 first.log "${run_a[@]}" --epochs 1 --checkpoint-every-steps 3 --keep-checkpoints 10
ls ckpt
cp model.pth first_model.pth
state() { (cd ckpt && md5sum -- *) && md5sum model.pth; }
before=$(state)

# expect_refused CODE LOG PATTERN [cifar_mpi options...] (data: $data or the
# fixture's): the run exits CODE with one error line matching PATTERN, and the
# first run's checkpoints and model are unchanged.
expect_refused() {
  local code=$1 log=$2 pattern=$3 rc=0
  shift 3
  mpi 2 "$CIFAR_MPI" --data "${data:-$CKPT_DATA}" "$@" >"$log" 2>&1 || rc=$?
  [[ $rc == "$code" ]] || { cat "$log"; fail "$log: exit code $rc, expected $code"; }
  [[ $(grep -c 'error:' "$log") == 1 ]] || { cat "$log"; fail "$log: expected exactly one error line"; }
  expect_in "$log" "$pattern"
  [[ $(state) == "$before" ]] || fail "$log: the first run's files changed"
  echo "ok ($log, exit $rc): $(grep -m1 -o 'error: .*' "$log" | cut -c1-300)"
}

# Every run locks its outputs (model file, checkpoint folder) at start-up, and
# a second run on one of them would be refused for that. The launches up to
# the next wait_background share none, so they run side by side (common.sh's
# `background`); none of them writes the first run's files, which each
# refusal still compares.
refused_meanwhile() { background "$2.out" expect_refused "$@"; }  # expect_refused, in the background

# What the job scripts met: another --lr and --seed, same folder, --resume auto.
refused_meanwhile 6 other_run.log \
  "was written by a different run: --seed 3 there, 4 here; --lr 0.05 there, 0.01 here. .*\(--seed 3 --lr 0.05\)" \
  "${common[@]}" --lr 0.01 --seed 4 --epochs 1 --output other.pth --checkpoint-dir ckpt --resume auto
# Mid-epoch (step 6 of 8), every option of the sample order and the inputs.
for change in "shuffle false:true" "shuffle-seed 1:0" "augment true:false" "normalize dataset:recipe" \
  "drop-last true:false"; do
  option=${change%%:*}
  refused_meanwhile 6 "mid_${option%% *}.log" "--${option%% *} ${change##*:} there, ${option#* } here" \
    "${common[@]}" --lr 0.05 --seed 3 --epochs 1 --output "mid_${option%% *}.pth" \
    --resume ckpt/ckpt-e0000-s000006.pt "--${option%% *}" "${option#* }"
done
# Another run's checkpoints in their own folder, for the --resume PATH case below.
background run_c.out train 2 run_c.log "${common[@]}" --lr 0.01 --seed 4 --epochs 1 --output c.pth --checkpoint-dir ckpt_c
# The same size with other content.
"$CIFAR_PACK" --synthetic 512 --test-count 128 --seed 9 --output other.h5 >/dev/null
wait_background "a run beside the first one failed its check"
data=other.h5 expect_refused 6 other_data.log \
  "written with training data of source md5 [0-9a-f]+, 512 training samples.* but this run has source md5 [0-9a-f]+, 512 training samples.*\(--data other.h5\)" \
  "${run_a[@]}" --epochs 1 --resume auto

# Already finished: said plainly, nothing trained, the model file left alone.
train 2 finished.log "${run_a[@]}" --epochs 1 --resume auto
expect_in finished.log 'the run is already finished: ckpt/ckpt-e0001-s000008.pt is its end \(epoch 1 of 1, step 8 of 8\); nothing to train'
expect_in finished.log 'left model.pth as it is'
! grep -q RESULT finished.log || fail "an already finished run printed a RESULT line"
[[ $(state) == "$before" ]] || fail "an already finished run changed its files"
rm model.pth
train 2 missing_model.log "${run_a[@]}" --epochs 1 --resume auto
expect_in missing_model.log 'wrote the missing model.pth from the checkpoint'
identical first_model.pth model.pth "the model written from the final checkpoint == the run's model"

# A fresh run into the folder, and a --resume PATH beside its checkpoints:
# refused before training, nothing deleted (pruning never reaches another run).
expect_refused 2 fresh.log \
  "--checkpoint-dir ckpt already holds 3 checkpoint\(s\) of an earlier run \(newest ckpt-e0001-s000008.pt\); continue that run with --resume auto" \
  "${run_a[@]}" --epochs 1 --resume none
expect_refused 6 beside.log \
  "checkpoint 'ckpt/ckpt-e0001-s000008.pt' was written by a different run: --seed 3 there, 4 here; --lr 0.05 there" \
  "${common[@]}" --lr 0.01 --seed 4 --epochs 2 --output c2.pth --checkpoint-dir ckpt --resume ckpt_c/ckpt-e0001-s000008.pt

# A longer run continues the same one.
train 2 longer.log "${run_a[@]}" --epochs 2 --resume auto
expect_in longer.log 'resumed from checkpoint ckpt/ckpt-e0001-s000008.pt: epoch 1, 0 batch\(es\) of it done, step 8'
expect_in longer.log 'RESULT train_seconds='
echo PASS
