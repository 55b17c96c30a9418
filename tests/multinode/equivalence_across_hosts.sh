#!/usr/bin/env bash
# Data-parallel training is exact across hosts too: 6 SGD steps on 2 simulated
# hosts x 2 ranks with per-rank batch 8 (gradients cross TCP between hosts and
# shared memory within one) reach the same parameters as 1 rank with batch 32
# — with the default buckets and with many small ones. The single-host
# version of this check, and why 1e-5 is strict enough: tests/e2e/equivalence.sh.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/common.sh
source "$here/../e2e/common.sh"

flags=(--data "$E2E_DATA" --model convnet --optimizer sgd --momentum 0.9 --lr 0.05 --seed 3 --max-steps 6
       --epochs 1 --eval false --metrics "" --log-every 1000 --backend mpi)
run() {  # run OUTPUT LAUNCHER... : the launcher command line, then the common flags
  local out=$1
  shift
  "$@" "${flags[@]}" --output "$PWD/$out" >"$out.log" 2>&1 || { cat "$out.log"; fail "training run for $out failed"; }
}
run one_rank.pth mpi 1 "$CIFAR_MPI" --batch-size 32
across_hosts=("$here/../../dev/netns/run_across_hosts.sh" --hosts 2 2 "$CIFAR_MPI" --batch-size 8)
run hosts.pth "${across_hosts[@]}"
run hosts_buckets.pth "${across_hosts[@]}" --bucket-mb 0.01 --first-bucket-mb 0.01
grep -q "4 rank(s) on 2 node(s)" hosts.pth.log || { cat hosts.pth.log; fail "the run did not span 2 hosts"; }
buckets=$(sed -n 's/.* \([0-9]*\) gradient bucket.*/\1/p' hosts_buckets.pth.log)
[[ ${buckets:-0} -gt 2 ]] || fail "--bucket-mb 0.01 should give several buckets, got '$buckets'"

for other in hosts.pth hosts_buckets.pth; do
  echo "--- 1 rank x 32 vs 2 hosts x 2 ranks x 8: $other"
  compare one_rank.pth "$other" 1e-5 "$other: parameters differ"
done
echo "PASS"
