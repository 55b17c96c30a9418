#!/usr/bin/env bash
# --precision auto trains in what the machine's rule chooses (bf16 on CPUs
# with AMX bf16 units, fp32 elsewhere) and rank 0's start-up log says which
# and why; --check-env prints the same line, "as given" for a given precision.
# shellcheck source=tests/e2e/common.sh
source "$(dirname "$0")/common.sh"

expected=fp32
if grep -m1 '^flags' /proc/cpuinfo | grep -qw amx_bf16 && grep -m1 '^flags' /proc/cpuinfo | grep -qw amx_tile; then
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
