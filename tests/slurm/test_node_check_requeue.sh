#!/usr/bin/env bash
# tests/slurm/test_node_check_requeue.sh — a node that fails its checks is left
# out on requeue, under a real (private, one-node) Slurm. The run folder's
# checkpoints/ is a 1 MiB tmpfs (node-local, too small for the checkpoints the
# run keeps), so jobs/train.slurm's step must
#   1. end before training with cifar_mpi's node-check message naming the node
#      and the fix, and exit code 7,
#   2. find no node left to restart on (the job's only node failed its checks),
#      and requeue the job with that node in its ExcNodeList (scontrol update),
#      logging the node and the reason,
#   3. leave the job pending, excluded from its only node: `scontrol show job`
#      says ExcNodeList=<node> and Restarts=1.
#
#   test_node_check_requeue.sh --repo DIR --build DIR --data FILE
# shellcheck source=tests/slurm/job_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/job_test_lib.sh"

job_test_parse_data_args "$@"
data=$JOB_TEST_DATA

started=$SECONDS
job_test_start
run_dir=$JOB_TEST_WORK/run
mkdir -p "$run_dir/checkpoints"
mount -t tmpfs -o size=1m cifar-node-check "$run_dir/checkpoints" ||
  job_test_fail "cannot mount a tmpfs on $run_dir/checkpoints (root needed)"
unmount() { umount "$run_dir/checkpoints" 2>/dev/null || true; }
trap 'unmount; job_test_cleanup' EXIT
name=cifar-node-check
job=$(job_test_submit "$name" 2 "CIFAR_BUILD=$JOB_TEST_BUILD" "CIFAR_RUN_DIR=$run_dir" CIFAR_CONFIG= \
  "CIFAR_DATA=$data" CIFAR_MAX_RESTARTS=2 CIFAR_PROBE_TIMEOUT=20 \
  "CIFAR_EXTRA_ARGS=--epochs 1 --max-steps 5 --batch-size 16 --eval false")
mini_cluster_log "submitted $name as job $job"
log=$(job_test_log_file "$name" "$job")
node=$MINI_CLUSTER_NODE

job_test_wait_for_log "$name" "$job" 1 "scontrol update JobId=$job ExcNodeList=" 90
for _ in $(seq 40); do
  [[ $(mini_cluster_job_field "$job" JobState) == PENDING ]] && break
  sleep 0.5
done
job_test_show_log "$name" "$job"
job_test_expect_in_log "$name" "$job" 1 "error: node check failed: node [^ ]*: checkpoint space: --checkpoint-dir $run_dir/checkpoints has .* MiB free, but the run needs .*Fix: free space there"
job_test_expect_in_log "$name" "$job" 1 'step failed with exit code 7 \(a node failed its checks before training\)'
job_test_expect_in_log "$name" "$job" 1 "lost every node of the job: $node \\(failed its node checks \\(exit code 7\\)\\)"
job_test_expect_in_log "$name" "$job" 1 "excluding node $node from the requeued job: failed its node checks"
job_test_expect_in_log "$name" "$job" 1 "requeued job $job without node $node"
(($(grep -c 'launch: srun --mpi=pmix ' "$log") == 1)) || job_test_fail "expected 1 launch of the step"
[[ -z $(ls -A "$run_dir/checkpoints") ]] || job_test_fail "the refused run wrote into its checkpoint folder"
excluded=$(mini_cluster_job_field "$job" ExcNodeList)
state=$(mini_cluster_job_field "$job" JobState)
restarts=$(mini_cluster_job_field "$job" Restarts)
scontrol show job "$job" | grep -E 'JobState|ExcNodeList|Restarts'
[[ $excluded == "$node" && $state == PENDING && $restarts == 1 ]] ||
  job_test_fail "job $job: ExcNodeList=$excluded JobState=$state Restarts=$restarts, expected $node, PENDING, 1"
scancel "$job"
mini_cluster_log "PASS: node $node failed its checks; job $job requeued with ExcNodeList=$excluded; $((SECONDS - started))s in all"
