#!/usr/bin/env bash
# A row of cifar_mpi --self-test that fails is reported as FAIL with its
# rank, host and first error line, the rows after it still run, and the exit
# code is 8. The failure is the test hook's: CIFAR_SELF_TEST_FAIL_ROW=adam
# injects one (process/fault_injection.hpp) into that row's child alone.
# shellcheck source=tests/e2e/common.sh
source "$(dirname "$0")/common.sh"

rc=0
CIFAR_SELF_TEST_FAIL_ROW=adam mpi 1 -x CIFAR_SELF_TEST_FAIL_ROW "$CIFAR_MPI" --self-test >run.log 2>&1 || rc=$?
sed -n '/^self-test table:/,$p' run.log
[[ $rc == 8 ]] || { cat run.log; fail "a failing row: exit code $rc, expected 8"; }
row() { sed -n '/^self-test table:/,$p' run.log | grep -E "^\| $1 +\|" || true; }
line=$(row adam)
[[ $line =~ \|\ FAIL\ +\| && $line == *"rank 0 ("*"exit code 1: "*"error:"*"injected"* ]] ||
  { cat run.log; fail "row adam: expected FAIL with rank 0, its exit code and error line, got '$line'"; }
for r in sgd_fp32 bf16 muon eval_tta; do
  [[ $(row "$r") =~ \|\ PASS\ +\| ]] || { cat run.log; fail "row $r did not pass beside the failing row"; }
done
grep -q '^self-test: 4 passed, 1 failed' run.log || { cat run.log; fail "the count line does not say 1 failed"; }
echo "PASS"
