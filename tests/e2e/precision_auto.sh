#!/usr/bin/env bash
# --precision auto trains in what the machine's rule chooses (bf16 on CPUs
# with AMX bf16 units and on AMD ones with AVX-512 BF16, fp32 elsewhere) and
# rank 0's start-up log says which and why; --check-env prints the same line,
# "as given" for a given precision.
# shellcheck source=tests/e2e/common.sh
source "$(dirname "$0")/common.sh"

expected=fp32
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
if grep -qw amx_bf16 <<<"$flags" && grep -qw amx_tile <<<"$flags"; then
  expected=bf16
elif grep -qw avx512_bf16 <<<"$flags" && grep -m1 '^vendor_id' /proc/cpuinfo | grep -qw AuthenticAMD; then
  expected=bf16
fi

mpi 2 "$CIFAR_MPI" --data "$E2E_DATA" --max-steps 2 --batch-size 32 --eval false --precision auto \
  --output model.pth --metrics "" >train.log 2>&1 || { cat train.log; fail "training with --precision auto failed"; }
[[ $(grep -c 'precision: auto chose' train.log) == 1 ]] || { cat train.log; fail "expected one 'precision:' line from rank 0"; }
grep -q "precision: auto chose $expected: " train.log || { cat train.log; fail "auto did not choose $expected here"; }
[[ -s model.pth ]] || fail "no model file written"
grep 'precision: auto chose' train.log

mpi 1 "$CIFAR_MPI" --data "$E2E_DATA" --check-env --precision bf16 >check.log 2>&1 ||
  { cat check.log; fail "--check-env failed"; }
grep -q 'precision:   bf16 (as given)' check.log || { cat check.log; fail "--check-env does not say bf16 (as given)"; }
grep 'precision:' check.log
echo "PASS"
