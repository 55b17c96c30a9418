#!/usr/bin/env bash
# tests/slurm/test_preempt_requeue.sh — the preemption path of the job scripts
# under a real (private, one-node) Slurm: while the 2-rank step runs, SIGUSR1
# reaches the batch shell alone, either from the test (`scancel --signal=USR1
# --batch`) or from Slurm itself as the time limit nears (--trigger time-limit:
# the job's own `--signal=B:USR1@...`, with a 1-minute limit). The job must
#   1. forward SIGUSR1 through the launcher to every rank,
#   2. see exit code 3 (checkpoint written) and requeue itself,
#   3. start again under the same job id, resume, and end COMPLETED, 0:0,
#      with Slurm counting one restart.
# --trigger cancel: a plain scancel (SIGTERM) is forwarded too and the ranks
# checkpoint, but the job must stay CANCELLED — never requeued.
# --trigger batch-term: SIGTERM to the batch shell alone (`scancel
# --signal=TERM --batch`, as `--signal=B:TERM@...` sends it): the launcher
# must pass it on so that the ranks checkpoint; the job ends with exit code
# 3, not requeued.
# --trigger requeue: `scontrol requeue` puts the running job back in the
# queue and ends its incarnation with SIGTERM (to the batch shell and to the
# step at once, then SIGKILL after KillWait): the ranks checkpoint, the job
# scripts leave the requeue to Slurm (no second requeue, no restart in
# place), and the job starts again, resumes and ends COMPLETED, 0:0, with
# exactly one restart.
#
#   test_preempt_requeue.sh --repo DIR --build DIR [--launcher srun|mpirun]
#                           [--trigger scancel|time-limit|cancel|requeue|batch-term]
#                           [--program double | --program real --data FILE]
#                           [--container IMAGE [--pyxis DIR]]
#
# --program double  the ranks are tests/slurm/preempt_double.sh, which follows
#                   only cifar_mpi's preemption contract: this tests the job
#                   scripts on their own.
# --program real    the ranks are cifar_mpi training on --data (for when the
#                   trainer handles SIGUSR1: checkpoint, exit 3, --resume auto).
# --container IMAGE container mode (with --program real): each rank is the
#                   image's cifar_mpi in ch-run (CIFAR_CONTAINER=IMAGE, a
#                   Charliecloud directory), or with --pyxis in the Enroot
#                   image (a .sqsh) that srun --container-image starts; the
#                   final model must equal, bit for bit, a run of the same
#                   steps on the host that nothing interrupted.
# --pyxis DIR       Pyxis's spank_pyxis.so in DIR/pyxis and Enroot in
#                   DIR/enroot (tests/containers/build_enroot_pyxis.sh): the
#                   test cluster's slurmd loads the plugin (plugstack.conf).
# shellcheck source=tests/slurm/job_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/job_test_lib.sh"

job_test_parse_args "$@"
program=double
launcher=srun
trigger=scancel
data=
container=
pyxis=
set -- "${JOB_TEST_ARGS[@]+"${JOB_TEST_ARGS[@]}"}"
while (($#)); do
  case $1 in
    --program) program=$2; shift 2 ;;
    --launcher) launcher=$2; shift 2 ;;
    --trigger) trigger=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --container) container=$2; shift 2 ;;
    --pyxis) pyxis=$2; shift 2 ;;
    *) job_test_fail "unknown option $1" ;;
  esac
done
kNtasks=2

started=$SECONDS
runtime=charliecloud
if [[ -n $pyxis ]]; then
  runtime=pyxis
  [[ -f $pyxis/pyxis/spank_pyxis.so && -x $pyxis/enroot/bin/enroot ]] ||
    job_test_fail "--pyxis $pyxis lacks pyxis/spank_pyxis.so or enroot/bin/enroot (tests/containers/build_enroot_pyxis.sh)"
  # slurmd, and the Pyxis in it, run enroot by name from the daemons' PATH.
  export PATH=$pyxis/enroot/bin:$PATH
  # Pyxis as sites run it: each job step unpacks the .sqsh (enroot create).
  # With use_squashfuse=1 it would mount it instead, but srun's signals then
  # reach the squashfuse process too, which dies and takes the ranks' files
  # with it (SIGBUS): preemption cannot work that way.
  JOB_TEST_SPANK_PLUGIN="$pyxis/pyxis/spank_pyxis.so runtime_path="
  # When a job ends (scancel, scontrol requeue), a Pyxis step ends only after
  # Pyxis has removed the image it unpacked (~10 s here), all within
  # KillWait: with the test cluster's 5 s the SIGKILL stops the removal and
  # the batch shell. Slurm's default, 30 s, as sites run it.
  export MINI_CLUSTER_KILL_WAIT=30
fi
job_test_start
[[ -z $pyxis ]] || mini_cluster_log "Pyxis loaded: $(srun --help 2>&1 | grep -c -- '--container-') srun --container-* options"

run_dir=$JOB_TEST_WORK/run
case $program in
  double)
    build=$JOB_TEST_TMP/double-build
    mkdir -p "$build"
    cp "$(dirname "${BASH_SOURCE[0]}")/preempt_double.sh" "$build/cifar_mpi"
    program_settings=(CIFAR_CONFIG=)
    running_pattern='double rank [0-9]+: training'
    ;;
  real)
    [[ -r $data ]] || job_test_fail "--program real needs --data FILE, a small HDF5 file (got '$data')"
    build=$JOB_TEST_BUILD
    # --max-steps keeps the run long enough to be interrupted after its first
    # progress lines, and short enough to finish after the restart.
    program_settings=(CIFAR_CONFIG= "CIFAR_DATA=$data"
      "CIFAR_EXTRA_ARGS=--epochs 1000 --max-steps ${CIFAR_SLURM_TEST_STEPS:-150} --batch-size 16 --log-every 1 --eval false --checkpoint-every-epochs 0")
    running_pattern='Epoch: '
    ;;
  *) job_test_fail "--program must be double or real (got '$program')" ;;
esac

# stop_signal: what reaches the batch shell.
case $trigger in
  scancel) submit_options=() stop_signal=USR1 ;;
  cancel | requeue | batch-term) submit_options=() stop_signal=TERM ;;
  # Slurm checks for due signals about every 30 s; a 1-minute job told to
  # expect SIGUSR1 45 s before its end gets it 0-45 s after it starts.
  time-limit) submit_options=(--time=1 --signal=B:USR1@45) stop_signal=USR1 ;;
  *) job_test_fail "--trigger must be scancel, time-limit, cancel, requeue or batch-term (got '$trigger')" ;;
esac
name=cifar-preempt-$launcher-$trigger
if [[ -n $container ]]; then
  [[ $program == real ]] || job_test_fail "--container needs --program real"
  program_settings+=("CIFAR_CONTAINER=$container" "CIFAR_CONTAINER_RUNTIME=$runtime" "USER=${USER:-$(id -un)}")
  name+=-container
fi
job=$(job_test_submit "$name" "$kNtasks" "${submit_options[@]+"${submit_options[@]}"}" -- "CIFAR_BUILD=$build" \
  "CIFAR_RUN_DIR=$run_dir" "CIFAR_LAUNCHER=$launcher" "${program_settings[@]}")
mini_cluster_log "submitted $name as job $job"

# Wait until the ranks are in their training loop (and have their traps set).
job_test_wait_for_log "$name" "$job" "$kNtasks" "$running_pattern" 60
case $trigger in
  scancel)
    mini_cluster_log "step is running; sending SIGUSR1 to the batch shell only (scancel --signal=USR1 --batch)"
    scancel --signal=USR1 --batch "$job" || job_test_fail "scancel --signal=USR1 --batch $job failed"
    ;;
  time-limit) mini_cluster_log "step is running; waiting for Slurm's own SIGUSR1 before the time limit" ;;
  cancel)
    mini_cluster_log "step is running; cancelling the job (scancel: SIGTERM to the batch shell and the step)"
    scancel "$job" || job_test_fail "scancel $job failed"
    ;;
  batch-term)
    mini_cluster_log "step is running; sending SIGTERM to the batch shell only (scancel --signal=TERM --batch)"
    scancel --signal=TERM --batch "$job" || job_test_fail "scancel --signal=TERM --batch $job failed"
    ;;
  requeue)
    mini_cluster_log "step is running; requeueing the job (scontrol requeue: SIGTERM to the batch shell and the step)"
    scontrol requeue "$job" || job_test_fail "scontrol requeue $job failed"
    ;;
esac

# expect_ranks_signalled: the signal the ranks caught, and how it reached
# them. When Slurm ends the job (scancel, scontrol requeue) its SIGTERM
# reaches every rank directly, inside the containers too, and the batch
# shell forwards nothing; any other stop the batch shell passes on to the
# launcher as SIGUSR1.
expect_ranks_signalled() {
  local caught=SIGUSR1
  if [[ $trigger == cancel || $trigger == requeue ]]; then
    caught=SIGTERM
    job_test_expect_in_log "$name" "$job" 1 'received SIGTERM; Slurm is ending the job and sends SIGTERM to every rank itself'
  else
    job_test_expect_in_log "$name" "$job" 1 "received SIG$stop_signal; forwarding it to the job step as SIGUSR1"
  fi
  if [[ $program == double ]]; then
    job_test_expect_in_log "$name" "$job" "$kNtasks" "double rank [0-9]+: got $caught, checkpointing"
  else
    job_test_expect_in_log "$name" "$job" 1 "preempted by $caught: stopping at step [0-9]+ with checkpoint"
  fi
}

# expect_every_rank_stopped: with srun, every task of the stopped step
# ended with exit code 3 (caught the signal, checkpointed), none killed.
# srun names tasks that end together as one list ("tasks 0-1"), others one
# by one ("task 1", "task 0").
expect_every_rank_stopped() {
  [[ $launcher == srun ]] || return 0
  local list item task stopped=()
  while read -r list; do
    for item in ${list//,/ }; do  # "3" or "0-1"
      for ((task = ${item%-*}; task <= ${item#*-}; task++)); do stopped+=("$task"); done
    done
  done < <(sed -nE 's/^srun: error: .*: tasks? ([0-9,-]+): Exited with exit code 3$/\1/p' "$(job_test_log_file "$name" "$job")")
  ((${#stopped[@]} > 0 && $(printf '%s\n' "${stopped[@]}" | sort -u | wc -l) == kNtasks)) ||
    job_test_fail "job $job: srun reports exit code 3 for task(s) ${stopped[*]:-none}, expected all $kNtasks"
}

if [[ $trigger == cancel || $trigger == batch-term ]]; then
  # A cancelled job is CANCELLED at once; its scripts still run until they
  # exit (or KillWait ends them): wait for the batch script's verdict. After
  # SIGTERM to the batch shell alone the job ends when the script does, with
  # the ranks' exit code 3.
  expected_state=CANCELLED
  [[ $trigger == cancel ]] || expected_state=FAILED
  job_test_wait_for_log "$name" "$job" 1 'not requeueing' 60
  mini_cluster_wait 30 "node idle after the stopped job" mini_cluster_node_idle
  state=$(mini_cluster_job_field "$job" JobState)
  restarts=$(mini_cluster_job_field "$job" Restarts)
  job_test_show_log "$name" "$job"
  [[ $state == "$expected_state" && $restarts == 0 ]] ||
    job_test_fail "job $job: $state with $restarts restart(s), expected $expected_state and no requeue"
  [[ $trigger == cancel || $(mini_cluster_job_field "$job" ExitCode) == 3:0 ]] ||
    job_test_fail "job $job: exit code $(mini_cluster_job_field "$job" ExitCode), expected 3:0 (preempted, checkpoint written)"
  job_test_expect_in_log "$name" "$job" 1 'preempted: checkpoint written to '
  expect_every_rank_stopped
  [[ -z $container ]] || job_test_expect_in_log "$name" "$job" 1 "container mode: $runtime"
  [[ -n $(ls -A "$run_dir/checkpoints") ]] || job_test_fail "no checkpoint in $run_dir/checkpoints"
  expect_ranks_signalled
  mini_cluster_log "PASS: $trigger (SIGTERM) reached all $kNtasks ranks through $launcher; checkpoint kept, job not requeued; $((SECONDS - started))s in all"
  exit 0
fi

# cred_expire=10 in the test cluster keeps the requeued job's restart delay short.
job_test_expect_completed "$name" "$job" 120
restarts=$(mini_cluster_job_field "$job" Restarts)
[[ $restarts == 1 ]] || job_test_fail "job $job: Slurm counts $restarts restart(s), expected 1 (one requeue)"
job_test_expect_in_log "$name" "$job" 1 'preempted: checkpoint written to '
expect_every_rank_stopped
if [[ $trigger == requeue ]]; then
  # Slurm requeued the job; the script says so and neither requeues it again
  # nor restarts the step in place.
  job_test_expect_in_log "$name" "$job" 1 "SIGTERM: Slurm requeued job $job itself"
  ! grep -qE "\] (requeued job $job|restart [0-9]+ of at most)" "$(job_test_log_file "$name" "$job")" ||
    job_test_fail "job $job: the job script requeued or restarted a job that Slurm had requeued"
else
  job_test_expect_in_log "$name" "$job" 1 "requeued job $job"
fi
job_test_expect_in_log "$name" "$job" 1 "job $job \(restart 1\)"
job_test_expect_file "$run_dir/model.pth"
expect_ranks_signalled
if [[ $program == double ]]; then
  job_test_expect_in_log "$name" "$job" "$kNtasks" 'double rank [0-9]+: resumed from '
else
  # The restart continued from the checkpoint the preempted run wrote.
  job_test_expect_in_log "$name" "$job" 1 'resumed from checkpoint .*/checkpoints/ckpt-e[0-9]+-s[0-9]+\.pt'
  job_test_expect_file "$run_dir/metrics.jsonl"
  grep -q '"steps": '"${CIFAR_SLURM_TEST_STEPS:-150}" "$run_dir/metrics.jsonl" ||
    job_test_fail "$run_dir/metrics.jsonl does not reach step ${CIFAR_SLURM_TEST_STEPS:-150}: $(cat "$run_dir/metrics.jsonl")"
  grep -E 'preempted by|resumed from' "$(job_test_log_file "$name" "$job")" || true
fi
if [[ -n $container ]]; then
  job_test_expect_in_log "$name" "$job" 1 "container mode: $runtime"
  # The same steps on the host, uninterrupted: the resumed run must match it exactly.
  for setting in "${program_settings[@]}"; do
    [[ $setting != CIFAR_EXTRA_ARGS=* ]] || read -r -a straight_args <<<"${setting#CIFAR_EXTRA_ARGS=}"
  done
  mkdir -p "$JOB_TEST_TMP/straight"
  cd "$JOB_TEST_TMP/straight"
  OMP_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$kNtasks" "$JOB_TEST_BUILD/cifar_mpi" \
    --data "$data" "${straight_args[@]}" --output "$JOB_TEST_TMP/straight/model.pth" --metrics "" >"$JOB_TEST_TMP/straight.log" 2>&1 ||
    { cat "$JOB_TEST_TMP/straight.log"; job_test_fail "the uninterrupted run on the host failed"; }
  "$JOB_TEST_BUILD/compare_models" "$JOB_TEST_TMP/straight/model.pth" "$run_dir/model.pth" --rtol 0 | tail -n 1
  "$JOB_TEST_BUILD/compare_models" "$JOB_TEST_TMP/straight/model.pth" "$run_dir/model.pth" --rtol 0 >/dev/null ||
    job_test_fail "the preempted and resumed run in the container differs from the uninterrupted one"
fi

mini_cluster_log "PASS: SIG$stop_signal ($trigger) reached all $kNtasks ranks through $launcher; checkpoint, requeue and resume in $((SECONDS - started))s in all"
