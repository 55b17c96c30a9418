#!/usr/bin/env bash
# Resume at another world size, end to end. A 4-rank run
# (6 per rank: a global micro-batch of 24) checkpointed in the middle of
# epoch 0 is resumed on 2 ranks (12 per rank) and on 3 ranks (8 per rank):
#   * the test-only sample trace (CIFAR_MPI_TEST_SAMPLE_TRACE) shows every
#     sample of epoch 0 trained exactly once, none twice, none never, and
#     every optimiser step of both epochs training the same samples as the
#     run that stayed on 4 ranks;
#   * with SGD (momentum, cosine schedule; ConvNet has no BatchNorm, so the
#     per-rank batch does not change the arithmetic) the resumed models equal
#     the 4-rank run's to 1e-5 relative;
#   * a checkpoint written in the middle of the re-sharded epoch (on 2 ranks,
#     in the 4-rank run's order) resumes on 3 ranks, again exactly once;
#   * a world size that cannot keep the global batch, and a --batch-size that
#     changes it, are refused naming the numbers.
# 252 samples: 63 per rank on 4 ranks = 10 micro-batches of 6 and one of 3,
# so epoch 0 ends with a short global micro-batch of 12 (divisible by 2, 3, 4).
# shellcheck source=tests/checkpoint/lib.sh
source "$(dirname "$0")/lib.sh"

"$CIFAR_PACK" --synthetic 252 --test-count 16 --seed 3 --output elastic.h5 >pack.log 2>&1 || { cat pack.log; fail "cifar_pack"; }
CKPT_DATA=$PWD/elastic.h5
N=252
base=("${quiet[@]}" --model convnet --optimizer sgd --momentum 0.9 --lr 0.05 --schedule cosine --seed 5
  --shuffle true --augment false --epochs 2)
opts=("${base[@]}" --batch-size 6)

# before STEP FILES...: the lines of epoch 0 before optimiser step STEP.
before() {
  local step=$1
  shift
  cat "$@" | awk -v s="$step" '$2 == 0 && $4 < s'
}

traced straight 4 straight.log "${opts[@]}" --output straight.pth --checkpoint-dir ckpt --checkpoint-every-steps 4 \
  --keep-checkpoints 100
mid=ckpt/ckpt-e0000-s000004.pt
[[ -f $mid ]] || fail "no step-4 checkpoint: $(ls ckpt)"
steps straight.rank* >straight.steps
check_exactly_once "4 ranks straight" 0 straight.rank*
before 4 straight.rank* >head.trace  # what the 4-rank run trained before its checkpoint

# The refusals (named below) run meanwhile, in the background: a refused
# launch is mostly start-up and mpirun's wait after a rank exits non-zero.
refused() {  # refused NP LOG WHAT REGEX [options...]: the run exits 6 (bad input: no restart fixes it) and its log matches REGEX
  local np=$1 log=$2 what=$3 regex=$4 rc=0
  shift 4
  run "$np" "$log" "$@" || rc=$?
  [[ $rc == 6 ]] || { cat "$log"; fail "$what exited $rc, expected 6"; }
  expect_in "$log" "$regex"
}
background five.out refused 5 five.log "resuming a global micro-batch of 24 on 5 ranks" \
  'global batch of 24 samples per optimiser step \(6 per rank x 4 ranks\) does not divide among 5 ranks, with or without gradient accumulation; resume on 1, 2, 3, 4, 6, 8, 12, 24 ranks' \
  "${opts[@]}" --output five.pth --resume "$mid"
background batch7.out refused 2 batch7.log "--batch-size 7 on 2 ranks" \
  'global batch of 24 per optimiser step \(6 per rank x 4 ranks\); this run asks for 7 per rank x 2 ranks = 14.*pass --batch-size 12 --accumulate 1' \
  "${base[@]}" --batch-size 7 --output batch7.pth --resume "$mid"

# 4 -> 2, checkpointing at step 6 (in the middle of the re-sharded epoch).
traced to2 2 to2.log "${opts[@]}" --output to2.pth --resume "$mid" --checkpoint-dir to2_ckpt \
  --checkpoint-every-steps 6 --keep-checkpoints 100
expect_in to2.log 'elastic resume: written on 4 rank\(s\) with 6 per rank, continued on 2 rank\(s\) with 12 per rank'
grep -m1 'elastic resume' to2.log
awk '$2 == 0 && $6 < 10 && NF - 8 != 12 { bad = 1 } END { exit bad }' to2.rank* ||
  fail "4 -> 2: a full micro-batch of the resumed epoch does not hold 12 samples per rank"
same_as_straight "4 -> 2" to2.pth head.trace to2.rank*

# 4 -> 3.
traced to3 3 to3.log "${opts[@]}" --output to3.pth --resume "$mid"
expect_in to3.log 'continued on 3 rank\(s\) with 8 per rank'
same_as_straight "4 -> 3" to3.pth head.trace to3.rank*

# 4 -> 2 -> 3: the 2-rank run's step-6 checkpoint lies in epoch 0, ordered by 4 ranks.
again=to2_ckpt/ckpt-e0000-s000006.pt
[[ -f $again ]] || fail "no step-6 checkpoint from the 2-rank run: $(ls to2_ckpt)"
traced to2to3 3 to2to3.log "${opts[@]}" --output to2to3.pth --resume "$again"
before 6 to2.rank* >to2.head
same_as_straight "4 -> 2 -> 3" to2to3.pth head.trace to2.head to2to3.rank*

# Refusals, naming the numbers (started above).
wait_background "a resume at another world size or with another batch was not refused as expected"
grep -m1 -o 'resume on 5 rank.*ranks' five.log | head -n 1
grep -m1 -o 'global batch of 24 per.*--accumulate 1)' batch7.log
# --batch-size 12 on 2 ranks keeps the global batch: accepted (2 steps are enough to show it).
train 2 batch12.log "${base[@]}" --batch-size 12 --output batch12.pth --resume "$mid" --max-steps 6
expect_in batch12.log 'continued on 2 rank\(s\) with 12 per rank'
echo PASS
