#!/usr/bin/env bash
# tests/slurm/test_self_test.sh — `cifar_mpi --self-test` as docs/slurm.md
# starts it, under a real (private, one-node) Slurm: srun --mpi=pmix with 2
# tasks. Each rank's single-rank rows run as child processes that must start
# MPI on their own (the step's PMIx and Slurm task variables taken away),
# then the all-ranks row trains over srun's world. The step must exit 0 with
# every CPU row PASS and the all-ranks row PASS on 2 ranks.
#
#   test_self_test.sh --repo DIR --build DIR
# shellcheck source=tests/slurm/job_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/job_test_lib.sh"

job_test_parse_args "$@"
started=$SECONDS
job_test_start
log=$JOB_TEST_WORK/self_test.log
rc=0
(cd "$JOB_TEST_WORK" && timeout 240 srun --mpi=pmix --nodes=1 --ntasks=2 --cpus-per-task=1 --time=5 \
  "$JOB_TEST_BUILD/cifar_mpi" --self-test) >"$log" 2>&1 || rc=$?
grep -E '^\| |^self-test:|error' "$log" || cat "$log"
((rc == 0)) || { cat "$log"; job_test_fail "srun --mpi=pmix -n 2 cifar_mpi --self-test exited $rc"; }
grep -qE '^\| allreduce_all_ranks +\| PASS .* on 2 ranks' "$log" ||
  job_test_fail "the all-ranks row did not pass on srun's 2 ranks"
grep -qE '^self-test: [1-9][0-9]* passed, 0 failed' "$log" || job_test_fail "no row passed, or one failed"
if grep -E '^\| ' "$log" | grep -vE '^\| row|\| (PASS|SKIP) '; then
  job_test_fail "a row neither passed nor skipped"
fi
mini_cluster_log "PASS: the self-test under srun --mpi=pmix, 2 tasks; $((SECONDS - started))s in all"
