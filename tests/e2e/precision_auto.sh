#!/usr/bin/env bash
# --precision auto trains in what the machine's rule chooses (bf16 on CPUs
# with AMX bf16 units and on AMD ones with AVX-512 BF16, fp32 elsewhere) and
# rank 0's start-up log says which and why; the run is as long as its length
# in that precision (--bf16-max-steps in bf16). --check-env prints the same
# lines, "as given" for a given precision.
# shellcheck source=tests/e2e/common.sh
source "$(dirname "$0")/common.sh"

expected=fp32
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
if grep -qw amx_bf16 <<<"$flags" && grep -qw amx_tile <<<"$flags"; then
  expected=bf16
elif grep -qw avx512_bf16 <<<"$flags" && grep -m1 '^vendor_id' /proc/cpuinfo | grep -qw AuthenticAMD; then
  expected=bf16
fi

steps=2
[[ $expected == bf16 ]] && steps=3
mpi 2 "$CIFAR_MPI" --data "$E2E_DATA" --max-steps 2 --bf16-max-steps 3 --batch-size 32 --eval false \
  --precision auto --log-every 1 --output model.pth --metrics "" >train.log 2>&1 ||
  { cat train.log; fail "training with --precision auto failed"; }
[[ $(grep -c 'precision: auto chose' train.log) == 1 ]] || { cat train.log; fail "expected one 'precision:' line from rank 0"; }
grep -q "precision: auto chose $expected: " train.log || { cat train.log; fail "auto did not choose $expected here"; }
[[ $(grep -c '| Batch: ' train.log) == "$steps" ]] || { cat train.log; fail "expected $steps steps in $expected"; }
if [[ $expected == bf16 ]]; then
  grep -q 'length in bf16: .* at most 3 optimiser steps' train.log || { cat train.log; fail "no bf16 length line"; }
else
  ! grep -q 'length in bf16' train.log || { cat train.log; fail "a bf16 length line in an fp32 run"; }
fi
[[ -s model.pth ]] || fail "no model file written"
grep -E 'precision: auto chose|length in bf16' train.log

mpi 1 "$CIFAR_MPI" --data "$E2E_DATA" --check-env --precision bf16 --bf16-epochs 4 >check.log 2>&1 ||
  { cat check.log; fail "--check-env failed"; }
grep -q 'precision:   bf16 (as given)' check.log || { cat check.log; fail "--check-env does not say bf16 (as given)"; }
grep -q 'length in bf16: 4 epochs (bf16-epochs' check.log || { cat check.log; fail "--check-env does not say the bf16 length"; }
grep -A1 'precision:' check.log
echo "PASS"
