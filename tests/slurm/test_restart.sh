#!/usr/bin/env bash
# tests/slurm/test_restart.sh — a failed step restarts by itself within the
# same job, under a real (private, one-node) Slurm: jobs/train.slurm trains
# cifar_mpi on 2 ranks through srun, checkpointing every 10 steps; once it has
# trained past a checkpoint, every rank of the step is killed (kill -9). The
# job must
#   1. log the step's failure with its cause and a restart at once (the
#      default policy: no back-off before the first restart), probing the
#      node, which answers: nothing to exclude on one node,
#   2. start the step again in the same allocation (no requeue: Restarts=0),
#      resumed from the newest checkpoint written before the kill,
#   3. end COMPLETED, 0:0, with the metrics reaching the last step.
# The exclusion of lost nodes, which needs several nodes, is tested with
# stand-ins for Slurm's commands: tests/jobs/slurm_nodes.sh.
#
#   test_restart.sh --repo DIR --build DIR --data FILE
# shellcheck source=tests/slurm/job_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/job_test_lib.sh"

job_test_parse_data_args "$@"
data=$JOB_TEST_DATA
readonly kNtasks=2 kSteps=60 kEvery=10 kKillAfter=15

started=$SECONDS
job_test_start
run_dir=$JOB_TEST_WORK/run
name=cifar-restart
job=$(job_test_submit "$name" "$kNtasks" "CIFAR_BUILD=$JOB_TEST_BUILD" "CIFAR_RUN_DIR=$run_dir" CIFAR_CONFIG= \
  "CIFAR_DATA=$data" CIFAR_MAX_RESTARTS=2 CIFAR_PROBE_TIMEOUT=20 \
  "CIFAR_EXTRA_ARGS=--epochs 1000 --max-steps $kSteps --batch-size 16 --log-every 1 --eval false --checkpoint-every-steps $kEvery")
mini_cluster_log "submitted $name as job $job"
log=$(job_test_log_file "$name" "$job")

# Past the first checkpoint, and some steps beyond it.
job_test_wait_for_log "$name" "$job" "$kKillAfter" 'Epoch: .* \| Batch: ' 90
mapfile -t ranks < <(pgrep -f -- "--checkpoint-dir $run_dir/checkpoints" | while read -r pid; do
  [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == */cifar_mpi ]] && echo "$pid"; done || true)
((${#ranks[@]} == kNtasks)) || job_test_fail "found ${#ranks[@]} cifar_mpi rank(s) of the job, expected $kNtasks: ${ranks[*]}"
mini_cluster_log "killing every rank of the step (kill -9 ${ranks[*]}) after $(grep -c 'Batch: ' "$log") steps"
kill -9 "${ranks[@]}"
# The newest checkpoint written before the kill: the newest file once the
# ranks are gone, before the restarted step can write one (the restart runs
# at once, but its step resumes, logs so and trains kEvery steps before its
# first checkpoint). Not its log line: the program logs a checkpoint after
# writing it, so a kill between the two leaves the file without the line.
for _ in $(seq 200); do
  alive=0
  for pid in "${ranks[@]}"; do
    [[ -e /proc/$pid && $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]] && alive=1
  done
  ((alive)) || break
  sleep 0.05
done
newest=$(find "$run_dir/checkpoints" -name 'ckpt-*.pt' | sed -n 's/.*-s0*\([0-9][0-9]*\)\.pt$/\1/p' | sort -n | tail -n 1)
if grep -q 'resumed from checkpoint' "$log"; then
  job_test_fail "the restarted step resumed before the checkpoints written before the kill could be listed"
fi

job_test_expect_completed "$name" "$job" 150
restarts=$(mini_cluster_job_field "$job" Restarts)
[[ $restarts == 0 ]] || job_test_fail "job $job: Slurm counts $restarts requeue(s); the restart belongs inside the job"
job_test_expect_in_log "$name" "$job" 1 'step failed with exit code [0-9]+ \('
job_test_expect_in_log "$name" "$job" 1 \
  'restart 1 of at most 2 in 0 s after exit code [0-9]+ \(.*\); no node lost \(all 1 usable\): again 2 task\(s\); resuming from checkpoint '
(($(grep -c 'launch: srun --mpi=pmix ' "$log") == 2)) || job_test_fail "expected 2 launches of the step"

# The restart resumed from the newest checkpoint written before the kill.
restart_line=$(grep -n 'restart 1 of at most' "$log" | head -n 1 | cut -d: -f1)
reached=$(head -n "$restart_line" "$log" | grep -c 'Batch: ' || true)
resumed=$(tail -n +"$restart_line" "$log" | sed -n 's/.*resumed from checkpoint .*, step \([0-9]*\)$/\1/p' | head -n 1)
grep -E 'step failed|restart [0-9] of|resumed from' "$log"
[[ -n $newest && $resumed == "$newest" ]] ||
  job_test_fail "resumed at step '$resumed', expected the newest checkpoint's step '$newest'"
((reached - resumed <= kEvery)) || job_test_fail "$((reached - resumed)) steps trained again, more than $kEvery"
grep -q "\"steps\": $kSteps" "$run_dir/metrics.jsonl" ||
  job_test_fail "$run_dir/metrics.jsonl does not reach step $kSteps: $(cat "$run_dir/metrics.jsonl")"
job_test_expect_file "$run_dir/model.pth"
mini_cluster_log "PASS: every rank killed after $reached steps; the job restarted the step itself from step $resumed" \
  "and completed; $((SECONDS - started))s in all"
