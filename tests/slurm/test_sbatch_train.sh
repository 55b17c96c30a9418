#!/usr/bin/env bash
# tests/slurm/test_sbatch_train.sh — jobs/train.slurm, unmodified, runs
# cifar_mpi as a 2-rank MPI world under a real (private, one-node) Slurm:
# once through `srun --mpi=pmix` and once through the documented alternative
# CIFAR_LAUNCHER=mpirun. Both jobs must end COMPLETED with exit code 0. A
# third job with a bad option must end FAILED with the program's exit code 2.
#
#   test_sbatch_train.sh --repo DIR --build DIR --mode check-env|train [--data FILE]
#
# --mode check-env  the program prints every rank's placement; the log must
#                   show a world of 2 ranks on 1 node that is ready to train.
# --mode train      a few optimisation steps on --data (a small HDF5 file);
#                   the run folder must then hold model.pth and metrics.jsonl.
# shellcheck source=tests/slurm/job_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/job_test_lib.sh"

job_test_parse_args "$@"
mode=check-env
data=
set -- "${JOB_TEST_ARGS[@]+"${JOB_TEST_ARGS[@]}"}"
while (($#)); do
  case $1 in
    --mode) mode=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    *) job_test_fail "unknown option $1" ;;
  esac
done
kNtasks=2

case $mode in
  check-env)
    # --check-env opens the data file as training does.
    [[ -r $data ]] || job_test_fail "--mode check-env needs --data FILE, a small HDF5 file made by cifar_pack (got '$data')"
    program_settings=(CIFAR_CONFIG= "CIFAR_DATA=$data" "CIFAR_EXTRA_ARGS=--check-env") ;;
  train)
    [[ -r $data ]] || job_test_fail "--mode train needs --data FILE, a small HDF5 file made by the packer or synthetic-data tool (got '$data')"
    program_settings=(CIFAR_CONFIG= "CIFAR_DATA=$data"
      "CIFAR_EXTRA_ARGS=--epochs 1 --max-steps 3 --batch-size 16 --log-every 1 --eval false")
    ;;
  *) job_test_fail "--mode must be check-env or train (got '$mode')" ;;
esac

started=$SECONDS
job_test_start

declare -A job_ids
for launcher in srun mpirun; do
  name=cifar-test-$launcher
  job_ids[$launcher]=$(job_test_submit "$name" "$kNtasks" "CIFAR_BUILD=$JOB_TEST_BUILD" \
    "CIFAR_RUN_DIR=$JOB_TEST_WORK/run-$launcher" "CIFAR_LAUNCHER=$launcher" "${program_settings[@]}")
  mini_cluster_log "submitted $name as job ${job_ids[$launcher]}"
done
bad_job=$(job_test_submit cifar-test-bad-option "$kNtasks" "CIFAR_BUILD=$JOB_TEST_BUILD" \
  "CIFAR_RUN_DIR=$JOB_TEST_WORK/run-bad" CIFAR_CONFIG= "CIFAR_EXTRA_ARGS=--no-such-option")
mini_cluster_log "submitted cifar-test-bad-option as job $bad_job"

for launcher in srun mpirun; do
  name=cifar-test-$launcher
  job=${job_ids[$launcher]}
  job_test_expect_completed "$name" "$job" 90
  if [[ $launcher == srun ]]; then
    job_test_expect_in_log "$name" "$job" 1 'launch: srun --mpi=pmix '
  else
    job_test_expect_in_log "$name" "$job" 1 'launch: mpirun -np 2 '
  fi
  if [[ $mode == check-env ]]; then
    # One placement line per rank, then the world summary and the verdict.
    job_test_expect_in_log "$name" "$job" 1 'rank=0/2 node=0/1 local_rank=0/2'
    job_test_expect_in_log "$name" "$job" 1 'rank=1/2 node=0/1 local_rank=1/2'
    job_test_expect_in_log "$name" "$job" 1 "2 rank\(s\) on 1 node\(s\)"
    job_test_expect_in_log "$name" "$job" 1 'ready to train'
    job_test_expect_in_log "$name" "$job" 1 'OMP_NUM_THREADS=1 '
  else
    job_test_expect_file "$JOB_TEST_WORK/run-$launcher/model.pth"
    job_test_expect_file "$JOB_TEST_WORK/run-$launcher/metrics.jsonl"
    # 3 steps of one epoch by a world of 2, and a loss that is a number.
    grep -Eq '"epoch": 0, "steps": 3, "train_loss": [0-9]+\.[0-9]+,.*"world_size": 2' \
      "$JOB_TEST_WORK/run-$launcher/metrics.jsonl" ||
      job_test_fail "metrics of job $job: $(cat "$JOB_TEST_WORK/run-$launcher/metrics.jsonl")"
    job_test_expect_in_log "$name" "$job" 1 'Epoch: 0 \| Batch: 2/'
    job_test_expect_in_log "$name" "$job" 1 'finished; run folder .* holds: .*model.pth'
  fi
done

# The program's exit code is the job's: Slurm records FAILED, 2:0.
bad_state=$(mini_cluster_wait_job "$bad_job" 60) || true
bad_exit=$(mini_cluster_job_field "$bad_job" ExitCode)
job_test_show_log cifar-test-bad-option "$bad_job"
[[ $bad_state == FAILED && $bad_exit == 2:0 ]] ||
  job_test_fail "job $bad_job (bad option) ended $bad_state $bad_exit, expected FAILED 2:0"
job_test_expect_in_log cifar-test-bad-option "$bad_job" 1 'cifar_mpi failed with exit code 2 '

mini_cluster_log "PASS: both launchers ran a 2-rank world under Slurm ($mode), a bad option failed the job with exit code 2; $((SECONDS - started))s in all"
