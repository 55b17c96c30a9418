#!/usr/bin/env bash
# --profile prints one line per epoch on rank 0 whose shares cover the whole
# step (they add up to 100%), with the gradient wait split into waiting for
# slower ranks and communication not overlapped; one rank never waits for
# another.
# shellcheck source=tests/e2e/common.sh
source "$(dirname "$0")/common.sh"

# profile_line NP: runs NP ranks for one short epoch and prints the profile line.
profile_line() {
  mpi "$1" "$CIFAR_MPI" --data "$E2E_DATA" --epochs 1 --batch-size 32 --profile true --eval false \
    --output model.pth --metrics "" --log-every 1000 >"train_np$1.log" 2>&1 ||
    { cat "train_np$1.log"; fail "training at np $1 failed"; }
  local lines
  lines=$(grep -c '^Profile epoch 0' "train_np$1.log" || true)
  [[ $lines == 1 ]] || { cat "train_np$1.log"; fail "expected one profile line at np $1, got $lines"; }
  grep '^Profile epoch 0' "train_np$1.log"
}

# share LINE NAME: the percentage after NAME.
share() { sed -nE "s/.*[:,] $2 ([0-9.]+)%.*/\1/p" <<<"$1"; }

for np in 1 2; do
  line=$(profile_line $np)
  echo "np $np: $line"
  for phase in "data wait" forward backward "waiting for slower ranks" "comm not overlapped" optimizer other; do
    [[ -n $(share "$line" "$phase") ]] || fail "np $np: no '$phase' share in: $line"
  done
  total=$(grep -oE '[0-9.]+%' <<<"$line" | tr -d % | awk '{s += $1} END {print s}')
  awk -v t="$total" 'BEGIN {exit !(t > 99.5 && t < 100.5)}' || fail "np $np: shares add up to $total%, not 100%"
done
[[ $(share "$(grep '^Profile' train_np1.log)" "waiting for slower ranks") == 0.0 ]] ||
  fail "a single rank cannot wait for slower ranks"
echo "PASS"
