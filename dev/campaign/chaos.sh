#!/usr/bin/env bash
# dev/campaign/chaos.sh — the chaos campaign: training runs under the job
# scripts (jobs/local_mpirun.sh, which restarts a failed step by itself) hit
# by many faults at random steps, each resumed until it finishes, its final
# model then held against the uninterrupted run of the same configuration
# (its "twin"), and every file outside the run's own folder checked unchanged.
#
#   dev/campaign/chaos.sh [--runs N] [--faults N] [--seed S] [--build DIR] [--work DIR]
#                         [--elastic-rtol R]
#     --runs N          runs (default 5); the even-numbered ones also change
#                       their world size
#     --faults N        faults per run (default 60)
#     --seed S          seed of the fault schedules and of run r's training
#                       (S + r); the same seed, the same schedule (default 1)
#     --build DIR       a built cpu preset: cifar_mpi, cifar_pack, cifar_eval,
#                       compare_models (default build/cpu)
#     --work DIR        the campaign's folder, emptied first (default DIR/chaos);
#                       it must be absent, empty, or an earlier campaign's
#     --lost-host       the even-numbered runs also train across 2 simulated
#                       hosts (dev/netns: root; the campaign brings them up and
#                       down, and refuses to start while a cluster is up: the
#                       multinode tests build the same hosts) and lose one
#     --elastic-rtol R  relative tolerance for a run whose world size changed
#                       (default 1e-3, as the test of a restart after a lost
#                       host: one rank's rounding differs from two ranks',
#                       and hundreds of steps amplify it)
#
# The faults, each at a random step and a random moment within it
# (checkpoint writes included):
#   kill9   kill -9 of a random rank: the launcher restarts the step by itself
#   term    SIGTERM to the launcher: exit 3 (checkpoint written), relaunched
#           with the same CIFAR_RUN_DIR
#   usr1    SIGUSR1 to the launcher: the same
#   disk    the checkpoint folder (a small tmpfs of its own) filled up: the
#           checkpoint write fails and the launcher restarts; after that
#           failure the space is freed and the run goes on (needs root for
#           the mount; without it this kind is left out)
#   early   SIGTERM or SIGUSR1, the relaunch, and another SIGTERM or SIGUSR1
#           0.05-1 s after the relaunch's start (before mpirun, while the
#           ranks load or start MPI): exit 3 both times, then relaunched
#   tools   the companion tools pointed at run files while the run holds
#           them (paused meanwhile): cifar_eval --json at the run's metrics
#           and at the twin's model, cifar_pack --output at the twin's newest
#           checkpoint; each must refuse (exit 2) and change nothing
#   hidden  SIGUSR1, then a relaunch with CUDA_VISIBLE_DEVICES set as on a
#           node without GPUs (-1, NoDevFiles, or 0,1 where no driver
#           answers): the run trains on the CPU as before, no node blamed
#   resize  SIGTERM or SIGUSR1, then a relaunch on another number of ranks
#           (1, 2 or 3): the program resumes at the new world size with the
#           same global batch (even-numbered runs only)
#   host    (--lost-host) host 1 unplugged from the simulated switch: the
#           step fails, the launcher's probe leaves the host out and the run
#           goes on with host 0's rank; the campaign then ends what was left
#           on host 1, as a dead host's would be, and plugs it back in for
#           the next relaunch. While the run is on host 0 alone (after a
#           loss, or on 1 rank) a host fault is a SIGUSR1 instead.
# Time lost by a fault: from the fault until the resumed run has written a
# checkpoint past the one it resumed from (a relaunch's start-up included).
# A run whose world size never changed must end bit for bit equal to its
# twin (compare_models --rtol 0); one whose did, within --elastic-rtol.
# Exits non-zero on any failed comparison, failed or hung run, process left
# behind, or changed file outside the runs' own folders.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
runs=5 faults=60 seed=1 build=$src/build/cpu work='' elastic_rtol=1e-3 lost_host=0
while (($#)); do
  case $1 in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --faults) faults=${2:?--faults needs a number}; shift 2 ;;
    --seed) seed=${2:?--seed needs a number}; shift 2 ;;
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    --work) work=${2:?--work needs a folder}; shift 2 ;;
    --elastic-rtol) elastic_rtol=${2:?--elastic-rtol needs a number}; shift 2 ;;
    --lost-host) lost_host=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "chaos.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$runs" "$faults" "$seed"; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "chaos.sh: --runs, --faults and --seed take whole numbers (got '$n')" >&2; exit 2; }
done
build=$(cd "$build" && pwd)
for program in cifar_mpi cifar_pack cifar_eval compare_models; do
  [[ -x $build/$program ]] || { echo "chaos.sh: no $build/$program: build the cpu preset (or pass --build)" >&2; exit 2; }
done
work=${work:-$build/chaos}
# The work folder is emptied (tests/e2e/common.sh): refuse one that holds
# anything but an earlier campaign.
if [[ -e $work && ! -d $work ]] || [[ -d $work && -n $(ls -A "$work") && ! -f $work/.chaos-campaign ]]; then
  echo "chaos.sh: $work is not empty and not an earlier campaign's folder: pass another --work" >&2
  exit 2
fi
export SOURCE_DIR=$src COMPARE_MODELS=$build/compare_models
# The checkpoint tests' helpers: fail, rank_pid_of (and the work folder: emptied, entered).
# shellcheck source=tests/checkpoint/lib.sh
source "$src/tests/checkpoint/lib.sh" "$work"
touch .chaos-campaign
mkdir -p logs runs twins

# ---- The configuration every run and twin trains --------------------------
# 240 synthetic images, a global micro-batch of 12 (6 per rank on 2 ranks):
# 20 optimiser steps an epoch, divisible among 1, 2 and 3 ranks with no
# short last batch, so every world size keeps the same steps. ConvNet (no
# BatchNorm), SGD, no augmentation: an elastic resume equals the run to
# rounding (docs/checkpoint.md); a small learning rate keeps the hundreds of
# steps after a change of world size from amplifying that rounding much
# (whole runs of 780 steps on 3 or 1 rank(s) against 2: 1.3e-5 to 1.4e-4 at
# lr 0.002; up to 8e-3 at lr 0.01). A checkpoint every step: a fault costs at
# most one step trained again, so each is cheap.
readonly steps_per_epoch=20 start_np=2
# Each fault comes 0-4 steps after the run has recovered from the one
# before; the campaign's reaction adds some (a step takes 30-120 ms here,
# and a full checkpoint folder may take 40 steps to fail a write): 20 steps
# a fault, 3 epochs more, so that the run does not finish first. Across the
# simulated hosts too (a campaign with --lost-host measured 17 steps a
# fault).
run_length() {  # run_length STEPS_PER_FAULT: sets epochs and total_steps
  epochs=$((3 + faults * $1 / steps_per_epoch))
  total_steps=$((epochs * steps_per_epoch))
}
"$build/cifar_pack" --synthetic 240 --test-count 16 --seed 2 --output data.h5 >logs/pack.log 2>&1 ||
  { cat logs/pack.log; fail "cifar_pack"; }
export CIFAR_BUILD=$build CIFAR_CONFIG='' CIFAR_DATA=$PWD/data.h5
# No back-off: a restart at once (the policy's first restart is at once anyway;
# the campaign's are many). Restarts enough for every fault of a run.
export CIFAR_RESTART_BACKOFF=0 CIFAR_MAX_RESTARTS=$((faults * 4 + 10))
export CIFAR_MPIRUN_ARGS="--oversubscribe --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none"
train_opts() {  # train_opts SEED: sets run_opts
  run_opts=(--model convnet --optimizer sgd --momentum 0.9 --lr 0.002 --seed "$1" --global-batch-size 12
    --epochs "$epochs" --shuffle true --augment false --eval false --log-every 1
    --checkpoint-every-steps 1 --keep-checkpoints 3)
}

kinds=(kill9 term usr1 early tools hidden)
can_mount=0
if [[ $(id -u) -eq 0 ]]; then
  can_mount=1
  kinds+=(disk)
else
  echo "chaos.sh: not root: the full-checkpoint-folder faults are left out (they mount a small tmpfs)"
fi

# The simulated hosts (--lost-host): the campaign's own cluster of 2, which
# it kills processes in and takes down at the end; a cluster that is up
# already is someone else's and is left alone.
netns_ours=0
if ((lost_host)); then
  [[ $(id -u) -eq 0 ]] || fail "--lost-host needs root (network namespaces)"
  # shellcheck source=dev/netns/netns_common.sh
  source "$src/dev/netns/netns_common.sh"
  [[ ! -e $NETNS_STATE_DIR/hosts ]] ||
    fail "--lost-host: a simulated cluster is up already (the multinode tests'?); dev/netns/netns_down.sh removes it"
  netns_ours=1
  bash "$src/dev/netns/netns_up.sh" 2 >logs/netns_up.log 2>&1 || { cat logs/netns_up.log; fail "dev/netns/netns_up.sh 2"; }
  printf '%s slots=1\n' "$(netns_name 0)" "$(netns_name 1)" >hosts.txt
  # As tests/multinode/restart_host_loss.sh: mpirun runs as host 0 and
  # starts host 1's daemon through the launch agent, over the simulated
  # network; TCP keepalive (2 s idle, 3 probes 1 s apart) sees a partition
  # in about 5 s.
  # shellcheck disable=SC2054  # commas separate MCA values, not array elements
  netns_mpirun_args=(--oversubscribe --mca plm_rsh_agent "$src/dev/netns/netns_agent" --mca plm_rsh_no_tree_spawn 1
    --mca oob_tcp_if_include "$NETNS_SUBNET" --mca btl self,vader,tcp --mca btl_tcp_if_include "$NETNS_SUBNET"
    --mca btl_vader_single_copy_mechanism none
    --mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 3)
fi
netns_restore() {
  ((netns_ours)) || return 0
  bash "$src/dev/netns/netns_down.sh" >/dev/null 2>&1 || true
  netns_ours=0
}

# ---- Files that are not the run's: they must not change -------------------
# A sentinel folder of foreign files, named as a run's files are (a
# checkpoint, its owner record, a model, metrics), and another run's folder
# beside the campaign's runs. With the data and the twins, the snapshot
# covers the whole work folder but the run under test and the logs.
mkdir -p foreign/checkpoints runs/foreign-run/checkpoints
for f in foreign/model.pth foreign/checkpoints/ckpt-e0000-s000001.pt foreign/checkpoints/.ckpt-e0000-s000001.pt.run \
  runs/foreign-run/model.pth runs/foreign-run/checkpoints/ckpt-e0001-s000020.pt runs/foreign-run/metrics.jsonl; do
  head -c 4096 /dev/urandom >"$f"
done
snapshot() {  # snapshot EXCLUDED_RUN_DIR: path, mode, size, mtime and checksum of every other file
  find . \( -path ./logs -o -path "./runs/$1" \) -prune -o -printf '%p %y %m %s %T@\n' | sort
  find . \( -path ./logs -o -path "./runs/$1" \) -prune -o -type f -print0 | sort -z | xargs -0 sha256sum
}

# ---- One run: the launcher, its progress, its processes -------------------
launcher='' run_dir='' marker='' np='' run_log='' mounted='' sizes='' across_hosts=0 on_hosts=0 ranks_now=0
launch_env=()  # VAR=VALUE for the next launch only (the hidden fault)
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# The newest checkpoint's step (-1: none yet): the run's progress.
progress() {
  find "$run_dir/checkpoints" -maxdepth 1 -name 'ckpt-e*-s*.pt' -printf '%f\n' 2>/dev/null |
    sed -n 's/^ckpt-e[0-9]*-s0*\([0-9][0-9]*\)\.pt$/\1/p' | sort -n | tail -n 1 | grep . || echo -1
}
launch() {  # launch NP: the launcher in the background, resuming the run folder
  np=$1 ranks_now=$1
  [[ " $sizes " == *" $np "* ]] || sizes+="${sizes:+ }$np"
  if ((across_hosts)); then
    # One slot a host: rank 0 on host 0, rank 1 on host 1 (a third shares).
    on_hosts=$((np < 2 ? np : 2))
    (
      export CIFAR_RUN_DIR=$run_dir CIFAR_MPIRUN_ARGS="${netns_mpirun_args[*]}" CIFAR_PROBE_TIMEOUT=3
      netns_exec_as_host 0 bash "$src/jobs/local_mpirun.sh" -n "$np" -c 1 --hostfile "$PWD/hosts.txt" -- "${run_opts[@]}"
    ) >>"$run_log" 2>&1 &
  else
    env "${launch_env[@]+"${launch_env[@]}"}" CIFAR_RUN_DIR="$run_dir" \
      bash "$src/jobs/local_mpirun.sh" -n "$np" -c 1 -- "${run_opts[@]}" >>"$run_log" 2>&1 &
  fi
  launch_env=()
  # netns_exec_as_host execs: this is the launcher's own process either way.
  launcher=$!
}
# Everything of the run still alive: the launcher, then mpirun and the ranks
# (their command lines name the run folder).
run_processes() { pgrep -f -- "$run_dir/" || true; }
stop_run() {
  [[ -z $launcher ]] || kill -9 "$launcher" 2>/dev/null || true
  launcher=
  local pids
  mapfile -t pids < <(run_processes)
  ((${#pids[@]} == 0)) || kill -9 "${pids[@]}" 2>/dev/null || true
}
unmount() {
  [[ -z $mounted ]] || umount "$mounted" 2>/dev/null || umount -l "$mounted" || true
  mounted=
}
trap 'stop_run; unmount; netns_restore' EXIT

problems=()
problem() {  # problem TEXT: a finding, kept for the end (the campaign goes on)
  problems+=("run $run: $*")
  echo "!! run $run: $*"
}
# wait_for DEADLINE_S WHAT CONDITION...: polls CONDITION; on the deadline the
# run is reported hung and stopped. Returns non-zero then.
wait_for() {
  local deadline=$1 what=$2 start
  shift 2
  start=$SECONDS
  until "$@"; do
    if ((SECONDS - start > deadline)); then
      # The checkpoint folder as it was (a tmpfs: gone at the run's end).
      ls -la "$run_dir/checkpoints" >"${run_log%.log}.checkpoints.txt" 2>&1 || true
      problem "HANG: $what not within ${deadline} s (log: $run_log; checkpoint folder: ${run_log%.log}.checkpoints.txt)"
      stop_run
      return 1
    fi
    sleep 0.05
  done
}
launcher_alive() { [[ -n $launcher ]] && kill -0 "$launcher" 2>/dev/null; }
# reached STEP: the run has a checkpoint past STEP or its launcher has ended.
reached() { (($(progress) >= $1)) || ! launcher_alive; }
# relaunch_if_ended: a launcher that ended with 3 (preempted) is relaunched;
# 0 means finished; anything else is a finding. Returns 1 once the run has
# ended (ended=1), else 0.
ended=0
relaunches=0
relaunch_if_ended() {
  local status=0
  ((!ended)) || return 1
  launcher_alive && return 0
  wait "$launcher" || status=$?
  launcher=
  case $status in
    3) relaunches=$((relaunches + 1)); launch "$np"; return 0 ;;
    0) ;;
    *)
      ls -la "$run_dir/checkpoints" >"${run_log%.log}.checkpoints.txt" 2>&1 || true
      problem "the launcher exited $status ($(tail -n 3 "$run_log" | tr '\n' ' ')); checkpoint folder: ${run_log%.log}.checkpoints.txt"
      ;;
  esac
  ended=1
  return 1
}
step_failures() { grep -c 'step failed with exit code' "$run_log" || true; }
host_dropped() { (($(grep -c 'lost host(s) ' "$run_log" || true) >= $1)) || ! launcher_alive; }
failures_past() { (($(step_failures) >= $1)) || ! launcher_alive; }
# full_until FAILURES: keeps the checkpoint folder full (less than a
# checkpoint's room: the run's rotation frees one after each write) until
# the launcher has logged FAILURES failed steps.
full_until() {
  local avail
  avail=$(df -B1 --output=avail "$run_dir/checkpoints" | tail -n 1)
  ((avail <= 1000000)) || head -c $((avail - 1000000)) /dev/zero >>"$filler" 2>/dev/null || true
  failures_past "$1"
}

# ---- The faults ----------------------------------------------------------
declare -A fault_count=() fault_lost=() fault_max=()
# preempt SIGNAL [early]: the launcher stops with exit 3; returns 1 when the
# run ended. `early`: the launcher started a second ago, far from the run's
# end: finishing (exit 0) means the stop was lost.
preempt() {
  local rc=0
  kill -s "$1" "$launcher"
  wait "$launcher" || rc=$?
  launcher=
  case $rc in
    3) relaunches=$((relaunches + 1)); return 0 ;;
    0) [[ ${2:-} != early ]] || problem "SIG$1 in the first second of a launch was lost: the run trained to its end" ;;
    # else it finished just before the signal
    *) problem "SIG$1 to the launcher: exit code $rc, expected 3" ;;
  esac
  ended=1
  return 1
}
# tool_refuses PROGRAM ARGS...: a companion tool pointed at a run's file must
# refuse it (exit 2); the file is checked unchanged by the snapshot (the
# twin's) or the final comparison (the run's own).
tool_refuses() {
  local rc=0 log
  log=logs/tool-$run-$RANDOM.log
  "$build/$1" "${@:2}" >"$log" 2>&1 || rc=$?
  ((rc == 2)) || problem "$* exited $rc, expected 2 (a run's file refused): $(tail -n 1 "$log")"
}
inject() {  # inject KIND; the run must be training. Returns 1 when the run ended first (no fault)
  local kind=$1 rank pid before np2
  case $kind in
    kill9)
      rank=$((RANDOM % ranks_now))
      pid=
      for _ in $(seq 200); do
        pid=$(rank_pid_of "$marker" "$rank")
        [[ -z $pid ]] || break
        launcher_alive || return 1
        sleep 0.05
      done
      [[ -n $pid ]] || { problem "rank $rank not found for kill -9"; return 0; }
      before=$(step_failures)
      kill -9 "$pid" 2>/dev/null || true
      # Until mpirun has noticed (the launcher logs the failed step) the
      # other ranks may still write a checkpoint.
      wait_for 60 "the end of the step after kill -9 of rank $rank" failures_past $((before + 1)) || true
      ;;
    term | usr1)
      preempt "${kind^^}" && launch "$np"
      ;;
    early)
      signals=(TERM USR1)
      preempt "${signals[RANDOM % 2]}" || return 1
      launch "$np"
      delay=$((50 + RANDOM % 951))
      sleep "$((delay / 1000)).$(printf '%03d' $((delay % 1000)))"
      preempt "${signals[RANDOM % 2]}" early || return 1
      launch "$np"
      ;;
    tools)
      # The run (mpirun and its ranks) is paused meanwhile, as a slow node
      # would pause it: the seconds the tools take cost the run no steps.
      local newest pids
      mapfile -t pids < <(run_processes)
      ((${#pids[@]} == 0)) || kill -STOP "${pids[@]}" 2>/dev/null || true
      tool_refuses cifar_eval --weights "$twin_dir/model.pth" --data "$CIFAR_DATA" --json "$run_dir/metrics.jsonl"
      tool_refuses cifar_eval --weights "$twin_dir/model.pth" --data "$CIFAR_DATA" --json "$twin_dir/model.pth"
      newest=$(find "$twin_dir/checkpoints" -name 'ckpt-*.pt' | sort | tail -n 1)
      tool_refuses cifar_pack --synthetic 32 --test-count 16 --output "$newest"
      ((${#pids[@]} == 0)) || kill -CONT "${pids[@]}" 2>/dev/null || true
      ;;
    hidden)
      hidden_values=(-1 NoDevFiles '0,1')
      preempt USR1 || return 1
      launch_env=("CUDA_VISIBLE_DEVICES=${hidden_values[RANDOM % 3]}")
      launch "$np"
      ;;
    resize)
      signals=(TERM USR1)
      signal=${signals[RANDOM % 2]}
      np2=$((1 + RANDOM % 3))
      ((np2 != np)) || np2=$((np % 3 + 1))
      # Across hosts, 2 or 3 ranks: both hosts stay in use, so a host can be lost.
      ((!across_hosts)) || np2=$((np == 2 ? 3 : 2))
      preempt "$signal" || return 0
      resized=1
      launch "$np2"
      ;;
    host)
      before=$(grep -c 'lost host(s) ' "$run_log" || true)
      ip -n "$NETNS_SWITCH" link set "$(netns_port 1)" down
      wait_for 120 "the restart without the unplugged $(netns_name 1)" host_dropped $((before + 1)) || true
      netns_kill_all_in "$(netns_name 1)"
      ip -n "$NETNS_SWITCH" link set "$(netns_port 1)" up
      # The restart runs host 0's one slot: 1 rank until the next launch.
      on_hosts=1 resized=1 ranks_now=1
      [[ " $sizes " == *" 1 "* ]] || sizes+=" 1"
      ;;
    disk)
      # Room for less than one checkpoint (2.5 MB), freed after the first
      # failed write (a restart of the launcher; each more costs a launch).
      before=$(step_failures)
      filler=$run_dir/checkpoints/.chaos-filler
      : >"$filler"
      wait_for 120 "a failed checkpoint write on the full folder" full_until $((before + 1)) || true
      [[ -f $filler ]] || problem "the filler file in the full checkpoint folder is gone: the run removed a file not its own"
      rm -f "$filler"
      ;;
  esac
}

# ---- The campaign --------------------------------------------------------
RANDOM=$seed
rows=()
campaign_start=$(now)
for ((run = 1; run <= runs; run++)); do
  run_seed=$((seed + run))
  run_kinds=("${kinds[@]}")
  ((run % 2)) || run_kinds+=(resize)
  across_hosts=0
  run_length 20
  if ((lost_host && run % 2 == 0)); then
    across_hosts=1
    run_kinds+=(host)
    run_length 20
  fi
  train_opts "$run_seed"

  # The twin: the same configuration, uninterrupted, on the starting ranks.
  twin_dir=$PWD/twins/run$run
  CIFAR_RUN_DIR=$twin_dir bash "$src/jobs/local_mpirun.sh" -n $start_np -c 1 -- "${run_opts[@]}" >"logs/twin$run.log" 2>&1 ||
    { cat "logs/twin$run.log"; fail "the uninterrupted twin of run $run failed"; }

  run_dir=$PWD/runs/run$run
  marker=$run_dir/model.pth
  run_log=$PWD/logs/run$run.log
  : >"$run_log"
  mkdir -p "$run_dir/checkpoints"
  if ((can_mount)); then
    # 12 MB: the 3 checkpoints kept and one being written, about 10 MB.
    mount -t tmpfs -o size=12m,mode=0755 chaos-ckpt "$run_dir/checkpoints"
    mounted=$run_dir/checkpoints
  fi
  snapshot "run$run" >"logs/before$run.txt"

  relaunches=0 resized=0 sizes='' ended=0
  declare -A count=()
  run_start=$(now)
  launch $start_np
  ok=1
  for ((i = 0; i < faults && ok; i++)); do
    # Each round of as many faults as kinds takes every kind once, in a
    # random order: a short campaign still has each kind.
    if ((i % ${#run_kinds[@]} == 0)); then
      keyed=()
      for k in "${run_kinds[@]}"; do keyed+=("$RANDOM $k"); done
      mapfile -t round < <(printf '%s\n' "${keyed[@]}" | sort -n | cut -d' ' -f2)
    fi
    kind=${round[i % ${#run_kinds[@]}]}
    [[ $kind != host ]] || ((on_hosts == 2)) || kind=usr1
    # The step it waits for: in the first epoch, then 0-4 steps after the
    # recovery from the fault before. (RANDOM is drawn in this shell only,
    # never in a subshell, which reseeds it: the seed gives the schedule.)
    if ((i == 0)); then target=$((1 + RANDOM % steps_per_epoch)); else target=$(($(progress) + RANDOM % 5)); fi
    ((target < total_steps - 1)) || { echo "run $run: at its end after $i fault(s)"; break; }
    wait_for 300 "step $target" reached "$target" || { ok=0; break; }
    if ! relaunch_if_ended; then
      echo "run $run: ended before fault $((i + 1)) (step $target): $i fault(s) in this run"
      break
    fi
    delay=$((RANDOM % 150))
    sleep "0.$(printf '%03d' "$delay")"  # anywhere in the step, its checkpoint write included
    hit=$(progress)
    t0=$(now)
    if ! inject "$kind"; then
      echo "run $run: ended before fault $((i + 1)) ($kind) was made: $i fault(s) in this run"
      break
    fi
    # Recovered: a checkpoint past the newest one when the fault has done
    # its work (the step the resumed run starts from), or the run's end.
    at=$(progress)
    until (($(progress) > at)); do
      relaunch_if_ended || break
      wait_for 300 "recovery from $kind at step $at" reached $((at + 1)) || { ok=0; break; }
    done
    lost=$(elapsed "$t0")
    count[$kind]=$((${count[$kind]:-0} + 1))
    fault_count[$kind]=$((${fault_count[$kind]:-0} + 1))
    fault_lost[$kind]=$(awk -v a="${fault_lost[$kind]:-0}" -v b="$lost" 'BEGIN { print a + b }')
    fault_max[$kind]=$(awk -v a="${fault_max[$kind]:-0}" -v b="$lost" 'BEGIN { print (b > a ? b : a) }')
    echo "run $run fault $((i + 1))/$faults: $kind at step $hit, resumed at step $at (ranks $np), $lost s lost"
  done
  # To the end: a preempted launcher is relaunched until the run finishes.
  while ((ok)) && ((!ended)) && wait_for 600 "the end of the run" reached $((total_steps + 1)) && relaunch_if_ended; do :; done
  stop_run
  run_time=$(elapsed "$run_start")
  left=$(run_processes | tr '\n' ' ')
  [[ -z $left ]] || problem "processes of the run left after its end: $left"

  # The final model against the twin's.
  restarts=$(grep -c 'restart [0-9]* of at most' "$run_log" || true)
  if [[ ! -f $marker ]]; then
    verdict="NO MODEL"
    problem "no final model (log: $run_log)"
  else
    rtol=0
    ((resized)) && rtol=$elastic_rtol
    rc=0
    out=$("$COMPARE_MODELS" "$twin_dir/model.pth" "$marker" --rtol "$rtol" 2>&1) || rc=$?
    diff=$(sed -n 's/^largest relative difference \([^ ]*\) .*/\1/p' <<<"$out")
    if ((rc != 0)); then
      verdict="DIFFERENT ($diff, rtol $rtol)"
      problem "final model DIFFERENT from the twin's: $(tail -n 1 <<<"$out")"
    elif ((resized)); then
      verdict="within $rtol ($diff)"
    else
      verdict="SAME (rtol 0)"
    fi
  fi
  unmount
  snapshot "run$run" >"logs/after$run.txt"
  if ! diff "logs/before$run.txt" "logs/after$run.txt" >"logs/foreign$run.diff"; then
    problem "files outside the run's folder changed: $(head -n 5 "logs/foreign$run.diff" | tr '\n' ' ')"
  fi
  total=0
  for k in kill9 term usr1 early tools hidden disk resize host; do total=$((total + ${count[$k]:-0})); done
  rows+=("| $run | $run_seed | ${sizes// /, } | $total | ${count[kill9]:-0} | ${count[term]:-0} | ${count[usr1]:-0} | ${count[early]:-0} | ${count[tools]:-0} | ${count[hidden]:-0} | ${count[disk]:-0} | ${count[resize]:-0} | ${count[host]:-0} | $restarts | $relaunches | $run_time | $verdict |")
  unset count
done

# ---- The table -----------------------------------------------------------
{
  echo "| run | seed | ranks | faults | kill -9 | SIGTERM | SIGUSR1 | first second | tools | hidden GPUs | disk full | resize | lost host | restarts | relaunches | seconds | final model vs twin |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "| fault | count | time lost, mean s | time lost, max s |"
  echo "|---|---|---|---|"
  all=0
  declare -A label=([kill9]="kill -9" [term]=SIGTERM [usr1]=SIGUSR1 [early]="first second" [tools]=tools
    [hidden]="hidden GPUs" [disk]="disk full" [resize]=resize [host]="lost host")
  for k in kill9 term usr1 early tools hidden disk resize host; do
    n=${fault_count[$k]:-0}
    ((n)) || continue
    all=$((all + n))
    echo "| ${label[$k]} | $n | $(awk -v s="${fault_lost[$k]}" -v n="$n" 'BEGIN { printf "%.1f", s / n }') | ${fault_max[$k]} |"
  done
  echo
  echo "$runs run(s), $all fault(s), $((${#problems[@]})) problem(s), $(elapsed "$campaign_start") s;" \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc --all) CPU(s)," \
    "AVX-512: $(grep -qm1 avx512f /proc/cpuinfo && echo yes || echo no)"
} | tee table.md
if ((${#problems[@]})); then
  printf '%s\n' "${problems[@]}" >&2
  exit 1
fi
echo PASS
