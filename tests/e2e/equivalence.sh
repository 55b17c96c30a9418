#!/usr/bin/env bash
# Data-parallel training done right: with a fixed seed, K steps on N ranks
# with per-rank batch B/N reach the same parameters as 1 rank with batch B —
# for N = 2 and 4, with one gradient bucket and with several, and with
# gradient accumulation. Runs the real program (sampler, loader, reducer,
# optimiser) and compares the saved model files.
#
# SGD with momentum carries gradient differences through linearly, so float
# rounding stays at ~1e-7 and the check can be strict (1e-5). Adam divides by
# sqrt(v): a weight whose gradient is rounding noise (~1e-12, e.g. behind a
# dead ReLU) gets a full-size update in either run, so Adam is compared
# separately with a tolerance that still catches any real averaging bug.
# shellcheck source=tests/e2e/common.sh
source "$(dirname "$0")/common.sh"

optimizer=(--optimizer sgd --momentum 0.9 --lr 0.05)
# The runs are independent and short (6 steps; most of a run is start-up),
# so they run side by side (common.sh's `background`); everything is
# compared after all have finished. Results do not depend on what else runs.
train() {  # train NP OUTPUT [options...]: started in the background
  local np=$1 out=$2
  shift 2
  background "$out.log" mpi "$np" "$CIFAR_MPI" --data "$E2E_DATA" --model convnet "${optimizer[@]}" --seed 3 \
    --max-steps 6 --epochs 1 --eval false --metrics "" --log-every 1000 --output "$out" "$@"
}
same() {  # same REFERENCE OTHER DESCRIPTION [RTOL]
  echo "--- $3"
  compare "$1" "$2" "${4:-1e-5}" "$3: parameters differ"
}

one_bucket=(--first-bucket-mb 25 --bucket-mb 25)
train 1 one_rank.pth --batch-size 32
train 2 two_ranks.pth --batch-size 16 "${one_bucket[@]}"
train 4 four_ranks.pth --batch-size 8 "${one_bucket[@]}"
train 2 two_ranks_buckets.pth --batch-size 16 --bucket-mb 0.01 --first-bucket-mb 0.01
train 2 two_ranks_accumulate.pth --batch-size 8 --accumulate 2 "${one_bucket[@]}"
train 4 four_ranks_buckets.pth --batch-size 8 --bucket-mb 0.01 --first-bucket-mb 0.01
optimizer=(--optimizer adam --lr 0.001)
train 1 adam_one_rank.pth --batch-size 32
train 4 adam_four_ranks.pth --batch-size 8 "${one_bucket[@]}"
# And a different run really differs: the comparison can fail.
optimizer=(--optimizer sgd --momentum 0.9 --lr 0.05)
train 1 other_order.pth --batch-size 32 --shuffle false
wait_background "a training run failed"

grep -q " 1 gradient bucket" two_ranks.pth.log || fail "--first-bucket-mb 25 should give 1 bucket"
buckets=$(sed -n 's/.* \([0-9]*\) gradient bucket.*/\1/p' two_ranks_buckets.pth.log)
[[ ${buckets:-0} -gt 2 ]] || fail "--bucket-mb 0.01 should give several buckets, got '$buckets'"
echo "--bucket-mb 0.01 gives $buckets buckets"

same one_rank.pth two_ranks.pth "2 ranks x 16 == 1 rank x 32 (1 bucket)"
same one_rank.pth four_ranks.pth "4 ranks x 8 == 1 rank x 32 (1 bucket)"
same one_rank.pth two_ranks_buckets.pth "2 ranks x 16, $buckets buckets"
same one_rank.pth four_ranks_buckets.pth "4 ranks x 8, $buckets buckets"
same one_rank.pth two_ranks_accumulate.pth "2 ranks x 2 micro-batches of 8 (accumulation)"
same adam_one_rank.pth adam_four_ranks.pth "Adam: 4 ranks x 8 == 1 rank x 32" 1e-3
if "$COMPARE_MODELS" one_rank.pth other_order.pth --rtol 1e-5 >/dev/null; then fail "a different sample order compared equal"; fi
echo "PASS"
